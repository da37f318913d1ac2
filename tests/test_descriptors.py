"""A process that opens and closes memories all day keeps no descriptor: close() gives back
every one a memory opened, none is left on a deleted file (LanceDB's full-text index files,
replaced at each compaction, were held open by the table handle)."""

from __future__ import annotations

import os
from pathlib import Path

from emem_graph import SpatioTemporalMemory
from emem_graph.ingest.embeddings import HashingEmbedder

CYCLES = 10


def open_descriptors() -> tuple[int, int]:
    """(open descriptors, those on a deleted file) of this process."""
    targets = []
    for name in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:  # the directory's own descriptor, closed meanwhile
            continue
    return len(targets), sum(target.endswith("(deleted)") for target in targets)


def test_opening_and_closing_a_memory_again_and_again_keeps_no_descriptor(tmp_path: Path) -> None:
    embedder = HashingEmbedder(384)
    _, deleted_before = open_descriptors()  # pytest's own capture files are deleted ones
    after_close = []
    for cycle in range(CYCLES):
        memory = SpatioTemporalMemory(
            str(tmp_path / "mem"),
            config={"vector_compact_every": 2},  # a compaction (new full-text index) every 2
            embedding_provider=embedder,
        )
        for i in range(20):
            memory.add(f"a red chair by the window, round {cycle}, sighting {i}", float(i), 0.0)
            if i % 5 == 4:
                memory.flush()
        assert "red chair" in memory.tools.semantic_search("red chair")
        memory.store.vectors.keyword_search("red chair", 5, None)  # reads the full-text index
        memory.close()
        after_close.append(open_descriptors())
    # The first cycle opens what stays for the process (the vector store's event loop).
    assert after_close[1:] == [after_close[0]] * (CYCLES - 1), after_close
    assert after_close[0][1] == deleted_before
