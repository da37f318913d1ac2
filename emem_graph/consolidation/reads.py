"""Typed answers of the named graph queries consolidation reads (queries/*.cypher).

Each function runs one named query with parameters through the store and returns records; none
builds Cypher from its arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.models import Entity, EntityPosition, Observation
from emem_graph.storage import records

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore


@dataclass(frozen=True)
class ContextObservation:
    """An observation an entity was seen in, with its text (a context for merging)."""

    id: str
    layer: str
    text: str
    timestamp: float


def time_window_candidates(store: MemoryStore, cutoff: float, limit: int) -> list[Observation]:
    """Short-term perception observations of no episode perceived before ``cutoff``."""
    rows = store.graph.query("time_window_candidates", {"cutoff": cutoff, "limit": int(limit)})
    return [records.observation(row["o"]) for row in rows]


def pending_episodes(store: MemoryStore) -> list[str]:
    """Closed episodes whose consolidation was requested but not yet written."""
    return [row["id"] for row in store.graph.query("pending_consolidation_episodes")]


def entities_in_box(
    store: MemoryStore, xmin: float, xmax: float, ymin: float, ymax: float
) -> list[Entity]:
    """Entities inside an axis-aligned box."""
    rows = store.graph.query(
        "entities_in_box", {"xmin": xmin, "xmax": xmax, "ymin": ymin, "ymax": ymax}
    )
    return [records.entity(row["e"]) for row in rows]


def positions_of(store: MemoryStore, entity_ids: Sequence[str]) -> dict[str, list[EntityPosition]]:
    """Each entity's stays, oldest first (the last one is where it is now, unless the memory
    predates positions); entities without any are left out. From the store's in-process
    entity index, which follows every committed change (queries/entity_positions.cypher is
    the same read in Cypher)."""
    return store.entities.stays_of(entity_ids)


def all_positions(store: MemoryStore) -> dict[str, list[EntityPosition]]:
    """Every entity's stays, oldest first."""
    found: dict[str, list[EntityPosition]] = {}
    for row in store.graph.query("all_positions"):
        stay = records.position(row["p"])
        found.setdefault(stay.entity_id, []).append(stay)
    return found


def entity_contexts(store: MemoryStore, entity_id: str, limit: int) -> list[ContextObservation]:
    """The latest observations (with text) an entity was seen in, newest first."""
    rows = store.graph.query("entity_context_observations", {"id": entity_id, "limit": limit})
    return [
        ContextObservation(r["id"], r["layer"] or "default", r["text"], r["timestamp"])
        for r in rows
    ]


def entity_names(store: MemoryStore) -> list[str]:
    """The distinct names of all entities."""
    return [row["name"] for row in store.graph.query("entity_names") if row["name"]]


def stored_vectors(store: MemoryStore, ids: Sequence[str]) -> dict[str, np.ndarray]:
    """The vectors LanceDB holds for these nodes (reused instead of re-embedding)."""
    return store.vectors.vectors_of(list(ids)) if ids else {}


def entity_sightings(store: MemoryStore) -> list[tuple[str, str]]:
    """Every (entity id, observation id) OBSERVED_IN pair."""
    rows = store.graph.query("entity_sightings")
    return [(row["entity_id"], row["observation_id"]) for row in rows]


def cooccurrence_counts(store: MemoryStore) -> dict[tuple[str, str], int]:
    """Co-occurrence counts per stored (smaller id, larger id) pair."""
    rows = store.graph.query("cooccurrence_counts")
    return {(row["a"], row["b"]): int(row["count"]) for row in rows}


LANDMARK_RADIUS = 2.0
"""Metres: the farthest a gist's landmark may be from its centre."""
_NOT_LANDMARKS = frozenset({"person", "animal"})


def landmark(store: MemoryStore, x: float, y: float) -> str | None:
    """The name of the entity that best says where (x, y) is: within LANDMARK_RADIUS, never a
    person or an animal, a typed thing (furniture, appliance...) before a plain "object" (which
    may be carried away), nearest first; None when there is none."""
    found = [
        e
        for e in store.entities.find(circle=(x, y, LANDMARK_RADIUS), limit=20)
        if (e.entity_type or "object") not in _NOT_LANDMARKS and e.name.strip()
    ]
    if not found:
        return None
    typed = [e for e in found if (e.entity_type or "object") != "object"]
    return (typed or found)[0].name
