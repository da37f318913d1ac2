"""Growth: a robot flushes small batches all day. N one-observation flushes (10,000 with
--long) must leave the LanceDB table with a bounded number of versions (whatever the flush
rate), disk use within 3x of one bulk load of the same rows while open and 2x once closed;
Kuzu's write-ahead log must stay bounded and be checkpointed at close.

The vectors are real MiniLM embeddings, computed once in a batch and handed to add() (the
embedder does not change how storage grows; embedding one text per flush would only slow the
test down).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emem_graph import MemoryConfig, SpatioTemporalMemory
from emem_graph.storage.store import GRAPH_FILE, VECTOR_DIR

WAL_MAX_BYTES = 64 * 2**20
"""Kuzu checkpoints by itself when its WAL passes 16 MiB; allow for one transaction beyond."""


def disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def wal_bytes(root: Path) -> int:
    wal = root / f"{GRAPH_FILE}.wal"
    return wal.stat().st_size if wal.exists() else 0


def memory(root: Path, minilm: Any) -> SpatioTemporalMemory:
    # Only explicit flushes write; the LanceDB upkeep settings are the defaults.
    config = MemoryConfig(
        db_path=str(root), flush_batch_size=1_000_000, flush_interval=1e9, maintenance_interval=None
    )
    return SpatioTemporalMemory(config=config, embedding_provider=minilm)


@pytest.mark.slow
def test_many_small_flushes_keep_versions_disk_and_wal_bounded(
    tmp_path: Path, minilm, scale, summary
) -> None:
    n = scale.growth_flushes
    texts = [f"a red chair near the kitchen door, sighting {i}" for i in range(n)]
    vectors = minilm.embed(texts)
    small = tmp_path / "small"
    mem = memory(small, minilm)
    compact_every = mem.config.vector_compact_every
    most_versions = most_wal = 0
    started = time.monotonic()
    try:
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            mem.add(text, float(i % 100), float(i // 100), embedding=vector)
            mem.flush()
            if i % 100 == 99:
                most_versions = max(most_versions, mem._store.vectors.stats()["versions"])
                most_wal = max(most_wal, wal_bytes(small))
        elapsed = time.monotonic() - started
        running = mem._store.vectors.stats()
        assert running["rows"] == n
        assert running["fragments"] <= compact_every + 1, running
    finally:
        mem.close()
    rate = n / elapsed
    # Versions kept: at most those since the compaction before last, whatever n and the rate.
    version_bound = 2 * compact_every + 10
    assert most_versions <= version_bound, (most_versions, version_bound)
    assert most_wal <= WAL_MAX_BYTES
    assert wal_bytes(small) == 0, "the WAL was not checkpointed at close"

    bulk = tmp_path / "bulk"
    mem = memory(bulk, minilm)
    try:
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            mem.add(text, float(i % 100), float(i // 100), embedding=vector)
        mem.flush()
    finally:
        mem.close()

    closed_small, closed_bulk = disk(small / VECTOR_DIR), disk(bulk / VECTOR_DIR)
    ratio = closed_small / closed_bulk
    assert ratio <= 2.0, f"{n} small flushes: {closed_small} bytes vs {closed_bulk} bulk"
    # While open: the table, the previous compaction's copy and the fragments since.
    open_ratio = running["disk_bytes"] / closed_bulk
    assert open_ratio <= 3.0, f"{n} small flushes: {open_ratio:.1f}x a bulk load while open"
    graph_ratio = (small / GRAPH_FILE).stat().st_size / (bulk / GRAPH_FILE).stat().st_size

    reopened = memory(small, minilm)
    try:
        assert reopened._store.vectors.stats()["versions"] <= 2
        hits = reopened._store.nearest(np.asarray(vectors[n // 2]), 1)
        assert hits[0][0].id is not None and hits[0][1].text == texts[n // 2]
    finally:
        reopened.close()
    line = (
        f"growth ({scale.label()}): {n} one-row flushes at {rate:.0f}/s; LanceDB versions "
        f"at most {most_versions} while running (bound {version_bound}), "
        f"{running['disk_bytes'] / 2**20:.1f} MiB = {open_ratio:.2f}x bulk while running; "
        "after close "
        f"{closed_small / 2**20:.2f} MiB = {ratio:.2f}x a bulk load "
        f"({closed_bulk / 2**20:.2f} MiB); Kuzu file {graph_ratio:.2f}x bulk, WAL at most "
        f"{most_wal / 2**20:.1f} MiB, 0 after close"
    )
    print(line)
    summary.append(line)
