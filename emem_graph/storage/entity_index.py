"""EntityIndex: every entity and every OBSERVED_IN sighting in process memory.

entity_query filtered the Entity table in Kuzu (a scan plus ~1 ms per node hydrated: 55 ms at
20k observations against eMEM's 0.2 ms), and recall counted the entities seen in an area by
joining OBSERVED_IN with an x/y scan of Observation (50-60 ms at 20k, most of it turning
thousands of rows into Python). Entities are few next to observations and are written by one
component (the entity resolver, through GraphChanges), so the store keeps them here: loaded from
the graph on open, following every committed change, never written to disk. The graph stays the
source of truth.

It also keeps every stay (Position node) of every entity, following the same changes: the
tools read an entity's stays for every answer (entity_query, locate, recall), and a graph read
of them cost 1-4 ms a call at 100k observations once the entities were too many to keep every
stay between writes.

Memory: about 1 KB per entity (its record), about 0.5 KB per stay, 12 bytes per sighting.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from emem_graph.models import Entity, EntityPosition

_INITIAL_CAPACITY = 1024


@dataclass(frozen=True)
class LinkedEntity:
    """An entity and how many of the selected observations it was seen in."""

    id: str
    links: int


class EntityIndex:
    """Entities by id with their positions, names and sightings, for entity_query, recall and
    record lookups without a graph statement. Thread-safe: one writer (the store's), many
    readers.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entities: dict[str, Entity] = {}
        self._code: dict[str, int] = {}
        self._ids: list[str] = []
        self._x = np.empty(_INITIAL_CAPACITY)
        self._y = np.empty(_INITIAL_CAPACITY)
        self._last_seen = np.empty(_INITIAL_CAPACITY)
        self._count = np.empty(_INITIAL_CAPACITY, dtype=np.int64)
        self._columns: _TextColumns | None = None  # rebuilt after a change
        self._sighting_entity = np.empty(_INITIAL_CAPACITY, dtype=np.int32)
        self._sighting_row = np.empty(_INITIAL_CAPACITY, dtype=np.int64)
        self._sightings = 0
        self._stays: dict[str, EntityPosition] = {}
        self._stays_of: dict[str, dict[str, EntityPosition]] = {}
        self._ordered: dict[str, list[EntityPosition]] = {}
        """Each entity's stays in stays_of()'s order, made on first read, dropped when they
        change (entity_query reads them for every entity it lists, call after call)."""
        self._changed: dict[str, None] = {}
        """Ids of entities put, or whose stays changed, since take_changed() (in order)."""

    def __len__(self) -> int:
        return len(self._ids)

    # --- writes (the store's writer, after the graph commit) -----------------------------------

    def put(self, entities: Sequence[Entity], *, copy: bool = True) -> None:
        """Record entities created or updated by a committed change (their final state).

        Args:
            entities: the entities.
            copy: keep copies (the resolver goes on changing its own objects); False for
                objects nobody else holds (read from the graph).
        """
        if not entities:
            return
        with self._lock:
            for entity in entities:
                code = self._code.get(entity.id)
                if code is None:
                    code = len(self._ids)
                    self._reserve_entities(code + 1)
                    self._code[entity.id] = code
                    self._ids.append(entity.id)
                self._entities[entity.id] = (
                    entity.model_copy(update={"metadata": dict(entity.metadata)})
                    if copy
                    else entity
                )
                self._x[code] = entity.x
                self._y[code] = entity.y
                self._last_seen[code] = entity.last_seen
                self._count[code] = entity.observation_count
                self._changed[entity.id] = None
            self._columns = None

    def add_sightings(self, entity_ids: Sequence[str], observation_rows: np.ndarray) -> None:
        """Record OBSERVED_IN edges: entity ``entity_ids[i]`` seen in the observation at row
        ``observation_rows[i]`` of the observation index (-1: not in it, skipped)."""
        rows = np.asarray(observation_rows, dtype=np.int64)
        with self._lock:
            codes = np.array([self._code.get(i, -1) for i in entity_ids], dtype=np.int32)
            keep = (codes >= 0) & (rows >= 0)
            codes, rows = codes[keep], rows[keep]
            start = self._sightings
            end = start + codes.size
            if end > self._sighting_entity.size:
                size = max(end, 2 * self._sighting_entity.size)
                self._sighting_entity = _grown(self._sighting_entity, size)
                self._sighting_row = _grown(self._sighting_row, size)
            self._sighting_entity[start:end] = codes
            self._sighting_row[start:end] = rows
            self._sightings = end

    def put_stays(
        self, stays: Sequence[EntityPosition], deleted: Sequence[str] = (), *, copy: bool = True
    ) -> None:
        """Record stays created or updated by a committed change (their final state: a stay
        that changed entity, after a split, moves to it) and the ids of stays it deleted.
        ``copy``: keep copies; False for objects nobody else holds (a change's own copies,
        stays read from the graph)."""
        with self._lock:
            for stay_id in deleted:
                gone = self._stays.pop(stay_id, None)
                if gone is not None:
                    self._drop_stay(gone)
                    self._changed[gone.entity_id] = None
            for stay in stays:
                before = self._stays.get(stay.id)
                if before is not None and before.entity_id != stay.entity_id:
                    self._drop_stay(before)
                    self._changed[before.entity_id] = None
                self._changed[stay.entity_id] = None
                self._ordered.pop(stay.entity_id, None)
                kept = stay.model_copy() if copy else stay
                self._stays[stay.id] = kept
                self._stays_of.setdefault(stay.entity_id, {})[stay.id] = kept

    def stays_of(
        self, entity_ids: Sequence[str], *, shared: bool = False
    ) -> dict[str, list[EntityPosition]]:
        """Each entity's stays, oldest first (first seen, then id: the order of
        queries/entity_positions.cypher); entities without any are left out. Copies, or
        with ``shared`` the kept objects themselves, for readers that never change them (a
        change replaces a kept stay, never alters it: what a reader holds stays as read)."""
        with self._lock:
            found: dict[str, list[EntityPosition]] = {}
            for entity_id in entity_ids:
                ordered = self._ordered.get(entity_id)
                if ordered is None:
                    own = self._stays_of.get(entity_id)
                    if not own:
                        continue
                    ordered = sorted(own.values(), key=lambda s: (s.first_seen, s.id))
                    self._ordered[entity_id] = ordered
                found[entity_id] = (
                    list(ordered) if shared else [stay.model_copy() for stay in ordered]
                )
            return found

    def stay_count(self) -> int:
        """How many stays are kept."""
        with self._lock:
            return len(self._stays)

    def _drop_stay(self, stay: EntityPosition) -> None:
        self._ordered.pop(stay.entity_id, None)
        own = self._stays_of.get(stay.entity_id)
        if own is not None:
            own.pop(stay.id, None)
            if not own:
                del self._stays_of[stay.entity_id]

    # --- reads ---------------------------------------------------------------------------------

    def take_changed(self) -> list[Entity]:
        """The entities put, or whose stays changed, since the last call, most recently seen
        first: the kept objects (for readers that never change them). Forgets them."""
        with self._lock:
            changed, self._changed = self._changed, {}
            found = [self._entities[i] for i in changed if i in self._entities]
        return sorted(found, key=lambda e: (-e.last_seen, e.id))

    def prepare(self) -> None:
        """Derive now what find() derives after a change (the name and type columns, the
        orders without a circle): the writer calls it after a write, the next question then
        does not."""
        with self._lock:
            n = len(self._ids)
            if n:
                columns = self._text_columns()
                columns.ranked(self._last_seen[:n], self._count[:n])
                columns.latest(self._last_seen[:n])

    def get(self, ids: Sequence[str]) -> dict[str, Entity]:
        """The entities of these ids that exist (copies: safe to modify)."""
        with self._lock:
            return {i: self._entities[i].model_copy() for i in ids if i in self._entities}

    def find(
        self,
        *,
        name: str | None = None,
        entity_type: str | None = None,
        last_seen_after: float | None = None,
        circle: tuple[float, float, float] | None = None,
        limit: int = 10,
        shared: bool = False,
        latest_first: bool = False,
    ) -> list[Entity]:
        """Entities by name substring and type (case-insensitive), area (x, y, radius) and last
        sighting: nearest first within a circle, otherwise most often seen, then latest seen,
        then by id (queries/find_entities.cypher is the same read in Cypher); with
        ``latest_first``, latest seen first, then by id, inside a circle or not (what
        entity_query lists). Copies, or with ``shared`` the kept objects, for readers that
        never change them (put() replaces a kept entity, never alters it)."""
        with self._lock:
            n = len(self._ids)
            if n == 0:
                return []
            columns = self._text_columns()
            mask: np.ndarray | None = None
            if name is not None:
                mask = columns.named(name)
            if entity_type is not None:
                typed = columns.typed(entity_type)
                mask = typed if mask is None else mask & typed
            if last_seen_after is not None:
                recent = self._last_seen[:n] >= last_seen_after
                mask = recent if mask is None else mask & recent
            if circle is None:
                # One order kept until the next change (by count or by last sighting).
                if latest_first:
                    ranked = columns.latest(self._last_seen[:n])
                else:
                    ranked = columns.ranked(self._last_seen[:n], self._count[:n])
                picked = ranked if mask is None else ranked[mask[ranked]]
                codes = picked[:limit]
            else:
                x, y, radius = circle
                d2 = (self._x[:n] - x) ** 2 + (self._y[:n] - y) ** 2
                inside = d2 <= radius * radius
                found = np.flatnonzero(inside if mask is None else mask & inside)
                keys: tuple[np.ndarray, ...] = (
                    (-self._last_seen[:n],)
                    if latest_first
                    else (-self._last_seen[:n], -self._count[:n], d2)
                )
                order = np.lexsort([columns.id_rank[found], *(key[found] for key in keys)])
                codes = found[order[:limit]]
            chosen = [self._entities[self._ids[c]] for c in codes.tolist()]
            return chosen if shared else [entity.model_copy() for entity in chosen]

    def seen_in(self, selected_rows: np.ndarray, limit: int) -> list[LinkedEntity]:
        """The entities seen in the observations whose index rows are True in
        ``selected_rows``, most sightings there first (ties by id), at most ``limit``."""
        with self._lock:
            n = len(self._ids)
            count = self._sightings
            if n == 0 or count == 0:
                return []
            rows = self._sighting_row[:count]
            inside = rows < selected_rows.size
            hit = np.zeros(count, dtype=bool)
            hit[inside] = selected_rows[rows[inside]]
            links = np.bincount(self._sighting_entity[:count][hit], minlength=n)
            codes = np.flatnonzero(links)
            if codes.size > limit:
                cut = np.partition(links[codes], codes.size - limit)[codes.size - limit]
                codes = codes[links[codes] >= cut]
            ranked = sorted(codes.tolist(), key=lambda c: (-links[c], self._ids[c]))
            return [LinkedEntity(self._ids[c], int(links[c])) for c in ranked[:limit]]

    # --- internals -----------------------------------------------------------------------------

    def _text_columns(self) -> _TextColumns:
        if self._columns is None:
            entities = [self._entities[i] for i in self._ids]
            names, name_of = np.unique(
                np.array([e.name.lower() for e in entities], dtype=np.str_), return_inverse=True
            )
            types, type_of = np.unique(
                np.array([(e.entity_type or "").lower() for e in entities], dtype=np.str_),
                return_inverse=True,
            )
            id_rank = np.empty(len(self._ids), dtype=np.int64)
            id_rank[np.argsort(np.array(self._ids, dtype=np.str_), kind="stable")] = np.arange(
                len(self._ids)
            )
            self._columns = _TextColumns(names, name_of, types, type_of, id_rank)
        return self._columns

    def _reserve_entities(self, size: int) -> None:
        if size <= self._x.size:
            return
        grown = max(size, 2 * self._x.size)
        self._x = _grown(self._x, grown)
        self._y = _grown(self._y, grown)
        self._last_seen = _grown(self._last_seen, grown)
        self._count = _grown(self._count, grown)


COLUMN_MEMO_MAX = 64
"""Name or type masks _TextColumns keeps between two changes (then it starts over): one byte
an entity each, 6.4 MB at most with 100,000 entities."""


@dataclass(frozen=True)
class _TextColumns:
    """The entities' distinct lower-case names and types, which of them each entity has, and
    each entity's rank in id order (the last tie-break of find). Rebuilt after every change
    (put), so what it derives and keeps (a name's mask, the order of find without a circle)
    holds until then."""

    names: np.ndarray
    name_of: np.ndarray
    types: np.ndarray
    type_of: np.ndarray
    id_rank: np.ndarray
    memo: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    def named(self, name: str) -> np.ndarray:
        """Which entities' names contain ``name`` (case-insensitive), each distinct name
        matched once (128 names for 3,000 entities on the benchmark's patrol)."""
        key = ("name", name.lower())
        mask = self.memo.get(key)
        if mask is None:
            if "\x00" in key[1]:
                # NumPy's str arrays drop trailing NULs ("\x00" would read as "" and match
                # every name): such a needle is matched by Python's own `in`.
                found = np.array([key[1] in n for n in self.names.tolist()], dtype=bool)
            else:
                found = np.strings.find(self.names, key[1]) >= 0
            mask = found[self.name_of]
            self._keep(key, mask)
        return mask

    def typed(self, entity_type: str) -> np.ndarray:
        """Which entities have this type (case-insensitive)."""
        key = ("type", entity_type.lower())
        mask = self.memo.get(key)
        if mask is None:
            mask = (self.types == key[1])[self.type_of]
            self._keep(key, mask)
        return mask

    def ranked(self, last_seen: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Every entity's code, most often seen first, then latest seen, then by id."""
        key = ("order", "")
        order = self.memo.get(key)
        if order is None:
            order = np.lexsort([self.id_rank, -last_seen, -count])
            self._keep(key, order)
        return order

    def latest(self, last_seen: np.ndarray) -> np.ndarray:
        """Every entity's code, latest seen first, then by id."""
        key = ("latest", "")
        order = self.memo.get(key)
        if order is None:
            order = np.lexsort([self.id_rank, -last_seen])
            self._keep(key, order)
        return order

    def _keep(self, key: tuple[str, str], value: np.ndarray) -> None:
        if len(self.memo) >= COLUMN_MEMO_MAX:
            self.memo.clear()
        self.memo[key] = value


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    bigger = np.empty(size, dtype=array.dtype)
    bigger[: array.size] = array
    return bigger
