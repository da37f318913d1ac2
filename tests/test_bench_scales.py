"""``emem-graph bench --scales``: one run at several sizes, each in a process of its own, every
figure against the floor (and eMEM when installed), the memory's resident bytes measured apart,
and each p50 latency against the previous size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emem_graph.errors import InvalidInputError
from emem_graph.evals.bench.scales import parse_scales, scales_table


def test_scales_are_parsed_sorted_and_checked() -> None:
    assert parse_scales("100000, 20000,1e6") == [20_000, 100_000, 1_000_000]
    assert parse_scales("20k,100K,1m,20k") == [20_000, 100_000, 1_000_000]
    for bad in ("", "20000,abc", "500", "1.5k5", "1,2,3,4,5,6,7", "12345.5"):
        with pytest.raises(InvalidInputError):
            parse_scales(bad)


def test_one_run_at_every_scale_with_the_memorys_resident_bytes(tmp_path: Path) -> None:
    out = tmp_path / "scales"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "emem_graph.evals.bench", "-q", "--json"),
            *("--scales", "1000,2000", "--queries", "2", "--extract-n", "300"),
            *("--out", str(out)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    combined = json.loads(done.stdout)
    assert combined["scales"] == [1000, 2000]
    assert [run["n"] for run in combined["runs"]] == [1000, 2000]
    for run in combined["runs"]:
        names = {row["name"] for rows in run["sections"].values() for row in rows}
        assert {"semantic_search p50", "search_gists p50", "disk", "reopen + first query"} <= names
        assert all(row["baseline"] is not None for rows in run["sections"].values() for row in rows)
        memory = run["memory"]
        assert memory["n"] == run["n"]
        assert memory["peak_rss_bytes"] >= memory["process_before_open_bytes"] > 10_000_000
        assert memory["bytes_per_observation"] >= 0
    [step] = combined["scaling"]
    assert (step["from"], step["to"], step["limit"]) == (1000, 2000, 2.0)
    assert "semantic_search p50" in step["p50_ratios"]
    assert set(step["over_limit"]) <= set(step["p50_ratios"])
    assert not out.exists()  # scratch removed without --keep
    text = scales_table(combined)
    assert "1,000" in text and "2,000" in text and "memory: peak RSS" in text
    assert "p50 latencies 2,000 vs 1,000" in text


def test_scales_exclude_the_other_scaling_options(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "emem_graph.evals.bench", "-q"),
            *("--scales", "1000,2000", "--scale-with", "500", "--out", str(tmp_path / "x")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "--scales excludes --scale-from and --scale-with" in done.stderr


def test_resident_needs_a_directory_and_a_size() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "emem_graph.evals.bench.resident"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "usage:" in done.stderr
