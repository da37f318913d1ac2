"""The writer checkpoints the graph once its log passes CHECKPOINT_WAL_BYTES: the engines keep
memory for everything committed since their last checkpoint (about 65 times the log) and
checkpoint by themselves only at a much larger log."""

from __future__ import annotations

from pathlib import Path

from emem_graph import SpatioTemporalMemory
from emem_graph.ingest.embeddings import HashingEmbedder
from emem_graph.storage import probe
from emem_graph.storage.graph import CHECKPOINT_WAL_BYTES
from emem_graph.storage.layout import GRAPH_FILE


def test_the_log_is_checkpointed_once_it_passes_the_threshold(tmp_path: Path) -> None:
    memory = SpatioTemporalMemory(
        str(tmp_path / "mem"),
        config={"entity_extraction": False},
        embedding_provider=HashingEmbedder(384),
    )
    wal = probe.wal_path(tmp_path / "mem" / GRAPH_FILE)
    text = "a long caption of the kitchen counter with a red kettle and two mugs " * 8
    sizes = []
    for batch in range(12):
        for i in range(200):
            memory.add(f"{text} {batch}-{i}", float(i), 0.0)
        memory.flush()
        sizes.append(wal.stat().st_size if wal.exists() else 0)
    memory.close()
    # 2,400 rows of ~550 characters went through the log: it passed the threshold, and each
    # commit that found it past the threshold checkpointed it.
    assert 2 * CHECKPOINT_WAL_BYTES < 2_400 * 550
    assert max(sizes) < 2 * CHECKPOINT_WAL_BYTES, sizes
    assert min(sizes) < CHECKPOINT_WAL_BYTES
