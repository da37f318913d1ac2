"""`emem-graph bench --day` at small N: a robot's day through one open memory, its table over
time and its JSON (no timing assertions beyond "something was measured": machines differ)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from emem_graph.cli import main
from emem_graph.evals.bench.day import EPISODE_EVERY, SAMPLES
from emem_graph.evals.bench.footprint import footprint

N = 2_000
DESCRIPTOR_MARGIN = 10
"""Descriptors a first open may leave for the process's lifetime (the vector store's runtime:
its event loop and sockets), not for each memory."""


def test_bench_day_reports_the_process_over_time_and_leaves_no_descriptor_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = tmp_path / "day.json"
    out_dir = tmp_path / "day"
    options = ["--observations", str(N), "--out", str(out_dir), "--json", str(written)]
    assert main(["-q", "bench", "--day", *options]) == 0
    out, err = capsys.readouterr()
    assert f"{N:,} observations of the patrol" in out
    assert "observations   obs/s  day obs/s  RSS MB  fds  deleted fds" in out
    assert "\r" not in err  # no progress bars off a terminal
    assert not out_dir.exists()  # removed without --keep

    figures = json.loads(written.read_text(encoding="utf-8"))
    assert figures["configuration"] == "default"
    samples = figures["samples"]
    assert len(samples) == SAMPLES
    assert samples[-1]["observations"] == N
    assert all(s["obs_per_s"] > 0 and s["rss_mb"] > 0 and s["fds"] > 0 for s in samples)
    assert figures["ingest"]["obs_per_s"] > 0
    assert figures["ingest"]["day_obs_per_s"] > 0
    assert figures["growth"]["rss_kb_per_obs"] is not None
    before, after = figures["before_open"], figures["after_close"]
    assert after["fds"] <= before["fds"] + DESCRIPTOR_MARGIN
    # pytest captures output into deleted temporary files: the memory must add none.
    assert after["deleted_fds"] == before["deleted_fds"]
    tools = figures["tools"]
    assert tools["all tools"]["start_calls"] > 0 and tools["all tools"]["start_p50_ms"] > 0
    assert all(row["end_calls"] > 0 and row["end_p50_ms"] > 0 for row in tools.values())
    counts = figures["consolidated"]["after_close"]
    assert counts["observations"] == N
    assert counts["episodes"] == N // EPISODE_EVERY
    assert counts["gists"] >= 1 and counts["entities"] >= 1
    assert isinstance(figures["warning_records"], int)
    assert "emem" in figures  # eMEM's rates, or the note saying why there are none


def test_footprint_counts_a_descriptor_whose_file_was_deleted(tmp_path: Path) -> None:
    before = footprint()
    path = tmp_path / "gone"
    with open(path, "w", encoding="utf-8") as handle:
        os.unlink(path)
        held = footprint()
        assert held.deleted_fds == before.deleted_fds + 1
        assert handle.writable()
    assert footprint().deleted_fds == before.deleted_fds


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--observations", "10"], "--observations is the size of a --day run"),
        (["--day", "--scale-with", "10"], "--day excludes --scale-with"),
    ],
)
def test_bench_day_options_apply_to_the_day_only(
    tmp_path: Path, options: list[str], message: str
) -> None:
    with pytest.raises(SystemExit, match=message):
        main(["-q", "bench", "--out", str(tmp_path / "b"), *options])
