"""``python -m emem_graph.evals.bench``: the benchmark's own command line, without the cli."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from emem_graph.evals.bench.command import main


def test_module_runs_the_bench_with_the_global_flags_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "b"
    assert main(["--n", "1000", "--queries", "2", "--out", str(out_dir), "-q"]) == 0
    out, err = capsys.readouterr()
    assert "1,000 observations" in out
    assert "semantic_search p50" in out
    assert "\r" not in err  # -q after the options: still no progress bars
    assert not out_dir.exists()


def test_module_reports_a_bad_option_value_as_the_cli_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = ["--n", "1000", "--scale-with", "1000", "--out", str(tmp_path / "b")]
    assert main(["-q", *options]) == 2
    assert "emem-graph: error: --scale-with 1000" in capsys.readouterr().err


def test_python_dash_m_names_its_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "emem_graph.evals.bench", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "python -m emem_graph.evals.bench" in done.stdout
    assert "--scale-with" in done.stdout
