"""ObservationColumns: every observation's columns in process memory, as the store's committed
writes fill them (rows appended by the flush, loaded from the graph on open, tier changes and
archival from GraphChanges), and read back by id or row (records, times, a filter's verdict).
ObservationIndex (storage/observation_index.py) adds the area and time reads on them.

Columns whose values repeat (texts, source types, episode ids, metadata) hold one Python object
per distinct value. Numeric columns live in NumPy arrays that grow by new arrays, never by
writing into one a reader holds: a read takes them without copying (ObservationSnapshot).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.filters import VectorFilter
from emem_graph.models import INTEROCEPTION, Observation, Tier, trusted
from emem_graph.storage.cell_grid import CellGrid
from emem_graph.storage.keyword_index import KeywordIndex
from emem_graph.storage.observation_snapshot import ObservationSnapshot
from emem_graph.storage.records import metadata_of

TIERS: tuple[Tier, ...] = ("working", "short_term", "long_term", "archived")
TIER_CODE: dict[str, int] = {tier: code for code, tier in enumerate(TIERS)}
ARCHIVED_CODE = TIER_CODE["archived"]
_INITIAL_CAPACITY = 1024


class ObservationColumns:
    """Observation columns in memory, written by the store's one writer after each graph commit
    and read by many threads: the rows, their ids and records. Thread-safe."""

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
        """Rows [0, _keyword_rows) are in _keywords (indexed when a keyword search asks:
        ObservationIndex.keywords)."""
        self._keyword_lock = threading.Lock()
        self._version = 0
        """Changes with every write (rows added, a tier changed): reads keyed by it hold
        until the next write."""
        self._latest = -np.inf
        """The latest observation time of any row."""

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
            tier_codes=np.array([TIER_CODE[tier] for tier in tiers], dtype=np.int8)[tier_at],
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
            tier_codes=np.full(len(observations), TIER_CODE[tier], dtype=np.int8),
            sources=sources,
            episodes=episodes,
            metadata=metadata,
        )

    def set_tier(self, ids: Iterable[str], tier: str) -> None:
        """Record a tier change committed to the graph; archival also drops the text."""
        code = TIER_CODE[tier]
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
            if code == ARCHIVED_CODE:
                for row in rows:
                    self._texts[row] = None
        if code == ARCHIVED_CODE:
            with self._keyword_lock:  # rows not indexed yet are skipped when they are (no text)
                self._keywords.remove([row for row in rows if row < self._keyword_rows])

    # --- reads by id or row -------------------------------------------------------------------

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
            mask &= np.isin(tiers, [TIER_CODE[t] for t in where.tiers if t in TIER_CODE])
        if where.exclude_tiers:
            mask &= ~np.isin(tiers, [TIER_CODE[t] for t in where.exclude_tiers if t in TIER_CODE])
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

    def _snapshot(self) -> ObservationSnapshot:
        with self._lock:
            n = self._n
            return ObservationSnapshot(
                n,
                self._x[:n],
                self._y[:n],
                self._t[:n],
                self._layer[:n],
                self._body[:n],
                self._tier[:n],
                self._sorted,
            )

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


_POOLED = ("text", "source_type", "episode_id", "metadata")
"""Columns whose values repeat: held as one Python object per distinct value (an index of
100k observations took 940 bytes of resident memory per observation, one string object per
row and column among them)."""
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
