"""ObservationIndex: every observation's columns in process memory, for area and time reads.

Kuzu has no secondary indexes: a filter on x, y or timestamp scans the column, and on this
machine every statement costs ~1 ms before it reads a row and ~1 ms per node hydrated by primary
key, so an area or time-window tool took 15-30 ms at 20k observations. STORAGE-FACTS measured an
in-process index 30-100x faster than a column scan. This one holds the Observation table's
columns (no vectors) in NumPy arrays and lists, is rebuilt from the graph on open, and follows
every committed write: appends from the flush, tier changes and archival from GraphChanges. The
graph stays the source of truth; the index is never written to disk.

Area reads gather their candidate rows from a grid of cells (storage/cell_grid.py).

Memory: about 150 bytes per observation plus its text (~250 MB at 1M observations), and the
vector sketch (storage/sketch.py) when the store keeps one.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.filters import VectorFilter
from emem_graph.models import AGENT_NOTE, INTEROCEPTION, Observation, Tier, trusted
from emem_graph.storage.cell_grid import CELL, CellGrid
from emem_graph.storage.keyword_index import KeywordIndex
from emem_graph.storage.records import metadata_of
from emem_graph.storage.release import release_free_memory
from emem_graph.storage.sketch import VectorSketch

TIERS: tuple[Tier, ...] = ("working", "short_term", "long_term", "archived")
_TIER_CODE: dict[str, int] = {tier: code for code, tier in enumerate(TIERS)}
_ARCHIVED = _TIER_CODE["archived"]
_INITIAL_CAPACITY = 1024
KEYWORD_BUILD_ROWS = 1 << 18
"""Rows the keyword index takes in one add() while it catches up (a first search after an open)."""
KEYWORD_RELEASE_ROWS = 1 << 17
"""A catch-up of at least this many rows gives the allocators' free pages back after it."""
_GRID_SHARE = 0.25
"""An area read whose cells hold more than this share of all rows scans every row instead."""


@dataclass(frozen=True)
class _Snapshot:
    """The first ``n`` rows of the numeric columns, as they were when the read began."""

    n: int
    x: np.ndarray
    y: np.ndarray
    t: np.ndarray
    layer: np.ndarray
    body: np.ndarray
    tier: np.ndarray
    sorted: bool = False
    """Whether t never decreases from row to row (a robot writes in time order)."""
    offset: int = 0
    """Row of the whole index that row 0 here is (a time window's slice)."""

    rows_of_whole: np.ndarray | None = None
    """Rows of the whole index of each row here, when not a contiguous slice (take())."""

    def rows(self, local: np.ndarray) -> np.ndarray:
        """Rows of the whole index of these rows of the snapshot."""
        if self.rows_of_whole is not None:
            return self.rows_of_whole[local]
        return local + self.offset

    def take(self, local: np.ndarray) -> _Snapshot:
        """These rows only (sorted row numbers of this snapshot)."""
        return _Snapshot(
            int(local.size),
            self.x[local],
            self.y[local],
            self.t[local],
            self.layer[local],
            self.body[local],
            self.tier[local],
            False,
            0,
            self.rows(local),
        )

    def window(self, after: float | None, before: float | None) -> _Snapshot:
        """The rows of [after, before] and maybe more: a slice found by bisection when the
        rows are in time order (the caller still filters by time), else every row."""
        if not self.sorted or (after is None and before is None):
            return self
        lo = 0 if after is None else int(np.searchsorted(self.t, after, side="left"))
        hi = self.n if before is None else int(np.searchsorted(self.t, before, side="right"))
        hi = max(lo, hi)
        return _Snapshot(
            hi - lo,
            self.x[lo:hi],
            self.y[lo:hi],
            self.t[lo:hi],
            self.layer[lo:hi],
            self.body[lo:hi],
            self.tier[lo:hi],
            True,
            self.offset + lo,
        )


