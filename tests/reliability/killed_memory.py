"""A memory left by a writer that SIGKILLed itself (a module of its own: test files import it
by name, as they do sim_clock)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
    path, n, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    quiet, closed_first, entity = (flag == "1" for flag in sys.argv[4:7])
    def open_memory():
        extra = {"maintenance_interval": None} if quiet else {}
        return SpatioTemporalMemory(
            config=MemoryConfig(db_path=path, embedding_dim=dim, **extra),
            embedding_provider=HashingEmbedder(dim),
        )
    mem = open_memory()
    if closed_first:
        mem.close()  # the schema checkpointed: what follows lives in the log only
        mem = open_memory()
    mem.start_episode("tidy the kitchen")
    for i in range(n):
        mem.add(f"saw a red cup number {i} near the sink", x=float(i % 10), y=float(i // 10))
        if i % 20 == 19:
            mem.flush()
    if entity:
        mem.add_entity("red cup", x=1.0, y=2.0)
    mem.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)
"""Writes ``n`` observations ("saw a red cup number {i} near the sink"), flushing every twenty,
then SIGKILLs itself; see run_killed_writer for its options."""


def run_killed_writer(
    path: Path,
    n: int,
    dim: int,
    *,
    quiet: bool = False,
    closed_first: bool = False,
    entity: bool = False,
) -> Path:
    """Run KILLED_WRITER on the memory ``path`` in a child process; check that it died of its
    kill and left a write-ahead log. ``quiet``: no background maintenance; ``closed_first``:
    the new memory closed once before the writes (so they live in the log only); ``entity``:
    a "red cup" entity added at (1, 2) after them. Returns ``path``."""
    flags = ["1" if flag else "0" for flag in (quiet, closed_first, entity)]
    run = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(path), str(n), str(dim), *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert (path / "graph.kuzu.wal").stat().st_size > 0
    return path
