"""SharedTable: the fleet's LanceDB table of records (observations, gists, entities) with their
vectors and filter columns, written by every robot's push and read by FleetMemory. The only
module of the fleet that imports lancedb.

Each row is one version of one record of one robot: ``row_id`` is ``{robot}/{id}@{push}``. A
push only appends rows (appends from several robots commit side by side; LanceDB retries its
optimistic commits), and a row counts once the robot's manifest names its push (push.py).

Robots pushing their first pushes at once race to create the table, and LanceDB's create is
not exclusive. Measured with lancedb 0.40 (Lance 13) on a directory and on moto's S3 (see
tests/test_fleet.py): a create whose "does it exist?" check ran before another robot's create
committed does not fail; it commits as an *Overwrite* on top of whatever landed meanwhile (the
other's create, and appends already committed to it), and that version holds none of their
rows. An Overwrite commits over any concurrent transaction; an Append, a Delete or a compaction
that started before it is refused ("incompatible with concurrent transaction Overwrite") and
would be refused forever on the same table handle. So:

- every write is retried on the table's latest version (``checkout_latest`` between tries);
- a robot whose create committed at a version past 1 knows it raced: it reads the version just
  before its own (older versions' files stay; only a compaction's cleanup removes them, after
  7 days) and appends again every row of it that the latest version lacks (by ``row_id``, and
  not when the latest version holds a newer push of the same record, ``key``), retried like
  any append. If several creates raced, each repairs what the one before it covered, so the
  rows of every version before the last create are in the latest one. If the earlier table
  had another vector dimension, the robot restores that version instead and is refused, as a
  robot with another embedder always is.

LanceDB is the only arbiter here: pyarrow's S3 file system has no conditional put, so no lock
or "create once" marker of our own can be made safe. LanceDB itself commits each version with
S3's conditional put (``If-None-Match: *``), which S3 makes atomic; a stand-in for S3 must too
(moto's is not, and lost rows there: evals/moto_s3.py). What stays open: a robot killed between
its racing create and the end of its repair (a few requests) leaves the rows it would have
appended again out of the latest version; and a row another robot deleted inside that window
(only possible for a robot that finished a whole push, or cut one and pushed again, in it) can
come back.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import lancedb
import numpy as np
import pyarrow as pa

from emem_graph.fleet.location import FleetLocation, FleetStorageError
from emem_graph.storage.vectors import ann_index_config, nearest_rows

TABLE = "fleet_records"
ANN_MIN_ROWS = 50_000
"""Rows from which ``compact`` builds an ANN index on the vectors (IVF_RQ, as a robot's own
memory does: storage/vectors.py); below it a search scans every row it passes."""
SCALAR_INDEXES = {
    "x": "BTREE",
    "y": "BTREE",
    "t": "BTREE",
    "push": "BTREE",
    "robot": "BITMAP",
    "kind": "BITMAP",
}
"""The columns fleet searches filter on (robot and push: which rows are visible; kind, x, y,
t: the tools' filters), indexed from ANN_MIN_ROWS rows as a robot's own table is."""
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
        self._connection: Any = None
        self._table: Any = None
        self._pin = False
        self._opened = False

    @property
    def _db(self) -> Any:
        # Connected at first use: on a local path LanceDB's connect creates the folder, and a
        # reader of a location nothing was pushed to must leave it as it is.
        if self._connection is None:
            where = self.location
            self._connection = _retrying(
                lambda: lancedb.connect(where.lance_uri, storage_options=where.lance_options)
            )
        return self._connection

    @_db.setter
    def _db(self, connection: Any) -> None:
        self._connection = connection

    def _open(self) -> Any:
        if self._table is None and not (self._pin and self._opened):
            # A pinned handle looks once: a table created after it was pinned stays unseen.
            self._opened = True
            if not self.location.is_s3 and not Path(self.location.lance_uri).is_dir():
                return None  # nothing pushed yet (and nothing to create by looking)
            try:
                self._table = self._db.open_table(TABLE)
            except (ValueError, FileNotFoundError):
                return None
            except OSError as exc:
                raise FleetStorageError(f"cannot open {self.location.lance_uri}: {exc}") from exc
        return self._table

    def ensure(self, dim: int) -> None:
        """Create the table for ``dim``-dimensional vectors unless it exists. Several robots
        may race to create it: one whose create LanceDB reports as existing opens it; one
        whose create committed after another's puts back the rows its create hid (see the
        module's docstring)."""
        if self._open() is not None:
            self._check_dim(dim)
            return
        try:
            created = self._db.create_table(TABLE, schema=record_schema(dim))
        except (ValueError, OSError, RuntimeError):
            self._table = None
            if self._open() is None:
                raise
        else:
            self._table = created
            version = int(created.version)
            if version > 1:
                self._restore_before(version, dim)
        self._check_dim(dim)

    def _restore_before(self, version: int, dim: int) -> None:
        """This robot's create committed as ``version`` on top of earlier versions (it raced
        another create): append again the rows of ``version - 1`` that the latest version
        lacks, or restore ``version - 1`` when its vectors have another dimension."""
        before = _retrying(lambda: self._db.open_table(TABLE))
        _retrying(lambda: before.checkout(version - 1))
        if int(before.schema.field("vector").type.list_size) != dim:
            _retrying(lambda: self._table.restore(version - 1), self._latest)
            _retrying(self._latest)
            return
        rows = _retrying(lambda: before.search().limit(None).to_arrow())
        if not rows.num_rows:
            return
        _retrying(self._latest)
        present = _retrying(
            lambda: self._table.search().select(["row_id", "key", "push"]).limit(None).to_arrow()
        )
        newest: dict[str, int] = {}
        for key, push in zip(
            present.column("key").to_pylist(), present.column("push").to_pylist(), strict=True
        ):
            newest[key] = max(push, newest.get(key, push))
        held = set(present.column("row_id").to_pylist())
        keep = [
            row_id not in held and newest.get(key, push) <= push
            for row_id, key, push in zip(
                rows.column("row_id").to_pylist(),
                rows.column("key").to_pylist(),
                rows.column("push").to_pylist(),
                strict=True,
            )
        ]
        self.append(rows.filter(pa.array(keep, pa.bool_())))

    def _latest(self) -> None:
        """Move the table handle to the latest version (before a write is tried again)."""
        if self._table is not None:
            self._table.checkout_latest()

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

    def pinned(self) -> SharedTable:
        """A handle on the table's latest version that stays on it (a later commit by any
        process is not seen through it), sharing this handle's connection. A reader pins the
        table first and reads the robots' manifests after: every row those manifests name is
        in the pinned version, since a push deletes its superseded rows only after its
        manifest names the push that replaces them."""
        view = SharedTable(self.location)
        view._connection = self._connection
        view._pin = True
        view._open()
        if self._connection is None:
            self._connection = view._connection
        return view

    def refresh(self) -> None:
        """See every commit made so far (by any process)."""
        table = self._open()
        if table is not None:
            _retrying(table.checkout_latest)

    def append(self, rows: pa.Table) -> None:
        """Append rows (one commit; retried on the latest version when another writer
        committed first)."""
        if rows.num_rows:
            _retrying(lambda: self._table.add(rows.select(self._table.schema.names)), self._latest)

    def delete(self, predicate: str) -> int:
        """Delete the rows ``predicate`` selects (one commit, retried like append; none when
        no row matches: a delete of nothing would still make a version). Returns how many."""
        table = self._open()
        found = self.count(predicate)
        if found:
            _retrying(lambda: table.delete(predicate), self._latest)
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
        # Through the index when there is one (rows appended since it was built are scanned
        # beside it by LanceDB), as a robot's own memory asks (storage/vectors.py).
        probed = self.indexed_rows() > 0
        found = _retrying(
            lambda: nearest_rows(
                table,
                np.asarray(vector, dtype=np.float32),
                predicate,
                limit,
                [*columns, "_distance"],
                probed=probed,
                bypass_index=False,
            )
        )
        rows: list[dict[str, Any]] = found.to_pylist()
        return rows

    def indexed_rows(self) -> int:
        """Rows the vector index covers (0: no index; searches scan every row)."""
        table = self._open()
        if table is None:
            return 0
        names = [i.name for i in _retrying(table.list_indices) if tuple(i.columns) == ("vector",)]
        if not names:
            return 0
        stats = _retrying(lambda: table.index_stats(names[0]))
        return int(getattr(stats, "num_indexed_rows", 0) or 0)

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
        _retrying(table.optimize, self._latest)
        after = self.fragments()
        self.index_vectors()
        self.index_columns()
        return before, after

    def index_columns(self, min_rows: int | None = None) -> list[str]:
        """Build the scalar indexes of the columns searches filter on (BTREE on x, y, t and
        push; BITMAP on robot and kind), once the table holds ``min_rows`` rows
        (ANN_MIN_ROWS), each the first time: ``compact``'s optimize brings them up to date
        afterwards. Returns the columns indexed."""
        table = self._open()
        if table is None or self.count() < (ANN_MIN_ROWS if min_rows is None else min_rows):
            return self._indexed_columns()
        for column in SCALAR_INDEXES:
            if column not in self._indexed_columns():
                _retrying(functools.partial(self._index_column, table, column), self._latest)
        return self._indexed_columns()

    @staticmethod
    def _index_column(table: Any, column: str) -> None:
        table.create_scalar_index(column, index_type=SCALAR_INDEXES[column], replace=True)

    def _indexed_columns(self) -> list[str]:
        table = self._open()
        if table is None:
            return []
        indices = _retrying(table.list_indices)
        return sorted(c for i in indices for c in i.columns if c in SCALAR_INDEXES)

    def index_vectors(self, min_rows: int | None = None) -> int:
        """Build (or rebuild, when a tenth of the rows or more are not in it) the ANN index
        of the vectors once the table holds ``min_rows`` rows (ANN_MIN_ROWS); a fleet of
        10 robots of 100k observations is searched through it instead of a scan of 1M rows.
        Returns the rows the index covers (0: none)."""
        table = self._open()
        if table is None:
            return 0
        rows = self.count()
        covered = self.indexed_rows()
        if rows < (ANN_MIN_ROWS if min_rows is None else min_rows) or covered * 10 >= rows * 9:
            return covered
        # With a config, LanceDB 0.40 reads the first argument as the column (see
        # storage/vectors.py).
        _retrying(
            lambda: table.create_index(
                "vector",
                config=ann_index_config(int(table.schema.field("vector").type.list_size)),
                replace=True,
            ),
            self._latest,
        )
        return self.indexed_rows()

    def count(self, predicate: str | None = None) -> int:
        """Rows in the table (that ``predicate`` selects)."""
        table = self._open()
        return 0 if table is None else int(_retrying(lambda: table.count_rows(predicate)))


def _retrying(action: Callable[[], T], before_retry: Callable[[], None] | None = None) -> T:
    """Run a LanceDB call, again after a commit conflict or a dropped request (with backoff;
    ``before_retry`` first, for a write: a conflict with an Overwrite is never resolved on
    the version the write started from)."""
    for attempt in range(COMMIT_TRIES):
        try:
            return action()
        except (OSError, RuntimeError) as exc:
            if attempt == COMMIT_TRIES - 1:
                raise FleetStorageError(f"the fleet's vector table failed: {exc}") from exc
            time.sleep(min(2.0, 0.05 * 2**attempt))
            if before_retry is not None:
                # On a failure here the next try fails the same way, or reaches the store.
                with contextlib.suppress(OSError, RuntimeError):
                    before_retry()
    raise AssertionError("unreachable")