class ObservationIndex:
    """Observation columns in memory: area, time-window and latest-reading lookups, and records
    by id, without a graph statement. Thread-safe: one writer (the store's), many readers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0
        self._x = np.empty(_INITIAL_CAPACITY)
        self._y = np.empty(_INITIAL_CAPACITY)
        self._z = np.empty(_INITIAL_CAPACITY)
        self._t = np.empty(_INITIAL_CAPACITY)
        self._confidence = np.empty(_INITIAL_CAPACITY)
        self._layer = np.empty(_INITIAL_CAPACITY, dtype=np.int32)
        self._body = np.empty(_INITIAL_CAPACITY, dtype=bool)
        self._tier = np.empty(_INITIAL_CAPACITY, dtype=np.int8)
        self._ids: list[str] = []
        self._texts: list[str | None] = []
        self._sources: list[str] = []
        self._episodes: list[str | None] = []
        self._metadata: list[str | None] = []
        self._row: dict[str, int] = {}
        self._layer_code: dict[str, int] = {}
        self._layer_names: list[str] = []
        self._pool: dict[str, str] = {}
        """One object per distinct text, source type, episode id and metadata appended
        (_POOLED): a patrol repeats its texts and every observation of an episode holds the
        same id."""
        self._cells = CellGrid()
        """Rows by grid cell: area reads look at the cells a circle covers, not at every
        row (read and filled under ``_lock``)."""
        self._sorted = True
        """Whether every row so far came in time order (then windows are found by bisection
        and latest readings by scanning back from the end, not by a pass over every row)."""
        self._body_codes: set[int] = set()
        self._keywords = KeywordIndex(by_row=False)  # searched by text (store.keyword_hits)
        self._keyword_rows = 0
        """Rows [0, _keyword_rows) are in _keywords (indexed when a keyword search asks)."""
        self._keyword_lock = threading.Lock()
        self._version = 0
        """Changes with every write (rows added, a tier changed): reads keyed by it hold
        until the next write."""
        self._latest = -np.inf
        """The latest observation time of any row."""
        self._nearest_kept: tuple[tuple[Any, ...], VectorSketch, np.ndarray, np.ndarray] | None = (
            None
        )
        """nearest_to_vector's last area: (its question with the index's and the sketch's
        versions, the sketch, the rows with a vector, their negated scores)."""
        self.sketch: VectorSketch | None = None
        """int8 copies of the observation vectors by row (MemoryStore fills it when the
        area sketch is on); None when off."""

    def __len__(self) -> int:
        return self._n

    @property
    def version(self) -> tuple[int, float]:
        """(a number that changes with every write to the index, the latest observation time
        of any row): a read of the index keyed by it holds until the next write, and a read up
        to a time past the latest observation answers as one up to that observation does."""
        with self._lock:
            return self._version, self._latest

    # --- writes (the store's writer, after the graph commit) -----------------------------------

    def load(self, table: pa.Table) -> None:
        """Add the rows of an Arrow table with the Observation columns (id, text, x, y, z,
        timestamp, layer, source_type, confidence, tier, episode_id, metadata)."""
        if table.num_rows == 0:
            return
        # The graph returns its rows in storage order; in time order the index keeps its
        # bisection and scan-from-the-end reads (a reopened 1M memory read its latest body
        # state by a pass over every row: get_current_context 20 ms instead of a few).
        table = table.sort_by([("timestamp", "ascending")])
        # Each column's distinct values are made into Python objects once (a dictionary
        # encoding), and coded once per distinct value, not per row.
        with self._lock:
            pool = self._pool
            if len(pool) > _POOL_MAX:
                pool.clear()
            encoded = {name: _encoded(table.column(name)) for name in _ENCODED}
            layers, layer_at = encoded["layer"]
            sources, source_at = encoded["source_type"]
            tiers, tier_at = encoded["tier"]
            layer_codes = np.array([self._code(layer) for layer in layers], dtype=np.int32)
            shared = {name: _shared(pool, encoded[name][0]) for name in _POOLED}
        numbers = {
            name: table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
            for name in ("x", "y", "z", "timestamp", "confidence")
        }
        self._append_columns(
            ids=table.column("id").to_pylist(),
            texts=_expanded(shared["text"], encoded["text"][1]),
            x=numbers["x"],
            y=numbers["y"],
            z=numbers["z"],
            t=numbers["timestamp"],
            confidence=numbers["confidence"],
            layer_codes=layer_codes[layer_at],
            body=np.array([source == INTEROCEPTION for source in sources], dtype=bool)[source_at],
            tier_codes=np.array([_TIER_CODE[tier] for tier in tiers], dtype=np.int8)[tier_at],
            sources=_expanded(shared["source_type"], source_at),
            episodes=_expanded(shared["episode_id"], encoded["episode_id"][1]),
            metadata=_expanded(shared["metadata"], encoded["metadata"][1]),
        )

    def append(self, observations: Sequence[Observation], tier: Tier = "short_term") -> None:
        """Add observations just committed to the graph (with the tier they were stored with)."""
        if not observations:
            return
        with self._lock:
            pool = self._pool
            if len(pool) > _POOL_MAX:
                pool.clear()
            layer_codes = np.array([self._code(o.layer_name) for o in observations], dtype=np.int32)
            texts = _shared(pool, [o.text for o in observations])
            sources = _shared(pool, [o.source_type for o in observations])
            episodes = _shared(pool, [o.episode_id for o in observations])
            metadata = _shared(pool, [json.dumps(o.metadata) for o in observations])
        self._append_columns(
            ids=[o.id for o in observations],
            texts=texts,
            x=np.array([o.x for o in observations], dtype=np.float64),
            y=np.array([o.y for o in observations], dtype=np.float64),
            z=np.array([o.z for o in observations], dtype=np.float64),
            t=np.array([o.timestamp for o in observations], dtype=np.float64),
            confidence=np.array([o.confidence for o in observations], dtype=np.float64),
            layer_codes=layer_codes,
            body=np.array([source == INTEROCEPTION for source in sources], dtype=bool),
            tier_codes=np.full(len(observations), _TIER_CODE[tier], dtype=np.int8),
            sources=sources,
            episodes=episodes,
            metadata=metadata,
        )

    def set_tier(self, ids: Iterable[str], tier: str) -> None:
        """Record a tier change committed to the graph; archival also drops the text."""
        code = _TIER_CODE[tier]
        with self._lock:
            rows = [row for node_id in ids if (row := self._row.get(node_id)) is not None]
            if not rows:
                return
            # Copy on write: readers keep the tier column they took with their snapshot (a
            # snapshot used to copy the column instead: 1 MB per read at 1M rows).
            tiers = self._tier.copy()
            tiers[rows] = code
            self._tier = tiers
            self._version += 1
            if code == _ARCHIVED:
                for row in rows:
                    self._texts[row] = None
        if code == _ARCHIVED:
            with self._keyword_lock:  # rows not indexed yet are skipped when they are (no text)
                self._keywords.remove([row for row in rows if row < self._keyword_rows])

    # --- reads ---------------------------------------------------------------------------------

    def keywords(self) -> KeywordIndex:
        """The keyword index of every observation's text by row, brought up to date first
        (texts are indexed when a keyword search asks, not when written: writing and opening
        pay nothing for it; archived observations, whose text is gone, are left out)."""
        with self._keyword_lock:
            with self._lock:
                start, end = self._keyword_rows, self._n
            # In slices: a whole 1M-row build held a list of every row and text at once, and
            # what it freed stayed with the allocators (~70 MB at 1M, issue 23's 1M goal).
            memo: dict[str, Counter[str]] = {}
            for first in range(start, end, KEYWORD_BUILD_ROWS):
                last = min(end, first + KEYWORD_BUILD_ROWS)
                with self._lock:
                    texts = self._texts[first:last]
                self._keywords.add(range(first, last), texts, memo=memo)
                self._keyword_rows = last
            del memo
            if end - start >= KEYWORD_RELEASE_ROWS:
                release_free_memory()
            return self._keywords

    def id_of(self, row: int) -> str:
        """The id of the observation at index row ``row``."""
        return self._ids[row]

    def admitted(self, rows: np.ndarray, where: VectorFilter | None) -> np.ndarray:
        """A mask over ``rows`` (index rows): True where the observation passes ``where``,
        computed as VectorFilter.admits_row computes it (time is a point: t == t_end)."""
        snap = self._snapshot()  # rows come from keywords(): all below snap.n
        mask = np.ones(rows.shape[0], dtype=bool)
        if where is None or rows.shape[0] == 0:
            return mask
        if where.kinds is not None and "observation" not in where.kinds:
            return np.zeros(rows.shape[0], dtype=bool)
        tiers = snap.tier[rows]
        if where.tiers is not None:
            mask &= np.isin(tiers, [_TIER_CODE[t] for t in where.tiers if t in _TIER_CODE])
        if where.exclude_tiers:
            mask &= ~np.isin(tiers, [_TIER_CODE[t] for t in where.exclude_tiers if t in _TIER_CODE])
        if where.layers is not None:
            codes = [self._layer_code[name] for name in where.layers if name in self._layer_code]
            mask &= np.isin(snap.layer[rows], codes)
        if where.time_after is not None:
            mask &= snap.t[rows] >= where.time_after
        if where.time_before is not None:
            mask &= snap.t[rows] <= where.time_before
        xs, ys = snap.x[rows], snap.y[rows]
        if where.box is not None:
            xmin, xmax, ymin, ymax = where.box
            mask &= (xs >= xmin) & (xs <= xmax) & (ys >= ymin) & (ys <= ymax)
        if where.center is not None and where.radius is not None:
            cx, cy, r = float(where.center[0]), float(where.center[1]), float(where.radius)
            with np.errstate(over="ignore", invalid="ignore"):
                mask &= (xs - cx) * (xs - cx) + (ys - cy) * (ys - cy) <= r * r
        if where.source_types is None and set(where.exclude_source_types or ()) == {INTEROCEPTION}:
            # The perception filter: the body column says it for every row at once (a
            # source-type list per row cost 2 ms at 20k rows).
            mask &= ~snap.body[rows]
        elif where.source_types is not None or where.exclude_source_types:
            sources = np.array([self._sources[row] for row in rows.tolist()], dtype=object)
            if where.source_types is not None:
                mask &= np.isin(sources, list(where.source_types))
            if where.exclude_source_types:
                mask &= ~np.isin(sources, list(where.exclude_source_types))
        if where.episode_id is not None:
            mask &= np.array([self._episodes[row] == where.episode_id for row in rows.tolist()])
        return mask

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """The index rows of these observations (-1 for an id not in the index)."""
        with self._lock:
            return np.array([self._row.get(i, -1) for i in ids], dtype=np.int64)

    def times_of(self, ids: Sequence[str]) -> np.ndarray:
        """The timestamps of these observations (NaN for an id not in the index)."""
        with self._lock:
            rows = np.array([self._row.get(i, -1) for i in ids], dtype=np.int64)
            t = self._t[: self._n]
        found = np.full(rows.size, np.nan)
        known = rows >= 0
        found[known] = t[rows[known]]
        return found

    def count_since(self, time: float) -> int:
        """How many rows (archived ones too) are of ``time`` or later."""
        snap = self._snapshot()
        if snap.sorted:
            return snap.n - int(np.searchsorted(snap.t, time, side="left"))
        return int(np.count_nonzero(snap.t >= time))

    def within(self, x: float, y: float, radius: float) -> np.ndarray:
        """A mask over every row (archived ones too): True where the observation lies within
        ``radius`` of (x, y)."""
        snap = self._snapshot()
        inside: np.ndarray = _squared_distance(snap, x, y) <= radius * radius
        return inside

    def near(
        self,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
        include_body_state: bool = False,
        limit: int = 10,
    ) -> list[str]:
        """Ids of the ``limit`` observations (not archived) nearest (x, y) within ``radius``,
        nearest first (ties by id), as queries/observations_nearest.cypher ranks them."""
        if layer is not None and layer not in self._layer_code:
            return []
        snap = self._snapshot().window(time_after, time_before)
        filters = (layer, time_after, time_before, include_body_state)
        candidates = self._ring_candidates(snap, x, y, radius, limit, filters)
        if candidates is None:
            candidates = self._in_cells(snap, x, y, radius)
        if candidates is not None:
            snap = snap.take(candidates)
        rows, d2 = self._inside(snap, x, y, radius, filters)
        return [self._ids[row] for row, _ in self._ranked(snap.rows(rows), d2[rows], limit)]

    def in_window(
        self,
        *,
        time_after: float | None,
        time_before: float | None,
        layer: str | None = None,
        circle: tuple[float, float, float] | None = None,
        include_body_state: bool = False,
        newest_first: bool = True,
        limit: int = 10,
    ) -> list[str]:
        """Ids of observations (not archived) in a time window, optionally in a circle
        (x, y, radius) and a layer, newest or oldest first."""
        snap = self._snapshot().window(time_after, time_before)
        mask = self._filter(snap, layer, time_after, time_before, include_body_state)
        if mask is None:
            return []
        if circle is not None:
            cx, cy, radius = circle
            mask &= _squared_distance(snap, cx, cy) <= radius * radius
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        if snap.sorted and rows.size > limit:
            # Rows in time order: the newest (oldest) are at the end (start), with the rest
            # of the tie group at the cut, which the stable sort below orders by row.
            times = snap.t[rows]
            if newest_first:
                cut = int(np.searchsorted(times, times[rows.size - limit], side="left"))
                rows, times = rows[cut:], times[cut:]
            else:
                cut = int(np.searchsorted(times, times[limit - 1], side="right"))
                rows, times = rows[:cut], times[:cut]
        else:
            times = snap.t[rows]
        keys = -times if newest_first else times
        if rows.size > limit:
            part = np.argpartition(keys, limit - 1)[:limit]
            rows, keys = rows[part], keys[part]
        order = np.argsort(keys, kind="stable")
        return [self._ids[r + snap.offset] for r in rows[order].tolist()]

    def count_within(
        self,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
        include_body_state: bool = False,
    ) -> int:
        """How many observations (not archived) lie within ``radius`` of (x, y), in the layer
        and time window when given."""
        filters = (layer, time_after, time_before, include_body_state)
        return int(self._within(x, y, radius, filters).size)

    def rows_in_circle(self, x: float, y: float, radius: float) -> np.ndarray | None:
        """Every row of the whole index (ascending) within ``radius`` of (x, y), whatever its
        layer, time, tier or source, read from the grid cells the circle covers; None when
        those cells hold more than a quarter of the rows (a reader then does better another
        way). A superset for a filter that adds conditions (admitted() decides them)."""
        snap = self._snapshot()
        if snap.n == 0:
            return np.zeros(0, dtype=np.int64)
        local = self._in_cells(snap, x, y, radius)
        if local is None:
            return None
        part = snap.take(local)
        inside = np.flatnonzero(_squared_distance(part, x, y) <= radius * radius)
        return part.rows(inside).astype(np.int64, copy=False)

    def latest_within(
        self,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
    ) -> float | None:
        """The time of the latest observation (not archived, not a body state) within
        ``radius`` of (x, y), in the layer and time window when given; None when there is
        none. What tells that the robot looked at a place (an object's absence there)."""
        quick = self._latest_in_cells(x, y, radius, layer, time_after, time_before)
        if quick is not None:
            return quick[0]
        filters = (layer, time_after, time_before, False)
        snap = self._snapshot().window(time_after, time_before)
        candidates = self._in_cells(snap, x, y, radius)
        if candidates is not None:
            snap = snap.take(candidates)
        inside = self._inside(snap, x, y, radius, filters)[0]
        return float(snap.t[inside].max()) if inside.size else None

    def nearest_to_vector(
        self,
        query: np.ndarray,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
        include_body_state: bool = False,
        limit: int = 10,
    ) -> list[tuple[str, float]]:
        """The ``limit`` observations (not archived) within ``radius`` of (x, y) whose sketch
        vectors are most similar to ``query``: (id, similarity), best first (ties by id).
        Rows without a sketch vector are left out; nothing without a sketch."""
        sketch = self.sketch
        if sketch is None or limit < 1 or (layer is not None and layer not in self._layer_code):
            return []
        filters = (layer, time_after, time_before, include_body_state)
        # The last area's scores are kept until the next write to the index or the sketch:
        # semantic_search asks the same area again for more results when records of one
        # text share a line (a 1% area at 1M rows: 3-5 ms of scoring, twice).
        with self._lock:
            version = self._version
        key = (np.asarray(query).tobytes(), x, y, radius, filters, version, sketch.version)
        kept = self._nearest_kept
        if kept is not None and kept[0] == key and kept[1] is sketch:
            rows, keys = kept[2], kept[3]
        else:
            found = self._within(x, y, radius, filters)
            scores = sketch.scores(found, query)
            held = np.flatnonzero(~np.isnan(scores))
            rows, keys = found[held], -scores[held]
            self._nearest_kept = (key, sketch, rows, keys)
        ranked = self._ranked(rows, keys, limit)
        return [(self._ids[row], -key) for row, key in ranked]

    def latest_body_state(self, layers: Sequence[str] | None = None) -> list[str]:
        """Ids of the latest body-state reading that has text, one per layer, by layer name."""
        snap = self._snapshot()
        if layers:
            codes = [self._layer_code[name] for name in layers if name in self._layer_code]
        if snap.sorted:
            with self._lock:
                body_codes = set(self._body_codes)
            wanted = body_codes & set(codes) if layers else body_codes
            return self._latest_from_the_end(snap, wanted)
        mask = snap.body & (snap.tier != _ARCHIVED)
        if layers:
            mask &= np.isin(snap.layer, codes)
        latest: dict[int, int] = {}
        for row in np.flatnonzero(mask).tolist():
            code = int(snap.layer[row])
            best = latest.get(code)
            if best is None or snap.t[row] >= snap.t[best]:
                latest[code] = row
        by_name = sorted((self._layer_names[code], row) for code, row in latest.items())
        return [self._ids[row] for _, row in by_name]

    def _latest_from_the_end(self, snap: _Snapshot, wanted: set[int]) -> list[str]:
        """latest_body_state over rows in time order: the last readable row of each wanted
        layer is its latest (the later write among equal times, as the full pass picks),
        found by scanning back from the end in growing blocks."""
        latest: dict[int, int] = {}
        hi, block = snap.n, 4096
        while hi > 0 and len(latest) < len(wanted):
            lo = max(0, hi - block)
            missing = np.array(sorted(wanted - latest.keys()), dtype=snap.layer.dtype)
            layer = snap.layer[lo:hi]
            mask = snap.body[lo:hi] & (snap.tier[lo:hi] != _ARCHIVED) & np.isin(layer, missing)
            rows = np.flatnonzero(mask)[::-1]  # newest first
            codes, first = np.unique(layer[rows], return_index=True)
            for code, at in zip(codes.tolist(), first.tolist(), strict=True):
                latest[code] = lo + int(rows[at])
            hi, block = lo, block * 2
        by_name = sorted((self._layer_names[code], row) for code, row in latest.items())
        return [self._ids[row] for _, row in by_name]

    def latest_perception_position(self) -> np.ndarray | None:
        """Position [x, y, z] of the latest perception observation, or None."""
        snap = self._snapshot()
        rows = np.flatnonzero(~snap.body)
        if rows.size == 0:
            return None
        # Newest first (the later write first among equal times) until one is a perception:
        # planner notes do not move the robot.
        for row in rows[np.lexsort((-rows, -snap.t[rows]))].tolist():
            if self._sources[row] != AGENT_NOTE:
                return np.array([snap.x[row], snap.y[row], self._z[row]], dtype=np.float64)
        return None
        return np.array([snap.x[row], snap.y[row], self._z[row]], dtype=np.float64)

    def records(self, ids: Sequence[str]) -> dict[str, Observation]:
        """Observation records of the ids the index holds (new objects; unknown ids left out)."""
        found: dict[str, Observation] = {}
        with self._lock:
            for node_id in ids:
                row = self._row.get(node_id)
                if row is None or node_id in found:
                    continue
                metadata = self._metadata[row]
                found[node_id] = trusted(
                    Observation,
                    {
                        "id": node_id,
                        "text": self._texts[row] or "",
                        "x": float(self._x[row]),
                        "y": float(self._y[row]),
                        "z": float(self._z[row]),
                        "timestamp": float(self._t[row]),
                        "layer_name": self._layer_names[int(self._layer[row])],
                        "source_type": self._sources[row],
                        "confidence": float(self._confidence[row]),
                        "episode_id": self._episodes[row],
                        "metadata": metadata_of(metadata),
                        "tier": TIERS[int(self._tier[row])],
                    },
                )
        return found

    # --- internals -----------------------------------------------------------------------------

    def _ring_candidates(
        self,
        snap: _Snapshot,
        x: float,
        y: float,
        radius: float,
        limit: int,
        filters: tuple[str | None, float | None, float | None, bool],
    ) -> np.ndarray | None:
        """Rows of ``snap`` (sorted) that hold the ``limit`` nearest passing rows within
        ``radius``: the grid cells in rings around the point's cell, outwards, until ``limit``
        passing rows are nearer than anything in an unvisited cell can be, or the rings cover
        the circle. None when the grid does not pay (then _in_cells or every row).

        A nearest-10 read then looks at the point's cell and seldom its neighbours, where the
        circle's cells hold ten times as many rows when a floor is patrolled ten times as long
        (a 5 m read covers up to 121 cells)."""
        if snap.rows_of_whole is not None or snap.n == 0 or limit < 1:
            return None
        if not (math.isfinite(x) and math.isfinite(y)):  # no cell to start from: scan
            return None
        cx, cy = math.floor(x / CELL), math.floor(y / CELL)
        # Every row in a cell outside ring r is at least r * CELL + margin from (x, y).
        margin = min(x - cx * CELL, (cx + 1) * CELL - x, y - cy * CELL, (cy + 1) * CELL - y)
        lo = snap.offset
        parts: list[np.ndarray] = []
        ring = 0
        while True:
            if (2 * ring + 1) ** 2 > max(64, 4 * len(self._cells)):
                return None  # a sparse area and a wide circle: the cells do not pay
            with self._lock:
                parts.extend(self._cells.ring(cx, cy, ring))
            whole = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
            local = whole[(whole >= lo) & (whole < lo + snap.n)] - lo
            if local.size > _GRID_SHARE * snap.n:
                return None
            reach = ring * CELL + margin
            if reach >= radius:
                break  # the visited cells hold the whole circle
            if local.size >= limit:
                local.sort()
                rows, d2 = self._inside(snap.take(local), x, y, radius, filters)
                passing = d2[rows]
                if passing.size >= limit and np.partition(passing, limit - 1)[limit - 1] < (
                    reach * reach
                ):
                    break  # nothing unvisited can come nearer (or tie)
            ring += 1
        local.sort()
        return local

    def _ranked(self, rows: np.ndarray, keys: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` rows (of the whole index) with the smallest keys, as (row, key),
        smallest first, ties by id (near: squared distance; nearest_to_vector: -similarity)."""
        if rows.size > limit:
            # Only the rows up to the limit-th key (ties included) need the exact ranking.
            cut = np.partition(keys, limit - 1)[limit - 1]
            rows, keys = rows[keys <= cut], keys[keys <= cut]
        ranked = sorted(
            zip(rows.tolist(), keys.tolist(), strict=True),
            key=lambda pair: (pair[1], self._ids[pair[0]]),
        )
        return ranked[:limit]

    def _within(
        self,
        x: float,
        y: float,
        radius: float,
        filters: tuple[str | None, float | None, float | None, bool],
    ) -> np.ndarray:
        """Rows of the whole index (ascending) within ``radius`` of (x, y) that pass
        ``filters``, gathered from the grid cells the circle covers (count_within,
        nearest_to_vector)."""
        snap = self._snapshot().window(filters[1], filters[2])
        candidates = self._in_cells(snap, x, y, radius)
        if candidates is not None:
            snap = snap.take(candidates)
        return snap.rows(self._inside(snap, x, y, radius, filters)[0])

    def _inside(
        self,
        snap: _Snapshot,
        x: float,
        y: float,
        radius: float,
        filters: tuple[str | None, float | None, float | None, bool],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``snap`` that pass ``filters`` (layer, time_after, time_before,
        include_body_state; never archived) and lie within ``radius`` of (x, y), and the
        squared distance of every row of ``snap``."""
        d2 = _squared_distance(snap, x, y)
        mask = self._filter(snap, *filters)
        if mask is None:  # an unknown layer: nothing passes
            return np.empty(0, dtype=np.int64), d2
        return np.flatnonzero(mask & (d2 <= radius * radius)), d2

    def _cell_span(self, x: float, y: float, radius: float) -> tuple[int, int, int, int] | None:
        """The grid cells (x0, x1, y0, y1) a circle covers; None when the grid does not pay
        (more cells than max(64, the cells holding rows)) or the circle reaches infinity: the
        caller scans every row."""
        edges = ((x - radius) / CELL, (x + radius) / CELL, (y - radius) / CELL, (y + radius) / CELL)
        if not all(math.isfinite(edge) for edge in edges):
            return None
        x0, x1, y0, y1 = (math.floor(edge) for edge in edges)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > max(64, len(self._cells)):
            return None
        return x0, x1, y0, y1

    def _in_cells(self, snap: _Snapshot, x: float, y: float, radius: float) -> np.ndarray | None:
        """Rows of ``snap`` (sorted) in the grid cells a circle covers; None when they are too
        many for the grid to pay (then every row is scanned)."""
        if snap.rows_of_whole is not None or snap.n == 0:
            return None
        span = self._cell_span(x, y, radius)
        if span is None:
            return None
        with self._lock:
            parts = self._cells.covering(*span)
        if not parts:
            return np.empty(0, dtype=np.int64)
        whole = np.concatenate(parts)
        if whole.size > _GRID_SHARE * snap.n:
            return None
        lo = snap.offset
        local = whole[(whole >= lo) & (whole < lo + snap.n)] - lo
        local.sort()
        return local

    def _latest_in_cells(
        self,
        x: float,
        y: float,
        radius: float,
        layer: str | None,
        time_after: float | None,
        time_before: float | None,
    ) -> tuple[float | None] | None:
        """latest_within() from the rows of the grid cells the circle covers, gathered
        straight from the columns (no snapshot, window or sort: entity_query asks it for each
        entity it answers, ~10 a call; 30 -> ~10 us each). None when the grid does not pay
        (a circle over many cells, or cells holding a large share of the rows): the caller
        scans. Otherwise a one-tuple holding the answer (None: no look)."""
        span = self._cell_span(x, y, radius)
        if span is None:
            return None
        code = None
        with self._lock:
            n = self._n
            if n == 0:
                return None
            if layer is not None:
                code = self._layer_code.get(layer)
                if code is None:
                    return (None,)
            parts = self._cells.covering(*span)
            columns = (self._x, self._y, self._t, self._layer, self._body, self._tier)
        if not parts:
            return (None,)
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if rows.size > _GRID_SHARE * n:
            return None
        xs, ys, ts, layers, body, tier = columns
        t = ts[rows]
        keep = tier[rows] != _ARCHIVED
        if time_after is not None:
            keep &= t >= time_after
        if time_before is not None:
            keep &= t <= time_before
        keep &= ~body[rows]
        if code is not None:
            keep &= layers[rows] == code
        rows, t = rows[keep], t[keep]
        if not rows.size:
            return (None,)
        with np.errstate(over="ignore", invalid="ignore"):
            inside = (xs[rows] - x) ** 2 + (ys[rows] - y) ** 2 <= radius * radius
        return (float(t[inside].max()) if inside.any() else None,)

    def _snapshot(self) -> _Snapshot:
        with self._lock:
            n = self._n
            return _Snapshot(
                n,
                self._x[:n],
                self._y[:n],
                self._t[:n],
                self._layer[:n],
                self._body[:n],
                self._tier[:n],
                self._sorted,
            )

    def _filter(
        self,
        snap: _Snapshot,
        layer: str | None,
        time_after: float | None,
        time_before: float | None,
        include_body_state: bool,
    ) -> np.ndarray | None:
        mask = snap.tier != _ARCHIVED
        if layer is not None:
            code = self._layer_code.get(layer)
            if code is None:
                return None
            mask &= snap.layer == code
        if time_after is not None:
            mask &= snap.t >= time_after
        if time_before is not None:
            mask &= snap.t <= time_before
        if not include_body_state:
            mask &= ~snap.body
        return mask

    def _append_columns(
        self,
        *,
        ids: list[str],
        texts: list[Any],
        x: np.ndarray,
        y: np.ndarray,
        z: np.ndarray,
        t: np.ndarray,
        confidence: np.ndarray,
        layer_codes: np.ndarray,
        body: np.ndarray,
        tier_codes: np.ndarray,
        sources: list[Any],
        episodes: list[Any],
        metadata: list[Any],
    ) -> None:
        """Add rows whose strings are the pool's objects already (load and append share
        them) and whose layers and tiers are coded."""
        count = len(ids)
        with self._lock:
            start = self._n
            self._reserve(start + count)
            end = start + count
            self._x[start:end] = x
            self._y[start:end] = y
            self._z[start:end] = z
            self._t[start:end] = t
            self._confidence[start:end] = confidence
            self._layer[start:end] = layer_codes
            self._body[start:end] = body
            self._tier[start:end] = tier_codes
            if self._sorted and count:
                previous = self._t[start - 1] if start else -np.inf
                self._sorted = bool(t[0] >= previous and np.all(t[1:] >= t[:-1]))
            self._cells.add(start, x, y)
            self._body_codes.update(int(code) for code in np.unique(layer_codes[body]))
            self._ids.extend(ids)
            self._texts.extend(texts)
            self._sources.extend(sources)
            self._episodes.extend(episodes)
            self._metadata.extend(metadata)
            self._row.update(zip(ids, range(start, end), strict=True))
            self._n = end
            if count:
                self._latest = max(self._latest, float(np.max(t)))
            self._version += 1

    def _reserve(self, size: int) -> None:
        # Readers keep the arrays they took with their snapshot: growing makes new arrays and
        # never writes into an old one past a reader's n.
        capacity = self._x.shape[0]
        if size <= capacity:
            return
        capacity = max(size, 2 * capacity)
        for name in ("_x", "_y", "_z", "_t", "_confidence", "_layer", "_body", "_tier"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=old.dtype)
            new[: self._n] = old[: self._n]
            setattr(self, name, new)

    def _code(self, layer: str) -> int:
        code = self._layer_code.get(layer)
        if code is None:
            code = len(self._layer_names)
            self._layer_code[layer] = code
            self._layer_names.append(layer)
        return code


def _squared_distance(snap: _Snapshot, x: float, y: float) -> np.ndarray:
    """Squared distance of every row of ``snap`` to (x, y). Coordinates up to 1e308 are
    accepted: far apart, the square overflows to inf (never within a radius), quietly, as
    the graph's own arithmetic does."""
    with np.errstate(over="ignore", invalid="ignore"):
        d2: np.ndarray = (snap.x - x) ** 2 + (snap.y - y) ** 2
    return d2


_POOLED = ("text", "source_type", "episode_id", "metadata")
"""Columns whose values repeat: held as one Python object per distinct value (an index of
100k observations took 940 bytes of resident memory per observation, one string object per
row and column among them: issue 23's 1M goal)."""
_ENCODED = (*_POOLED, "layer", "tier")
"""Columns the index reads at open by their distinct values (see _encoded)."""
_POOL_MAX = 1 << 16
"""Distinct values the append pool holds before it starts over (unique texts, a dialogue's,
would otherwise keep every text twice over: the pool and the column share the objects, so
starting over only stops sharing with later rows)."""


def _shared(pool: dict[str, str], values: Iterable[str | None]) -> list[str | None]:
    """``values`` with each string replaced by the pool's object for it (added when new)."""
    return [value if value is None else pool.setdefault(value, value) for value in values]


def _encoded(column: pa.ChunkedArray) -> tuple[list[Any], np.ndarray]:
    """The column's distinct values as Python objects (None last when the column holds a
    null) and each row's position among them: only the distinct values are ever made into
    Python objects (a dictionary encoding)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    values: list[Any] = encoded.dictionary.to_pylist()
    indices = encoded.indices
    if indices.null_count:
        values.append(None)
        indices = indices.fill_null(len(values) - 1)
    return values, indices.to_numpy(zero_copy_only=False)


def _expanded(values: list[Any], at: np.ndarray) -> list[Any]:
    """Row by row: ``values[i]`` for each ``i`` of ``at``."""
    return [values[i] for i in at.tolist()]
