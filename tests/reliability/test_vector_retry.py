"""A LanceDB write that fails is retried within a second, not left for a later write: the
rows it carried are searchable although nothing else is written."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from emem_graph import SpatioTemporalMemory
from emem_graph.errors import StorageError
from emem_graph.ingest.embeddings import HashingEmbedder
from emem_graph.storage.vectors import VectorStore


def test_a_failed_vector_write_is_retried_promptly_without_another_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = SpatioTemporalMemory(str(tmp_path / "mem"), embedding_provider=HashingEmbedder(384))
    add = VectorStore.add
    failures = {"left": 2}

    def failing_add(self: VectorStore, rows: Any) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise StorageError("lance error: Not found: a data file (injected)")
        add(self, rows)

    monkeypatch.setattr(VectorStore, "add", failing_add)
    memory.add("a red fire extinguisher by the stairs", 3.0, 4.0)
    memory.flush()  # stored in the graph; its vector write fails
    assert failures["left"] == 1
    assert memory.store.counts()["pending_vectors"] == 1

    deadline = time.monotonic() + 10
    while memory.store.counts()["pending_vectors"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert memory.store.counts()["pending_vectors"] == 0
    assert memory.store.vectors.count() == 1
    answer = memory.tools.semantic_search("fire extinguisher")
    memory.close()
    assert "fire extinguisher" in answer
