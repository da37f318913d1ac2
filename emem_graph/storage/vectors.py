"""VectorStore: LanceDB vectors with prefilter columns. The only module that imports lancedb.

One table holds the vectors of observations, gists and entities with the columns a search is
prefiltered by (kind, position, time span, layer, source type, episode, tier) and the text for
keyword search. Filters are SQL strings built here from typed values only (LanceDB has no
parameter binding): numbers are checked finite and strings quoted, never pasted.

What needs no LanceDB lives beside it: the row and its Arrow schema (vector_schema.py), the
index settings (vector_index_policy.py), the copy of the gist and entity rows kept in process
(other_rows.py), filters finished in process (filter_narrowing.py), the in-process rescoring
of a search (rescoring.py) and the telling apart of Lance's failures (lance_failures.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Generator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.background_loop import LOOP
from lancedb.index import IvfRq, IvfSq
from lancedb.table import AsyncTable

from emem_graph.errors import (
    EmbeddingDimensionError,
    InvalidInputError,
    StorageError,
    VectorStoreDamagedError,
)
from emem_graph.filters import VectorFilter, sql_in, sql_quote
from emem_graph.models import NodeKind, VectorHit
from emem_graph.storage import probe
from emem_graph.storage.filter_narrowing import narrowed
from emem_graph.storage.health import report_damage
from emem_graph.storage.keyword_index import KeywordIndex
from emem_graph.storage.lance_failures import damaged, lance_failed, panicked
from emem_graph.storage.other_rows import OtherColumns, OtherRows
from emem_graph.storage.rescoring import RESCORE_MARGIN, rescored_hits, tie_reaches_the_end
from emem_graph.storage.rwlock import ReadWriteLock
from emem_graph.storage.vector_index_policy import (
    ANN_BITS,
    ANN_MAX_SEGMENTS,
    ANN_NPROBES,
    ANN_REFINE,
    ANN_TRAIN_SHARE,
    EXACT_SEARCH_MAX_ROWS,
    REWRITE_COMPACT_ROWS,
    SCALAR_INDEXES,
)
from emem_graph.storage.vector_schema import (
    VECTOR_TYPES,
    VectorRow,
    rows_by_id,
    rows_to_arrow,
    stored_vectors,
    vector_schema,
)

log = logging.getLogger(__name__)

# index_stats() (how many rows the ANN index covers) warns on stderr at every call unless told
# whether to include the IVF centroids; the store needs only the row count.
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")

TABLE = "memory_vectors"
FULL_SCAN_BATCH = 16_384
"""Rows per batch of the whole-table read of an unsealed table's check (bounded memory)."""


