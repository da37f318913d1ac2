"""SharedTable: the fleet's LanceDB table of records (observations, gists, entities) with their
vectors and filter columns, written by every robot's push and read by FleetMemory. The only
module of the fleet that imports lancedb.

Each row is one version of one record of one robot: ``row_id`` is ``{robot}/{id}@{push}``. A
push only appends rows (appends from several robots commit side by side; LanceDB retries its
optimistic commits), and a row counts once the robot's manifest names its push (push.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import lancedb
import numpy as np
import pyarrow as pa

from emem_graph.fleet.location import FleetLocation, FleetStorageError

TABLE = "fleet_records"
COMMIT_TRIES = 8
"""A write that loses its commit race this many times in a row is reported."""

T = TypeVar("T")


def record_schema(dim: int) -> pa.Schema:
    """The shared table's columns for ``dim``-dimensional vectors."""
    return pa.schema(
        [
            ("row_id", pa.string()),
            ("key", pa.string()),
            ("robot", pa.string()),
            ("id", pa.string()),
            ("kind", pa.string()),
            ("text", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("x", pa.float64()),
            ("y", pa.float64()),
            ("z", pa.float64()),
            ("t", pa.float64()),
            ("t_end", pa.float64()),
            ("layer", pa.string()),
            ("source_type", pa.string()),
            ("tier", pa.string()),
            ("entity_type", pa.string()),
            ("count", pa.int64()),
            ("radius", pa.float64()),
            ("episode_id", pa.string()),
            ("push", pa.int64()),
        ]
    )


def sql_text(value: str) -> str:
    """A SQL string literal for a LanceDB filter (quotes doubled; LanceDB binds no
    parameters)."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Sequence[str]) -> str:
    """``column IN ('a', 'b')``."""
    return f"{column} IN ({', '.join(sql_text(v) for v in values)})"


class SharedTable:
    """The fleet's record table at ``location`` (absent until the first push creates it).

    Args:
        location: the fleet's root.
    """

    def __init__(self, location: FleetLocation) -> None:
        self.location = location
        self._db = _retrying(
            lambda: lancedb.connect(location.lance_uri, storage_options=location.lance_options)
        )
        self._table: Any = None

    def _open(self) -> Any:
        if self._table is None:
            try:
                self._table = self._db.open_table(TABLE)
            except (ValueError, FileNotFoundError):
                return None
            except OSError as exc:
                raise FleetStorageError(f"cannot open {self.location.lance_uri}: {exc}") from exc
        return self._table

    def ensure(self, dim: int) -> None:
        """Create the table for ``dim``-dimensional vectors unless it exists (several robots
        may race to create it: the losers open the winner's)."""
        if self._open() is not None:
            self._check_dim(dim)
            return
        try:
            self._table = self._db.create_table(TABLE, schema=record_schema(dim), exist_ok=True)
        except (ValueError, OSError, RuntimeError):
            self._table = None
            if self._open() is None:
                raise
        self._check_dim(dim)

    def _check_dim(self, dim: int) -> None:
        stored = self._table.schema.field("vector").type.list_size
        if stored != dim:
            raise FleetStorageError(
                f"the fleet at {self.location} holds {stored}-dimensional vectors, this memory "
                f"{dim}-dimensional ones: every robot of a fleet uses the same embedder"
            )

    @property
    def exists(self) -> bool:
        """Whether any push created the table yet."""
        return self._open() is not None

    @property
    def dim(self) -> int | None:
        """The vectors' dimension, None before the first push."""
        table = self._open()
        return None if table is None else int(table.schema.field("vector").type.list_size)

    def refresh(self) -> None:
        """See every commit made so far (by any process)."""
        table = self._open()
        if table is not None:
            _retrying(table.checkout_latest)

    def append(self, rows: pa.Table) -> None:
        """Append rows (one commit; retried when another writer committed first)."""
        if rows.num_rows:
            _retrying(lambda: self._table.add(rows.select(self._table.schema.names)))

    def delete(self, predicate: str) -> int:
        """Delete the rows ``predicate`` selects (one commit, retried like append; none when
        no row matches: a delete of nothing would still make a version). Returns how many."""
        table = self._open()
        found = self.count(predicate)
        if found:
            _retrying(lambda: table.delete(predicate))
        return found

    def scan(self, predicate: str, columns: Sequence[str]) -> pa.Table:
        """Every row ``predicate`` selects, with ``columns``."""
        table = self._open()
        if table is None:
            return record_schema(1).empty_table().select(list(columns))
        query = table.search().where(predicate).select(list(columns))
        return _retrying(lambda: query.limit(None).to_arrow())

    def search(
        self, vector: np.ndarray, predicate: str, limit: int, columns: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The ``limit`` rows nearest to ``vector`` (cosine) among those ``predicate`` selects
        (a prefilter), each with ``_distance``."""
        table = self._open()
        if table is None:
            return []
        query = (
            table.search(np.asarray(vector, dtype=np.float32))
            .distance_type("cosine")
            .where(predicate, prefilter=True)
            .select([*columns, "_distance"])
            .limit(limit)
        )
        return _retrying(query.to_list)

    def fragments(self) -> int:
        """How many data fragments the table has (each push's appends add some)."""
        table = self._open()
        return 0 if table is None else int(table.stats()["fragment_stats"]["num_fragments"])

    def compact(self) -> tuple[int, int]:
        """Merge the table's fragments (LanceDB's optimize; files of older versions are kept
        for LanceDB's default retention, so a reader on an older version keeps reading).
        Returns the fragments (before, after)."""
        table = self._open()
        if table is None:
            return 0, 0
        before = self.fragments()
        _retrying(table.optimize)
        return before, self.fragments()

    def count(self, predicate: str | None = None) -> int:
        """Rows in the table (that ``predicate`` selects)."""
        table = self._open()
        return 0 if table is None else int(_retrying(lambda: table.count_rows(predicate)))


def _retrying(action: Callable[[], T]) -> T:
    """Run a LanceDB call, again after a commit conflict or a dropped request (with backoff)."""
    for attempt in range(COMMIT_TRIES):
        try:
            return action()
        except (OSError, RuntimeError) as exc:
            if attempt == COMMIT_TRIES - 1:
                raise FleetStorageError(f"the fleet's vector table failed: {exc}") from exc
            time.sleep(min(2.0, 0.05 * 2**attempt))
    raise AssertionError("unreachable")
