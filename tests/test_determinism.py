"""The same memory and the same call give the same answer, every run (issue 21).

A demo memory is built once; copies of it are opened in child processes with different hash
seeds, one quiet and one whose vector table is compacted (fragments merged, full-text and scalar
indexes built) before and while it answers. Every tool answer of the demo's questions must be
identical across the children and across two passes in each child. Before the keyword side was
computed in process, LanceDB's BM25 scores changed with its index's coverage and ties came back
in scan order, so rankings differed from run to run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emem_graph import MemoryConfig, SpatioTemporalMemory
from emem_graph.evals.demo import build_patrol_memory, demo_questions

PROBE = Path(__file__).with_name("determinism_probe.py")
START = 1_790_000_000.0


@pytest.fixture(scope="module")
def demo_memory(tmp_path_factory: pytest.TempPathFactory, minilm) -> tuple[Path, float]:
    directory = tmp_path_factory.mktemp("determinism") / "memory"
    now = [START]
    memory = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(directory), maintenance_interval=None),
        embedding_provider=minilm,
        get_current_time=lambda: now[0],
    )

    def advance(seconds: float) -> None:
        now[0] += seconds

    try:
        build_patrol_memory(memory, clock=lambda: now[0], advance=advance, progress=False)
        # The first describe_area / global_search builds the area forest (new gists): a
        # legitimate change of the memory. Asked once here, the copies start from that state.
        for name, arguments in demo_questions():
            memory.dispatch_tool_call(name, arguments)
    finally:
        memory.close()
    return directory, now[0]


def _answers(directory: Path, copy: Path, now: float, mode: str, seed: str) -> list[list[str]]:
    shutil.copytree(directory, copy)
    env = {**os.environ, "PYTHONHASHSEED": seed, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(PROBE), str(copy), repr(now), mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    passes: list[list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return passes


def test_the_same_memory_answers_the_same_every_run(demo_memory, tmp_path) -> None:
    directory, now = demo_memory
    quiet = _answers(directory, tmp_path / "a", now, "quiet", "1")
    busy = _answers(directory, tmp_path / "b", now, "busy", "2")
    names = [name for name, _ in demo_questions()]
    assert len(quiet[0]) == len(names)
    # Not vacuous: the answers hold what the demo remembers.
    assert "coffee machine" in quiet[0][0].lower()
    for run in (quiet[1], busy[0], busy[1]):
        for name, expected, got in zip(names, quiet[0], run, strict=True):
            assert got == expected, f"{name} answered differently:\n{expected}\n---\n{got}"
