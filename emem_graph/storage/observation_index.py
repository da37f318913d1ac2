"""ObservationIndex: the area, time-window and latest-reading reads on every observation's
columns in process memory (the columns and their writes: storage/observation_columns.py).

Kuzu has no secondary indexes: a filter on x, y or timestamp scans the column, and on this
machine every statement costs ~1 ms before it reads a row and ~1 ms per node hydrated by primary
key, so an area or time-window tool took 15-30 ms at 20k observations. STORAGE-FACTS measured an
in-process index 30-100x faster than a column scan. This one holds the Observation table's
columns (no vectors) in NumPy arrays and lists, is rebuilt from the graph on open, and follows
every committed write: appends from the flush, tier changes and archival from GraphChanges. The
graph stays the source of truth; the index is never written to disk.

A read works on the columns as they were when it began (storage/observation_snapshot.py); area
reads gather their candidate rows from a grid of cells (storage/cell_grid.py).

Memory: about 150 bytes per observation plus its text (~250 MB at 1M observations), and the
vector sketch (storage/sketch.py) when the store keeps one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from emem_graph.models import AGENT_NOTE
from emem_graph.storage.cell_grid import CELL
from emem_graph.storage.keyword_index import KeywordIndex
from emem_graph.storage.observation_columns import ARCHIVED_CODE, ObservationColumns
from emem_graph.storage.observation_snapshot import ObservationSnapshot, squared_distance
from emem_graph.storage.release import release_free_memory
from emem_graph.storage.sketch import VectorSketch

KEYWORD_BUILD_ROWS = 1 << 18
"""Rows the keyword index takes in one add() while it catches up (a first search after an open)."""
KEYWORD_RELEASE_ROWS = 1 << 17
"""A catch-up of at least this many rows gives the allocators' free pages back after it."""
_GRID_SHARE = 0.25
"""An area read whose cells hold more than this share of all rows scans every row instead."""


class ObservationIndex(ObservationColumns):
    """Observation columns in memory: area, time-window and latest-reading lookups, and records
    by id, without a graph statement. Thread-safe: one writer (the store's), many readers."""

    def __init__(self) -> None:
        super().__init__()
        self._nearest_kept: tuple[tuple[Any, ...], VectorSketch, np.ndarray, np.ndarray] | None = (
            None
        )
        """nearest_to_vector's last area: (its question with the index's and the sketch's
        versions, the sketch, the rows with a vector, their negated scores)."""
        self.sketch: VectorSketch | None = None
        """int8 copies of the observation vectors by row (MemoryStore fills it when the
        area sketch is on); None when off."""

    # --- reads ---------------------------------------------------------------------------------

    def keywords(self) -> KeywordIndex:
        """The keyword index of every observation's text by row, brought up to date first
        (texts are indexed when a keyword search asks, not when written: writing and opening
        pay nothing for it; archived observations, whose text is gone, are left out)."""
        with self._keyword_lock:
            with self._lock:
                start, end = self._keyword_rows, self._n
            # In slices: a whole 1M-row build held a list of every row and text at once, and
            # what it freed stayed with the allocators (~70 MB at 1M).
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
        inside: np.ndarray = squared_distance(snap, x, y) <= radius * radius
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
            mask &= squared_distance(snap, cx, cy) <= radius * radius
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        if snap.sorted and rows.size > limit:
            # Rows in time order: the newest (oldest) are at the end (start), with the rest
            # of the tie group at the cut, which the sort below orders by id.
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
        if rows.size > limit:  # the best ``limit`` keys with the whole tie group at the cut
            keep = keys <= np.partition(keys, limit - 1)[limit - 1]
            rows, keys = rows[keep], keys[keep]
        # Rows of one time by id, as the graph's query orders them: row order differs
        # between a memory written and the same memory reopened (rows load in time order).
        ids = [self._ids[r + snap.offset] for r in rows.tolist()]
        order = sorted(range(len(ids)), key=lambda i: (keys[i], ids[i]))
        return [ids[i] for i in order[:limit]]

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
        inside = np.flatnonzero(squared_distance(part, x, y) <= radius * radius)
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
        mask = snap.body & (snap.tier != ARCHIVED_CODE)
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

    def _latest_from_the_end(self, snap: ObservationSnapshot, wanted: set[int]) -> list[str]:
        """latest_body_state over rows in time order: the last readable row of each wanted
        layer is its latest (the later write among equal times, as the full pass picks),
        found by scanning back from the end in growing blocks."""
        latest: dict[int, int] = {}
        hi, block = snap.n, 4096
        while hi > 0 and len(latest) < len(wanted):
            lo = max(0, hi - block)
            missing = np.array(sorted(wanted - latest.keys()), dtype=snap.layer.dtype)
            layer = snap.layer[lo:hi]
            mask = snap.body[lo:hi] & (snap.tier[lo:hi] != ARCHIVED_CODE) & np.isin(layer, missing)
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

    # --- internals -----------------------------------------------------------------------------

    def _ring_candidates(
        self,
        snap: ObservationSnapshot,
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
        snap: ObservationSnapshot,
        x: float,
        y: float,
        radius: float,
        filters: tuple[str | None, float | None, float | None, bool],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``snap`` that pass ``filters`` (layer, time_after, time_before,
        include_body_state; never archived) and lie within ``radius`` of (x, y), and the
        squared distance of every row of ``snap``."""
        d2 = squared_distance(snap, x, y)
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

    def _in_cells(
        self, snap: ObservationSnapshot, x: float, y: float, radius: float
    ) -> np.ndarray | None:
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
        keep = tier[rows] != ARCHIVED_CODE
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

    def _filter(
        self,
        snap: ObservationSnapshot,
        layer: str | None,
        time_after: float | None,
        time_before: float | None,
        include_body_state: bool,
    ) -> np.ndarray | None:
        mask = snap.tier != ARCHIVED_CODE
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
