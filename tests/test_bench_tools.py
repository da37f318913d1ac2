"""The tool part of the benchmark: every tool timed on the memory and on the NumPy baseline,
asked the same questions about the same patrol."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from emem_graph import HashingEmbedder
from emem_graph.evals.bench.baseline import exact_answers
from emem_graph.evals.bench.drive import (
    AREA_SEARCH,
    TOOLS,
    SimClock,
    emem_graph_subject,
    ingest,
    measure_tools,
    result_count,
    tool_calls,
)
from emem_graph.evals.bench.workload import AREA_FRACTION, AREA_RADIUS, START, patrol_workload


def test_every_tool_is_timed_on_the_memory_and_on_numpy(tmp_path: Path) -> None:
    embedder = HashingEmbedder(384)
    work = patrol_workload(800, embedder=embedder, queries=3)
    clock = SimClock(START)
    subject = emem_graph_subject(tmp_path / "ours", embedder, clock, batch_size=200)
    memory = subject.open()
    try:
        written = ingest(memory, work, clock, subject.settle)
        subject.consolidate(memory)
        clock.now = work.now
        ours = measure_tools(tool_calls(memory, work), repeats=2)
    finally:
        memory.close()
    exact = measure_tools(exact_answers(work, embedder), repeats=2)
    assert written["obs_per_s"] > 0 and written["adds_s"] > 0
    assert list(ours) == list(exact) == [*TOOLS, AREA_SEARCH]
    for name in ours:
        for side in (ours[name], exact[name]):
            assert 0 < side["p50_ms"] <= side["p95_ms"]
    assert ours["semantic_search"]["results"] == exact["semantic_search"]["results"] == 10
    assert ours[AREA_SEARCH]["results"] == exact[AREA_SEARCH]["results"] == 10


def test_the_area_prefilter_covers_one_percent_of_the_floor() -> None:
    work = patrol_workload(27_000)  # ten laps
    inside = [
        np.mean(np.hypot(work.x - cx, work.y - cy) <= AREA_RADIUS) for cx, cy in work.query_points
    ]
    assert 0.3 * AREA_FRACTION < np.mean(inside) < 3 * AREA_FRACTION


def test_result_count_reads_numbered_lines() -> None:
    assert result_count("1. a\n2. b\n  detail\n3. c") == 3
    assert result_count("No results found.") == 0
    assert result_count(np.arange(4)) == 4
