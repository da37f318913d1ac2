"""The resident memory of a memory the benchmark wrote, measured in a fresh process:
``python -m emem_graph.evals.bench.resident DIRECTORY N`` opens it as the benchmark does, waits
for its in-process copies (the vector sketch, a small memory's exact vectors) to load, calls
every tool once and prints JSON: the process's peak RSS before opening and after, and the
bytes per observation between the two (the in-process indexes, the sketch, the exact copy,
Kuzu's and LanceDB's caches)."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

from emem_graph.evals.bench.drive import SimClock, emem_graph_subject, tool_calls
from emem_graph.evals.bench.workload import START, patrol_workload
from emem_graph.ingest.embeddings import HashingEmbedder

SAMPLE = 1_000
"""Observations of the patrol built for its query points (the same floor at every size)."""


def peak_rss_bytes() -> int:
    """This process's peak resident set size (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def measure(directory: Path, n: int) -> dict[str, float]:
    """Open the memory in ``directory`` (n observations), call every tool once; the RSS."""
    embedder = HashingEmbedder(384)
    work = patrol_workload(SAMPLE, embedder=embedder, queries=2)
    clock = SimClock(START + n * 0.4)
    subject = emem_graph_subject(directory, embedder, clock, 1000, extract=False)
    before = peak_rss_bytes()
    memory = subject.open()
    try:
        memory.store.wait_for_sketch(600)
        for call in tool_calls(memory, work).values():
            call(1)
        after = peak_rss_bytes()
    finally:
        memory.close()
    return {
        "n": n,
        "process_before_open_bytes": before,
        "peak_rss_bytes": after,
        "bytes_per_observation": round((after - before) / max(n, 1), 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m emem_graph.evals.bench.resident DIRECTORY N", file=sys.stderr)
        return 2
    print(json.dumps(measure(Path(args[0]), int(args[1]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
