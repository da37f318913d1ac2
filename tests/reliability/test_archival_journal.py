"""Regression (found by the crash matrix, seed 845011984): archival's vector deletes were not
journalled. MemoryStore.apply built the VectorSync journal before running the change's steps,
and archival learns which observations it archived only from its step's rows, so a crash (or a
failed LanceDB write) between the graph commit and the LanceDB delete left the vectors, and the
raw text in LanceDB's text column, of observations the graph had archived, for good.
"""

from __future__ import annotations

from pathlib import Path

from emem_graph import MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import StorageError


def test_archived_vectors_are_deleted_after_a_failed_lancedb_delete(
    tmp_path: Path, minilm, clock
) -> None:
    config = MemoryConfig(
        db_path=str(tmp_path / "mem"), archive_after_seconds=60.0, maintenance_interval=None
    )
    mem = SpatioTemporalMemory(config=config, embedding_provider=minilm, get_current_time=clock)
    mem.start_episode("patrol")
    ids = [mem.add(f"a red chair by the door {k}", float(k), 0.0) for k in range(4)]
    mem.end_episode(wait=True)
    clock.advance(120.0)

    def refuse(ids: object) -> None:
        raise StorageError("LanceDB refused the delete (as if the process died here)")

    mem._store.vectors.delete = refuse  # type: ignore[method-assign]
    assert mem.maintenance() == len(ids)
    # The process dies before anything retries: no close(), no later write.
    mem._store.graph.close()

    reopened = SpatioTemporalMemory(config=config, embedding_provider=minilm)
    try:
        tiers = {o.id: o.tier for o in reopened.store.get_observations(ids)}
        assert set(tiers.values()) == {"archived"}
        assert reopened.store.vectors.existing_ids(ids) == set(), "archived vectors left"
        assert reopened.store.counts()["pending_vectors"] == 0
    finally:
        reopened.close()
