"""The in-process copy of the vector table's gist and entity rows, and its searches.

A few thousand rows where observations are a million: VectorStore keeps them by id in process
(OtherRows), with their columns as arrays (OtherColumns) and a keyword index over their texts,
so that a gist or entity search does not make LanceDB skip every observation.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from emem_graph.filters import VectorFilter
from emem_graph.models import VectorHit
from emem_graph.storage.keyword_index import KeywordIndex
from emem_graph.storage.row_vectors import cosine, unit_query, unit_rows
from emem_graph.storage.vector_schema import VectorRow


class OtherRows:
    """The gist and entity rows of a VectorStore by id (``by_id``), vectors as stored, kept
    in step with its committed writes; their columns and keyword index are rebuilt after a
    change. One lock guards them (the writer changes them, searches read them)."""

    def __init__(self, rows: dict[str, VectorRow]) -> None:
        self.by_id = rows
        self._lock = threading.Lock()
        self._columns: OtherColumns | None = None
        """The rows of by_id (sorted by id) with their columns as arrays, rebuilt after a
        change."""
        self._keywords: tuple[KeywordIndex, OtherColumns] | None = None
        """A keyword index of the texts of those rows, by position, with them."""

    def set_tier(self, ids: Sequence[str], tier: str) -> None:
        """Follow a committed change of these rows' tier (absent ids are ignored)."""
        with self._lock:
            for node_id in ids:
                if (row := self.by_id.get(node_id)) is not None:
                    self.by_id[node_id] = replace(row, tier=tier)
                    self._columns = None
                    self._keywords = None

    def follow(
        self, rows: Sequence[VectorRow], stored: np.ndarray | None, deleted: Sequence[str]
    ) -> None:
        """Follow a committed write: the gist and entity ``rows`` with their ``stored``
        vectors, the ``deleted`` ids."""
        with self._lock:
            # Observation appends (every flush) leave the gist and entity copies as they are:
            # their arrays and keyword index are rebuilt only when one of those rows changed.
            changed = False
            if stored is not None:
                for at, row in enumerate(rows):
                    if row.kind != "observation":
                        self.by_id[row.id] = replace(row, vector=stored[at])
                        changed = True
            for node_id in deleted:
                changed = self.by_id.pop(node_id, None) is not None or changed
            if changed:
                self._columns = None
                self._keywords = None

    def nearest(self, query: np.ndarray, n: int, where: VectorFilter) -> list[VectorHit]:
        """The ``n`` rows passing ``where`` nearest the float32 ``query`` by cosine
        similarity, best first (ties by id)."""
        with self._lock:
            columns = self._columns_now()
        listed = columns.rows
        near = columns.kinds_and_circle(where)
        chosen = [at for at in np.flatnonzero(near).tolist() if where.admits_row(listed[at])]
        if not chosen or n < 1:
            return []
        chosen = [at for at in chosen if columns.usable[at]]
        scores = cosine(columns.units[chosen], unit_query(query))
        ranked = sorted(
            (
                (float(score), listed[at].id, listed[at].kind)
                for score, at in zip(scores.tolist(), chosen, strict=True)
                if math.isfinite(score)
            ),
            key=lambda hit: (-hit[0], hit[1]),
        )
        return [VectorHit(id=i, kind=kind, score=score) for score, i, kind in ranked[:n]]

    def keyword_index(self) -> tuple[KeywordIndex, OtherColumns]:
        """A keyword index over the rows' texts, by position in the rows' columns (sorted by
        id) it comes with."""
        with self._lock:
            columns = self._columns_now()
            kept = self._keywords
            if kept is None or kept[1] is not columns:
                index = KeywordIndex()
                index.add(range(len(columns.rows)), [row.text for row in columns.rows])
                kept = self._keywords = (index, columns)
            return kept

    def _columns_now(self) -> OtherColumns:
        """The rows' columns (the caller holds the lock)."""
        if self._columns is None:
            self._columns = OtherColumns.of(sorted(self.by_id.values(), key=lambda row: row.id))
        return self._columns


@dataclass(frozen=True)
class OtherColumns:
    """The gist and entity rows of a VectorStore (sorted by id) with their columns as arrays:
    kinds, x, y, the vectors as float32 unit rows (row_vectors.unit_rows: scored as every dense
    search scores) and whether each is usable (norm neither 0 nor infinite)."""

    rows: list[VectorRow]
    kinds: np.ndarray
    xs: np.ndarray
    ys: np.ndarray
    units: np.ndarray
    usable: np.ndarray
    kind_masks: dict[tuple[str, ...] | None, np.ndarray] = field(default_factory=dict)
    """of_kinds' masks by the kinds asked (a filter names one or two kinds)."""

    def of_kinds(self, kinds: Sequence[str] | None) -> np.ndarray:
        """A new mask of the rows of these kinds (all rows: None)."""
        key = None if kinds is None else tuple(kinds)
        mask = self.kind_masks.get(key)
        if mask is None:
            if key is None:
                mask = np.ones(len(self.rows), dtype=bool)
            else:
                mask = np.isin(self.kinds, list(key))
            if len(self.kind_masks) < 16:
                self.kind_masks[key] = mask
        return mask.copy()

    def kinds_and_circle(self, where: VectorFilter) -> np.ndarray:
        """A new mask of the rows passing the filter's kinds and circle, the circle as
        VectorFilter.in_circle computes it, for every row at once (a row without a place, NaN
        here, fails it as it does there): the rest of the filter is asked row by row of the
        few left (OtherRows.nearest, MemoryStore.keyword_hits)."""
        near = self.of_kinds(where.kinds)
        if where.center is not None and where.radius is not None:
            xs, ys = self.xs, self.ys
            cx, cy, r = float(where.center[0]), float(where.center[1]), float(where.radius)
            with np.errstate(invalid="ignore", over="ignore"):
                near &= (xs - cx) * (xs - cx) + (ys - cy) * (ys - cy) <= r * r
        return near

    @staticmethod
    def of(rows: list[VectorRow]) -> OtherColumns:
        if rows:
            matrix = np.stack([np.asarray(row.vector, dtype=np.float32) for row in rows])
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        units, usable = unit_rows(matrix)
        return OtherColumns(
            rows=rows,
            kinds=np.array([row.kind for row in rows], dtype=object),
            xs=np.array([row.x for row in rows], dtype=np.float64),
            ys=np.array([row.y for row in rows], dtype=np.float64),
            units=units,
            usable=usable,
        )
