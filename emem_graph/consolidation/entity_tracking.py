"""Tracked and Grid: the entities as EntityResolver holds them in memory (each with its stays
and what of them the next write must change), and the grid that finds those near a point."""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from emem_graph.models import Entity, EntityPosition


@dataclass
class Tracked:
    """An entity as the resolver holds it: the entity, its name vector, its stays and what of
    them the next write must create, change, relink or delete."""

    entity: Entity
    vector: np.ndarray | None
    """The embedding of the entity's name (None until a sighting nearby needs it)."""
    new: bool = False
    changed: bool = False
    stays: list[EntityPosition] = field(default_factory=list)
    """Where it was, oldest first; the last is where it is now (whereabouts)."""
    new_stays: set[str] = field(default_factory=set)
    """Stays not written yet."""
    changed_stays: set[str] = field(default_factory=set)
    """Written stays changed since."""
    taken_stays: set[str] = field(default_factory=set)
    """Written stays of another entity that are this one's since a split (WAS_AT relinked)."""
    dropped_stays: set[str] = field(default_factory=set)
    """Written stays folded into another (deleted at the next write)."""

    @property
    def stay(self) -> EntityPosition:
        """Where it is now."""
        return self.stays[-1]

    def open_stay(self, x: float, y: float, z: float, at: float) -> EntityPosition:
        """Start a stay at (x, y, z) at time ``at`` (no sighting counted yet)."""
        stay = EntityPosition(
            id=uuid.uuid4().hex,
            entity_id=self.entity.id,
            x=x,
            y=y,
            z=z,
            first_seen=at,
            last_seen=at,
            count=0,
        )
        self.stays.append(stay)
        self.new_stays.add(stay.id)
        return stay

    def touch(self, stay: EntityPosition) -> None:
        if stay.id not in self.new_stays:
            self.changed_stays.add(stay.id)


class Grid:
    """Entities hashed into square cells of the merge radius: candidates are the 3x3 block."""

    def __init__(self, cell: float) -> None:
        self.cell = cell
        self._cells: dict[tuple[int, int], set[str]] = defaultdict(set)
        self._where: dict[str, tuple[int, int]] = {}

    def _key(self, x: float, y: float) -> tuple[int, int]:
        return math.floor(x / self.cell), math.floor(y / self.cell)

    def put(self, entity_id: str, x: float, y: float) -> None:
        key = self._key(x, y)
        old = self._where.get(entity_id)
        if old == key:
            return
        if old is not None:
            self._cells[old].discard(entity_id)
        self._cells[key].add(entity_id)
        self._where[entity_id] = key

    def near(self, x: float, y: float) -> Iterator[str]:
        cx, cy = self._key(x, y)
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                yield from self._cells.get((cx + dx, cy + dy), ())


def mark_written(tracked: Tracked) -> None:
    """Mark ``tracked`` as written: nothing of it is new or changed any more."""
    tracked.new = tracked.changed = False
    tracked.new_stays.clear()
    tracked.changed_stays.clear()
    tracked.taken_stays.clear()
    tracked.dropped_stays.clear()


def tracked_vector(tracked: Tracked) -> np.ndarray:
    """The entity's name vector (every entity written has one)."""
    if tracked.vector is None:
        raise AssertionError(f"entity {tracked.entity.id} changed without its name vector")
    return tracked.vector
