"""StayReads: the stays of entities as the retrieval tools read them (retrieval/history.StayReader),
with consolidation's reads and whereabouts rules on one memory's store."""

from __future__ import annotations

from collections.abc import Sequence

from emem_graph.consolidation import reads, whereabouts
from emem_graph.models import EntityPosition
from emem_graph.storage.store import MemoryStore


class StayReads:
    """The stays as the tools read them (retrieval/history.StayReader): consolidation's
    reads and whereabouts rules on this memory's store."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def positions_of(self, entity_ids: Sequence[str]) -> dict[str, list[EntityPosition]]:
        # The store's in-process copy of the stays, no graph round trip; the kept objects
        # themselves (StayReader's readers never change a stay), in fresh lists.
        return self._store.entities.stays_of(entity_ids, shared=True)

    def landmark(self, x: float, y: float) -> str | None:
        return reads.landmark(self._store, x, y)

    def missed_at(self, stay: EntityPosition, layer: str | None, until: float) -> float | None:
        # Kept until the next write to the index (entity_query asks it for every entity it
        # answers, call after call). A time past the latest observation reads as that one: a
        # clock that moves on without new observations asks the same question.
        version, latest = self._store.index.version
        at = min(until, latest)
        key = ("missed_at", version, at, stay.x, stay.y, stay.last_seen, layer)
        return self._store.cached_read(
            key, lambda: whereabouts.missed_at(self._store, stay, layer, at)
        )