class ClosedTable:
    """Stands for the table after release(): any use is a clear StorageError."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def __getattr__(self, name: str) -> Any:
        raise StorageError(f"the vector table at {self._path} is closed")


class VectorStore:
    """The LanceDB table of vectors: append, upsert, delete, prefiltered and keyword search.

    Writes come from the store's single writer. Every append is a LanceDB commit (a version and a
    fragment), so after ``compact_every`` commits the table is optimised: fragments merged,
    indexes brought up to date, versions older than ``cleanup_after`` deleted.
    """

    def __init__(
        self,
        path: Path,
        dim: int,
        *,
        compact_every: int = 50,
        cleanup_after: timedelta = timedelta(seconds=10),
        ann_min_rows: int = 50_000,
        ann_reindex_growth: float = 1.0,
        vector_dtype: str = "float16",
        read_only: bool = False,
        index_cache_mb: int = 192,
        metadata_cache_mb: int = 48,
    ) -> None:
        self.read_only = read_only
        self._cache_bytes = (index_cache_mb << 20, metadata_cache_mb << 20)
        """LanceDB's index and metadata cache bounds (MemoryConfig.vector_*_cache_mb)."""
        """Only read the table: a missing one is not created, a damaged full-text index not
        rebuilt (MemoryStore's read-only open never calls the writes)."""
        if vector_dtype not in VECTOR_TYPES:
            raise InvalidInputError(
                f"vector_dtype must be one of {sorted(VECTOR_TYPES)}, got {vector_dtype!r}"
            )
        self.path = path
        self.dim = dim
        self.compact_every = compact_every
        self.cleanup_after = cleanup_after
        self.ann_min_rows = ann_min_rows
        self.ann_reindex_growth = ann_reindex_growth
        self._lock = ReadWriteLock()
        self._compact_lock = threading.Lock()
        self._training: threading.Thread | None = None
        self._commits_since_compaction = 0
        self._rewritten_since_compaction = 0
        self._compacted_at = time.monotonic()
        self._schema = vector_schema(dim, VECTOR_TYPES[vector_dtype])
        # Lance kills the process on some damage (a Rust allocation failure aborts): a table
        # not sealed by a clean close is opened and searched in a child process first.
        unsealed = path.exists() and not probe.is_sealed(path)
        self._damage_seen = False
        """A search found the table unreadable: close leaves it unsealed (checked whole at the
        next open, and rebuilt from the graph)."""
        if unsealed:
            log.debug("opening %s in a child process first (not sealed)", path)
            if (
                crash := probe.crash_in_child(probe.VECTORS_PROGRAM, [str(path), TABLE])
            ) is not None:
                raise VectorStoreDamagedError(
                    f"the vector table at {path} is damaged (Lance crashed opening it: {crash}); "
                    "open the memory read-write once to rebuild it from the graph"
                )
        try:
            self._db: Any = self._connect()
            self._table = self._open_table()
            stored = self._table.schema.field("vector").type
        except OSError as exc:  # the system's refusal (permissions, no space): not damage
            raise StorageError(f"cannot open vector store {path}: {exc}") from exc
        except BaseException as exc:  # lance raises RuntimeError, ValueError, Rust panics...
            if not lance_failed(exc):
                raise
            raise damaged(path, exc) from exc
        stored_dim = stored.list_size
        # A table keeps the number type it was created with (float32 before vector_dtype).
        self._schema = vector_schema(dim, stored.value_type)
        self._numbers = stored.value_type.to_pandas_dtype()
        if stored_dim != dim:
            raise EmbeddingDimensionError(
                f"the vector table at {path} holds {stored_dim}-dimensional vectors, "
                f"the embedder gives {dim}"
            )
        try:
            native = getattr(self._table, "_table", None)
            if not unsealed and isinstance(native, AsyncTable):
                self._ann_rows, found = LOOP.run(
                    _checked_at_open(native, self.dim, list(self._schema.names))
                )
            else:
                self.verify(full=unsealed)
                self._ann_rows = self._ann_indexed_rows()
                found = self._other_rows()
            others = rows_by_id(found, self.dim)
        except OSError as exc:
            raise StorageError(f"cannot read vector store {path}: {exc}") from exc
        except BaseException as exc:
            if not lance_failed(exc):
                raise
            raise damaged(path, exc) from exc
        self._trained_at = 0.0  # monotonic time the last training in this process ended
        self._train_seconds = 0.0
        self._listeners: list[Listener] = []
        self._others = OtherRows(others)
        """The gist and entity rows, kept in process."""
        self._fts_rebuild: threading.Thread | None = None
        """Replacing a full-text index found damaged by a search (_rebuild_fts)."""

    # --- writes --------------------------------------------------------------------------------

    def listen(self, listener: Listener) -> None:
        """Call ``listener(rows, stored_vectors, deleted_ids)`` after every committed add or
        upsert (rows and their vectors as LanceDB holds them) and delete (ids), in the writer's
        thread (the store keeps its vector sketch with it)."""
        self._listeners.append(listener)

    def add(self, rows: Sequence[VectorRow]) -> None:
        """Append rows for new nodes (one commit)."""
        if rows:
            table = rows_to_arrow(rows, self.dim, self._numbers, self._schema)
            self._commit(lambda: self._table.add(table))
            self._written(rows, table, [])

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Insert or replace rows by id (one commit); used for updates and reconciliation."""
        if rows:
            table = rows_to_arrow(rows, self.dim, self._numbers, self._schema)
            self._commit(
                lambda: (
                    self._table.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(table)
                ),
                rewritten=len(rows),
            )
            self._written(rows, table, [])

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the rows of these ids (one commit per 1,000 ids; absent ids are ignored)."""
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            self._commit(
                lambda chunk=chunk: self._table.delete(sql_in("id", chunk, False)),
                rewritten=len(chunk),
                last=start + 1000 >= len(ids),
            )
            self._written([], None, chunk)

    def set_tier(self, ids: Sequence[str], tier: str) -> None:
        """Set the tier column of these rows in place (one commit per 1,000 ids; absent ids
        are ignored): promotion to long_term keeps the vector, only the prefilter changes."""
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            self._commit(
                lambda chunk=chunk: self._table.update(
                    where=sql_in("id", chunk, False), values={"tier": tier}
                ),
                rewritten=len(chunk),
                last=start + 1000 >= len(ids),
            )
            self._others.set_tier(chunk, tier)

    def compact(self, *, background: bool = False) -> None:
        """Merge fragments, index new rows, and delete versions older than cleanup_after or
        than the previous compaction, whichever is more recent.

        An ANN (re)training that is due (ann_min_rows reached, or the table more than grown by
        ann_reindex_growth since the last one) runs inline, after any training already running
        has finished; with ``background`` (the writer's periodic compaction) it runs on its own
        thread instead (an IVF_RQ build takes ~3 s at 100k rows and grows with the table: the
        writer must not wait), and compactions are skipped until it has committed: merging
        fragments and deleting versions would pull files from under it. Appends go on
        meanwhile; rows the index does not cover are searched exactly.
        """
        if background and self.training:
            return
        self.wait_for_index()
        with self._compact_lock:
            self._ensure_indexes(background)
            if self.training:
                return
            # Every compaction rewrites the merged rows: a robot flushing many times a second
            # compacts several times within cleanup_after, and each kept version held a copy
            # (10,000 back-to-back flushes: 11x the disk of a bulk load while open). Versions
            # before the previous compaction are not needed: searches in this process hold
            # the lock below, and no other process can open the memory.
            now = time.monotonic()
            since_previous = timedelta(seconds=now - self._compacted_at)
            with self._lock.exclusive():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._table.optimize(cleanup_older_than=min(self.cleanup_after, since_previous))
                self._reopen()
                self._commits_since_compaction = 0
                self._rewritten_since_compaction = 0
                self._compacted_at = now

    def _reopen(self) -> None:
        """Open the table again on a new connection (the caller holds the exclusive lock).

        LanceDB 0.40 keeps a reader of every full-text index file a table handle has searched,
        even after a compaction replaced the index and its cleanup deleted the file: measured
        here, 400 small appends with a compaction every 20 left 33 descriptors open on deleted
        files, growing without bound, and a handle opened afresh after each compaction left
        none. The old handle and its connection go with their caches."""
        self._db = self._connect()
        self._table = self._db.open_table(TABLE)

    def _connect(self) -> Any:
        """A connection with caches of its own, bounded (a new one at every reopen: the old
        caches, and the index files they hold open, go with the old connection)."""
        index_bytes, metadata_bytes = self._cache_bytes
        session = lancedb.Session(
            index_cache_size_bytes=index_bytes, metadata_cache_size_bytes=metadata_bytes
        )
        return lancedb.connect(str(self.path), session=session)

    @property
    def training(self) -> bool:
        """Whether an ANN index is being built on the background thread."""
        thread = self._training
        return thread is not None and thread.is_alive()

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Wait for a background ANN build to finish; False if it still runs after timeout."""
        thread = self._training
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def close(self) -> None:
        """Delete every old version before the memory closes.

        compact() keeps the versions of the last ``cleanup_after`` seconds, and a robot that
        flushes fast makes many in that time (each compaction rewrites the merged rows, so each
        kept version can hold a copy): measured here, 2,000 back-to-back one-row flushes left
        8x the disk of one bulk load. At close nothing reads the table any more (this process
        is its only user: the graph's lock keeps other processes out), so nothing older than
        the latest version is needed.
        """
        if self.training:
            log.info("waiting for the ANN index build to finish before closing")
        self.wait_for_index()
        if (fts := self._fts_rebuild) is not None:
            fts.join()
        with self._compact_lock, self._lock.exclusive():
            if len(self._table.list_versions()) > 1:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._table.optimize(cleanup_older_than=timedelta(0))
                self._commits_since_compaction = 0
                self._rewritten_since_compaction = 0
        if self._damage_seen:  # checked whole (and rebuilt) at the next open
            with contextlib.suppress(OSError):
                probe.seal_path(self.path).unlink()
        else:
            probe.write_seal(self.path)

    def release(self) -> None:
        """Let go of the table handle and its connection, with every file descriptor and
        cache they hold (a process that opens and closes memories all day keeps none of
        them). Called last by the store's close; the table is not used afterwards."""
        if (fts := self._fts_rebuild) is not None:
            fts.join()
        with self._compact_lock, self._lock.exclusive():
            self._table = ClosedTable(self.path)
            self._db = None

    # --- reads ---------------------------------------------------------------------------------

    def search(
        self,
        vector: np.ndarray,
        n: int,
        where: VectorFilter | None = None,
        *,
        matching: int | None = None,
        rescore: bool = False,
        observation_scores: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> list[VectorHit]:
        """The ``n`` nearest rows by cosine similarity among those passing ``where``.

        The filter is applied before the nearest-neighbour search (prefilter), so n results come
        back whenever n rows pass it. Small filtered sets are searched exactly.

        Args:
            vector: the query vector.
            n: how many rows.
            where: the prefilter.
            matching: how many rows pass ``where``, when the caller knows (an estimate will do:
                it only chooses between the exact and the indexed search); counted here
                otherwise, which costs a pass of the filter.
            rescore: score the rows found from their stored vectors as the in-process
                searches do (row_vectors.cosine: the same bits), reading a margin of rows
                past ``n`` so that the n-th place is cut alike. For a caller that answers the
                same search in process at other times (a small memory's exact copy, still
                loading after an open): LanceDB's distances differ from that arithmetic in
                the last bits, enough to swap near-ties between two runs on one memory.
                Costs reading the rows' vectors (1-3 ms at 100k rows), so it is asked for
                only there.
            observation_scores: with ``rescore``, how the observation rows are scored from
                their stored vectors (and the query) instead: an area search that the vector
                sketch answers once it has loaded (VectorSketch.scores_of_vectors), so that
                near-ties are ordered alike before and after. NaN: the row is left out.
        """
        query_vector = self._check_vector(vector)

        def run(predicate: str | None, limit: int, columns: list[str]) -> list[dict[str, Any]]:
            exact = not self._ann_rows
            if predicate:
                exact = (
                    exact
                    or (matching if matching is not None else self._table.count_rows(predicate))
                    <= EXACT_SEARCH_MAX_ROWS
                )
            table = nearest_rows(
                self._table,
                query_vector,
                predicate,
                limit,
                columns,
                probed=not exact,
                bypass_index=exact and bool(self._ann_rows),
            )
            rows: list[dict[str, Any]]
            if not rescore:
                rows = table.to_pylist()
                return rows
            rows = table.drop_columns(["vector"]).to_pylist()
            if table.column("vector").null_count:
                return rows  # a row without its vector (damage): LanceDB's scores, below
            for row, stored in zip(rows, stored_vectors(table, self.dim), strict=True):
                row["vector"] = stored
            return rows

        with self._lock.reading():
            try:
                if rescore:
                    columns = ["id", "kind", "_distance", "vector"]
                    fetched = n + max(RESCORE_MARGIN, n // 4)
                    rows = narrowed(where, fetched, run, columns)
                    while len(rows) >= fetched and tie_reaches_the_end(rows, n):
                        fetched *= 2  # a tie group past the rows read: read until it ends
                        rows = narrowed(where, fetched, run, columns)
                else:
                    rows = narrowed(where, n, run, ["id", "kind", "_distance"])
            except InvalidInputError:
                raise
            except BaseException as exc:  # a file damaged while open: Lance's errors, panics
                if not lance_failed(exc):
                    raise
                self._damage_seen = True
                raise VectorStoreDamagedError(
                    f"the vector table at {self.path} became unreadable "
                    f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); close and "
                    "reopen the memory: it is checked at open and rebuilt from the graph"
                ) from exc
        if not rescore or not all("vector" in r for r in rows):
            return [
                VectorHit(id=r["id"], kind=r["kind"], score=1.0 - float(r["_distance"]))
                for r in rows[:n]
            ]
        return rescored_hits(rows, query_vector, n, observation_scores)

    def keyword_search(
        self, text: str, n: int, where: VectorFilter | None = None
    ) -> list[VectorHit]:
        """Full-text (BM25) search over the stored text; matches words, not only phrases."""
        if not text.strip():
            return []

        def run(predicate: str | None, limit: int, columns: list[str]) -> list[dict[str, Any]]:
            builder = self._table.search(text, query_type="fts", fts_columns="text")
            if predicate:
                builder = builder.where(predicate, prefilter=True)
            rows: list[dict[str, Any]] = builder.select(columns).limit(limit).to_list()
            return rows

        if self._fts_rebuild is not None:  # its index was found damaged: being rebuilt
            return []
        damaged: BaseException | None = None
        with self._lock.reading():
            try:
                rows = narrowed(where, n, run, ["id", "kind", "_score"])
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # a Rust panic is a BaseException
                if not panicked(exc):  # no index yet (an empty table), a query Lance can't parse
                    log.debug("keyword search unavailable: %s", exc)
                    return []
                damaged = exc
        if damaged is not None:
            self._rebuild_fts(damaged)
            return []
        return [VectorHit(id=r["id"], kind=r["kind"], score=float(r["_score"])) for r in rows]

    def _rebuild_fts(self, exc: BaseException) -> None:
        """Replace a full-text index that panicked Lance (bytes damaged inside it: open's
        verify loads it but cannot check it) on a thread; keyword search answers nothing
        until then, the vector half of a search goes on. Reported once (health.json)."""
        if self.read_only:
            log.warning(
                "the full-text index of %s failed a search (%s); open the memory read-write "
                "once to rebuild it",
                self.path,
                type(exc).__name__,
            )
            return
        with self._compact_lock:
            if self._fts_rebuild is not None:
                return
            detail = " ".join(str(exc).split())[:200]

            def rebuild() -> None:
                try:
                    with self._compact_lock, self._lock.exclusive(), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        self._table.create_fts_index("text", replace=True)
                except Exception as error:  # on a thread: logged, keyword search kept off
                    log.warning("the full-text index could not be rebuilt: %s", error)
                    return
                self._fts_rebuild = None

            self._fts_rebuild = threading.Thread(target=rebuild, name="fts-rebuild", daemon=True)
        report_damage(
            self.path.parent,
            f"the full-text index of the vector table failed a search ({type(exc).__name__}: "
            f"{detail})",
            "it is rebuilt from the table on a thread; keyword search is off until then",
        )
        self._fts_rebuild.start()

    def search_others(self, vector: np.ndarray, n: int, where: VectorFilter) -> list[VectorHit]:
        """The ``n`` gist and entity rows passing ``where`` nearest ``vector`` by cosine
        similarity, best first (ties by id), from the in-process copy of those rows (a few
        thousand where observations are a million: a LanceDB search that must skip the
        observations cost 14-32 ms at 1M rows). With the sketch of the observations this
        answers an area search without LanceDB (MemoryStore.vector_hits)."""
        return self._others.nearest(self._check_vector(vector).astype(np.float32), n, where)

    def keyword_others(self) -> tuple[KeywordIndex, OtherColumns]:
        """A keyword index over the gist and entity rows' texts, by position in the rows'
        columns (sorted by id) it comes with."""
        return self._others.keyword_index()

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` have a row."""
        found: set[str] = set()
        with self._lock.reading():
            for table in self._rows_of(ids, ["id"]):
                found.update(table.column("id").to_pylist())
        return found

    def vectors_of(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those ``ids`` that have a row with a finite vector (reused
        without re-embedding)."""
        found: dict[str, np.ndarray] = {}
        with self._lock.reading():
            for table in self._rows_of(ids, ["id", "vector"]):
                matrix = stored_vectors(table, self.dim)
                # A vector with NaN or infinity was damaged on disk (Lance keeps no
                # checksums): left out, so the caller re-embeds the node's text.
                finite = np.isfinite(matrix).all(axis=1)
                for row, node_id in enumerate(table.column("id").to_pylist()):
                    if finite[row]:
                        found[str(node_id)] = matrix[row]
        return found

    def _rows_of(self, ids: Sequence[str], columns: list[str]) -> Generator[pa.Table, None, None]:
        """``columns`` of the rows of ``ids``, one table per 1,000 ids (the caller holds the
        read lock)."""
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            yield (
                self._table.search()
                .where(sql_in("id", chunk, False))
                .select(columns)
                .limit(len(chunk))
                .to_arrow()
            )

    def scan_vectors(
        self, kind: NodeKind, batch_rows: int = 8_192
    ) -> Generator[tuple[list[str], np.ndarray], None, None]:
        """Every row of ``kind`` as (ids, float32 vectors) batches, in one scan (compaction
        waits until the scan ends or the iterator is closed)."""
        with self._lock.reading():
            reader = (
                self._table.search()
                .where(f"kind = {sql_quote(kind)}")
                .select(["id", "vector"])
                .limit(None)
                .to_batches(batch_rows)
            )
            for batch in reader:
                table = pa.Table.from_batches([batch])
                yield table.column("id").to_pylist(), stored_vectors(table, self.dim)

    def id_vectors(self, where: VectorFilter | None = None) -> pa.Table:
        """The id and vector columns of every row passing ``where``, in one scan (export reads
        them whole where thousands of id lookups would each scan the table)."""
        predicate = where.to_sql() if where else None
        with self._lock.reading():
            builder = self._table.search()
            if predicate:
                builder = builder.where(predicate)
            table = builder.select(["id", "vector"]).limit(None).to_arrow()
        as_float32 = table.column("vector").cast(pa.list_(pa.float32(), self.dim))
        return table.set_column(table.schema.get_field_index("vector"), "vector", as_float32)

    def all_ids(self, where: VectorFilter | None = None) -> list[str]:
        """The id of every row passing ``where``, one entry per row (an id held twice appears
        twice). Reads the whole id column: for consistency checks, not for queries."""
        predicate = where.to_sql() if where else None
        with self._lock.reading():
            builder = self._table.search()
            if predicate:
                builder = builder.where(predicate)
            table = builder.select(["id"]).limit(None).to_arrow()
        return [str(i) for i in table.column("id").to_pylist()]

    def count(self, where: VectorFilter | None = None) -> int:
        """Number of rows passing ``where``."""
        predicate = where.to_sql() if where else None
        with self._lock.reading():
            return int(self._table.count_rows(predicate))

    def stats(self) -> dict[str, Any]:
        """Rows, versions, fragments, bytes on disk, rows the ANN index covers and rows it was
        last trained on (for stats and the compaction tests)."""
        with self._lock.reading():
            table_stats: Any = self._table.stats()
            versions = len(self._table.list_versions())
        disk = sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())
        return {
            "rows": int(table_stats["num_rows"]),
            "versions": versions,
            "fragments": int(table_stats["fragment_stats"]["num_fragments"]),
            "disk_bytes": disk,
            "ann_indexed_rows": self._ann_indexed_rows(),
            "ann_trained_rows": self._ann_rows,
        }

    def verify(self, *, full: bool = False) -> None:
        """Read every data file of the table once and open every index, so that a missing,
        truncated or garbled file is found at open rather than by some later search.

        One small column is scanned (every fragment's footer and deletion file is read), each
        scalar and full-text index is loaded whole (a few MB at 1M rows) and the ANN index
        answers one search probing one partition (its files are opened; loading it whole
        would hold hundreds of MB). Measured at 100k rows: the scan 60-100 ms (it grows with
        the rows), the seven indexes 20-50 ms together.
        A table sealed by a clean close is checked the same way in one call into LanceDB's
        event loop (_checked_at_open); this method is the check of any other open.
        Bytes changed inside a file without changing its size or footer are not found (Lance
        keeps no checksums) unless ``full``: then every column of every row is read, in
        batches (a table not sealed by a clean close: after a kill, an outside change, or a
        search that found it unreadable). A flipped byte in another column than ``t`` had
        passed the one-column scan and failed the first search.

        Raises:
            Exception: whatever Lance raises on a damaged file (the caller wraps it).
        """
        with self._lock.reading():
            if full:
                for _batch in self._table.search().limit(None).to_batches(FULL_SCAN_BATCH):
                    pass
            else:
                self._table.search().select(["t"]).limit(None).to_arrow()
            for index in self._table.list_indices():
                if tuple(index.columns) == ("vector",):
                    probe = np.zeros(self.dim, dtype=np.float32)
                    probe[0] = 1.0
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        (
                            self._table.search(probe, vector_column_name="vector")
                            .nprobes(1)
                            .limit(1)
                            .select(["id"])
                            .to_arrow()
                        )
                else:
                    self._table.prewarm_index(index.name)

    # --- internals -----------------------------------------------------------------------------

    def _open_table(self) -> Any:
        """Open the table, or create it on a new store.

        A process killed inside create_table leaves the table's directory with no committed
        version: listed by table_names(), refused by open_table(). Such a table never held a row,
        so it is created again; a table with a committed version is never overwritten.
        """
        if TABLE not in self._db.table_names():
            if self.read_only:
                raise ValueError("the memory has no vector table and it is opened read-only")
            if any((self.path / f"{TABLE}.lance" / "data").glob("*.lance")):
                # Rows without a version that names them: the manifests are gone.
                raise ValueError("the table's data files are there but no version names them")
            return self._db.create_table(TABLE, schema=self._schema)
        try:
            return self._db.open_table(TABLE)
        except ValueError:
            table_dir = self.path / f"{TABLE}.lance"
            if any((table_dir / "_versions").glob("*.manifest")) or any(
                (table_dir / "data").glob("*.lance")
            ):
                raise
            log.warning("vector table creation was interrupted; creating it again")
            return self._db.create_table(TABLE, schema=self._schema, mode="overwrite")

    def _commit(self, action: Any, *, rewritten: int = 0, last: bool = True) -> None:
        """Run one write; then, at the ``last`` commit of an operation, compact when
        compact_every commits or REWRITE_COMPACT_ROWS updated/deleted rows have gathered."""
        with self._lock.reading():
            try:
                action()
            except (OSError, RuntimeError, ValueError) as exc:
                raise StorageError(f"vector store write failed: {exc}") from exc
        self._commits_since_compaction += 1
        self._rewritten_since_compaction += rewritten
        if last and (
            self._commits_since_compaction >= self.compact_every
            or self._rewritten_since_compaction >= REWRITE_COMPACT_ROWS
        ):
            self.compact(background=True)

    def _ensure_indexes(self, background: bool) -> None:
        rows = self._table.count_rows()
        if rows == 0:
            return
        indices = self._table.list_indices()
        existing = {tuple(index.columns) for index in indices}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for column, kind in SCALAR_INDEXES.items():
                if (column,) not in existing:
                    self._table.create_scalar_index(column, index_type=kind)
            if ("text",) not in existing:
                self._table.create_fts_index("text", replace=True)
        grown = self._ann_rows and rows > self._ann_rows * (1 + self.ann_reindex_growth)
        segments = max(
            (int(i.num_segments or 1) for i in indices if tuple(i.columns) == ("vector",)),
            default=0,
        )
        merge = (
            segments > ANN_MAX_SEGMENTS
            and time.monotonic() - self._trained_at >= self._train_seconds / ANN_TRAIN_SHARE
        )
        if rows < self.ann_min_rows or (self._ann_rows and not grown and not merge):
            return
        if background:
            self._training = threading.Thread(
                target=self._train_ann, args=(rows,), name="emem-ann-index", daemon=True
            )
            self._training.start()
        else:
            self._train_ann(rows)

    def _train_ann(self, rows: int) -> None:
        log.info("building the ANN index over %d vectors", rows)
        started = time.monotonic()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # With a config, LanceDB 0.40 reads the first argument as the column (a named
                # vector_column_name is ignored and "l2", the metric default, is looked up).
                self._table.create_index("vector", config=ann_index_config(self.dim), replace=True)
        except Exception as exc:  # searches stay exact; the next compaction tries again
            if threading.current_thread() is not self._training:
                raise StorageError(f"building the ANN index failed: {exc}") from exc
            log.warning("building the ANN index failed (searches stay exact): %s", exc)
            return
        self._ann_rows = rows
        self._trained_at = time.monotonic()
        self._train_seconds = self._trained_at - started
        log.info("ANN index over %d vectors built in %.1f s", rows, self._train_seconds)

    def _ann_indexed_rows(self) -> int:
        for index in self._table.list_indices():
            if tuple(index.columns) == ("vector",):
                stats = self._table.index_stats(index.name)
                return int(getattr(stats, "num_indexed_rows", 0) or 0)
        return 0

    def _check_vector(self, vector: np.ndarray) -> np.ndarray:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape[0] != self.dim:
            raise EmbeddingDimensionError(
                f"query vector has {array.shape[0]} dimensions, the store holds {self.dim}"
            )
        if not np.all(np.isfinite(array)):
            raise InvalidInputError("query vector contains NaN or infinity")
        return array

    def _written(
        self, rows: Sequence[VectorRow], table: pa.Table | None, deleted: Sequence[str]
    ) -> None:
        """Follow a committed write: the copy of the gist and entity rows, then listeners."""
        stored = None if table is None else stored_vectors(table, self.dim)
        self._others.follow(rows, stored, deleted)
        for listener in self._listeners:
            listener(rows, stored, deleted)

    def _other_rows(self) -> pa.Table:
        """The gist and entity rows (few next to the observations), every column."""
        found: pa.Table = (
            self._table.search()
            .where(OTHERS_PREDICATE)
            .select(list(self._schema.names))
            .limit(None)
            .to_arrow()
        )
        return found


Listener = Callable[[Sequence[VectorRow], np.ndarray | None, Sequence[str]], None]
"""Called with the rows of a committed add or upsert and their vectors as stored (float32
rows of the values LanceDB holds), or with the ids of a committed delete."""


def nearest_rows(
    table: Any,
    vector: np.ndarray,
    predicate: str | None,
    limit: int,
    columns: list[str],
    *,
    probed: bool,
    bypass_index: bool,
) -> pa.Table:
    """The ``limit`` rows of ``table`` nearest to ``vector`` (cosine) among those passing
    ``predicate`` (a prefilter), with ``columns``: through the ANN index with explicit probes
    and a refine step when ``probed`` (see ANN_REFINE: the defaults gave recall@10 of 0.7
    here, and scores off by up to 0.3), past it when ``bypass_index``, else as LanceDB
    chooses.

    Asked of the table's asynchronous handle in one call to LanceDB's event loop: its
    synchronous query builder makes five or six (the table's schema three times, the query,
    each batch), 4-5 ms of a 15 ms search at 100k rows on the 2-core machine (same rows and
    distances). The synchronous builder where a table has no such handle."""
    native = getattr(table, "_table", None)
    if isinstance(native, AsyncTable):
        query = native.query().nearest_to(vector).distance_type("cosine")
        if predicate:
            query = query.where(predicate)  # a prefilter: the asynchronous query's default
        if bypass_index:
            query = query.bypass_vector_index()
        if probed:
            query = query.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
        found: pa.Table = LOOP.run(query.select(columns).limit(limit).to_arrow())
        return found
    builder: Any = table.search(vector).distance_type("cosine")
    if predicate:
        builder = builder.where(predicate, prefilter=True)
    if bypass_index:
        builder = builder.bypass_vector_index()
    if probed:
        builder = builder.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
    rows: pa.Table = builder.select(columns).limit(limit).to_arrow()
    return rows


OTHERS_PREDICATE = "kind <> 'observation'"
"""The gist and entity rows, which the store keeps a copy of in process."""


async def _checked_at_open(
    native: AsyncTable, dim: int, columns: list[str]
) -> tuple[int, pa.Table]:
    """VectorStore.verify's check (not ``full``) of a table opened sealed, with the rows the
    ANN index covers and the gist and entity rows (_other_rows), in one call to LanceDB's
    event loop and at once: the synchronous calls made ~70 crossings into it one after
    another, each index warmed in turn (~40 ms of a 20k memory's open on 2 cores).

    Raises:
        Exception: whatever Lance raises on a damaged file (the caller wraps it).
    """
    indices = await native.list_indices()
    probe_vector = np.zeros(dim, dtype=np.float32)
    probe_vector[0] = 1.0
    work: list[Any] = [
        native.query().where(OTHERS_PREDICATE).select(columns).to_arrow(),
        _read_through(native.query().select(["t"])),
    ]
    ann_name: str | None = None
    for index in indices:
        if tuple(index.columns) == ("vector",):
            ann_name = index.name
            # Its files opened by a search probing one partition (loading it whole would
            # hold hundreds of MB at 1M rows).
            query = native.query().nearest_to(probe_vector).distance_type("cosine")
            work.append(query.nprobes(1).limit(1).select(["id"]).to_arrow())
        else:
            work.append(native.prewarm_index(index.name))
    done = await asyncio.gather(*work, return_exceptions=True)
    for outcome in done:
        if isinstance(outcome, BaseException):
            raise outcome
    ann_rows = 0
    if ann_name is not None:
        stats = await native.index_stats(ann_name)
        ann_rows = int(getattr(stats, "num_indexed_rows", 0) or 0)
    others: pa.Table = done[0]
    return ann_rows, others


async def _read_through(query: Any) -> None:
    """Read every batch of ``query``'s answer and keep none: a check reads the files, it
    needs no rows (a 1M memory's ``t`` column is 8 MB, beside the indexes warmed at once)."""
    reader = await query.to_batches(max_batch_length=FULL_SCAN_BATCH)
    async for _batch in reader:
        pass


def ann_index_config(dim: int) -> IvfRq | IvfSq:
    """The ANN index of a table of ``dim``-dimensional vectors, cosine (a robot's table and the
    fleet's shared one): IVF_RQ of ANN_BITS bits a dimension, or IVF_SQ (8 bits, the index
    before IVF_RQ) for a dimension IVF_RQ refuses (not a multiple of 8: an embedder of 100 or
    257 dimensions)."""
    if dim % 8 == 0:
        return IvfRq(distance_type="cosine", num_bits=ANN_BITS)
    return IvfSq(distance_type="cosine")
