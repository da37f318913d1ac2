"""MemoryStore: the one writer, keeping the graph (truth) and the vector index consistent.

Every write goes graph first, vectors second. The graph transaction that creates or changes a
node also writes a VectorSync journal entry for it; the entry is cleared (inside the next graph
transaction) once LanceDB holds the change. After a crash, whatever is left in the journal is
exactly what reconcile() redoes on open: time proportional to what is missing, not to the size
of the memory.

Opening the vector table, and rebuilding from the graph what it lacks, is
storage/vector_recovery.py; the in-process indexes this store keeps in step are
storage/observation_index.py and storage/entity_index.py. Its reads are mixins, each in a room
of its own: records by id, area, time or episode (storage/record_reads.py), the nearest-neighbour
search (storage/vector_search.py) over the vector copies kept in process
(storage/vector_copies.py), and the keyword search (storage/keyword_search.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.config import MemoryConfig
from emem_graph.errors import (
    ConfigError,
    DatabaseInUseError,
    DatabaseLockedError,
    InvalidInputError,
    ReadOnlyMemoryError,
    RecoveryNeededError,
    StorageError,
)
from emem_graph.filters import VectorFilter
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.models import Entity, Episode, Gist, Observation, VectorHit
from emem_graph.storage.changes import GraphChange
from emem_graph.storage.entity_index import EntityIndex
from emem_graph.storage.exact import ExactVectors
from emem_graph.storage.graph import COPY_MIN_ROWS, GraphDB, GraphTransaction
from emem_graph.storage.graph_reads import GraphReads
from emem_graph.storage.health import GraphMark, refuse_lost_graph
from emem_graph.storage.keyword_index import terms
from emem_graph.storage.keyword_search import KeywordSearch
from emem_graph.storage.layout import GRAPH_FILE, PENDING_DIR, VECTOR_DIR
from emem_graph.storage.observation_index import ObservationIndex
from emem_graph.storage.pending import PendingVectors
from emem_graph.storage.record_reads import GET_QUERY, RecordReads
from emem_graph.storage.records import (
    OBSERVATION_ARROW,
    journal_table,
    nodes_by_id,
    observation_row,
    observation_vector,
    position,
    vector_row,
    vector_text,
)
from emem_graph.storage.release import limit_malloc_arenas, release_free_memory
from emem_graph.storage.sketch import VectorSketch
from emem_graph.storage.vector_recovery import open_vectors, restore_vectors
from emem_graph.storage.vector_search import VectorSearch
from emem_graph.storage.vectors import VectorRow

log = logging.getLogger(__name__)

RETRY_DELAYS_S = (0.2, 1.0, 5.0, 30.0)
"""Seconds before each retry of vector work a LanceDB write failed (the last one repeats)."""

DROP_PAGE_CACHE_ROWS = 250_000
"""From this many observations, the open gives the graph engine's buffer pool back after reading
them all for the observation index (GraphDB.drop_page_cache: ~310 MB at 1M; ~0.1 s)."""


def _os_reason(exc: Exception) -> str:
    """Why the system refused a path, in a few words (no errno, no repeated path)."""
    if isinstance(exc, NotADirectoryError):
        return "a part of it is a file, not a directory"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, UnicodeError):
        return "it holds text UTF-8 cannot encode"
    return " ".join(str(exc).split()) or type(exc).__name__


class MemoryStore(RecordReads, VectorSearch, KeywordSearch):
    """Graph + vectors behind one write lock, with typed read primitives.

    Args:
        config: the memory's configuration (db_path is the memory's directory).
        embedder: used to re-embed nodes whose journal entry carries no vector.
        read_only: open both stores for reading only: the graph with the engine's read-only
            mode, the vector table only read; nothing in the directory is created or changed
            (no mark, no seal, no journal replay, no re-indexing); every write is refused.

    Raises:
        InvalidInputError: ``read_only`` and the directory holds no memory.
        RecoveryNeededError: ``read_only`` and the memory needs a read-write open first
            (see needs_recovery).
        DatabaseLockedError: ``read_only`` and another process holds the memory read-write.
    """

    def __init__(
        self, config: MemoryConfig, embedder: EmbeddingProvider, *, read_only: bool = False
    ) -> None:
        self.config = config
        self.root = Path(config.db_path)
        if self.root.exists() and not self.root.is_dir():
            raise StorageError(
                f"db_path {self.root} is a file; emem_graph keeps a memory in a directory "
                "(an eMEM SQLite file cannot be opened in place)"
            )
        if read_only and not (self.root / GRAPH_FILE).is_file():
            raise InvalidInputError(
                f"{self.root} holds no emem_graph memory (no {GRAPH_FILE} inside) and a "
                "read-only open creates none; give the directory a memory was created in"
            )
        if not read_only:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except (OSError, ValueError) as exc:  # ValueError: a path UTF-8 cannot encode
                raise ConfigError(
                    f"db_path {self.root} cannot be created: {_os_reason(exc)}; give a "
                    "directory path this process may create"
                ) from None
        limit_malloc_arenas(config.malloc_arena_max)  # before the engines start threads
        self._embedder = embedder
        self._write_lock = threading.RLock()
        self._acknowledged: list[str] = []
        self._vector_backlog = False
        self._retry: threading.Timer | None = None
        """Retries the vector work a failed LanceDB write left in the journal."""
        self._retries = 0
        self.read_only = read_only
        if not read_only:
            refuse_lost_graph(self.root, GRAPH_FILE, VECTOR_DIR)
        try:
            self.graph = GraphDB(
                self.root / GRAPH_FILE, read_only=read_only, engine=config.graph_engine
            )
        except DatabaseInUseError:  # open in this very process: its message says so
            raise
        except DatabaseLockedError as exc:
            if not read_only:
                raise
            raise DatabaseLockedError.held_elsewhere(self.root) from exc
        self._pending = PendingVectors(self.root / PENDING_DIR)
        self._mark = GraphMark(self.root)
        try:
            self.info = self.graph.ensure_schema({"embedding_dim": str(embedder.dim)})
            self.index = ObservationIndex()
            observations = self.graph.query_arrow("index_observations")
            if observations.num_rows >= DROP_PAGE_CACHE_ROWS:
                # The pages the read brought into the engine's buffer pool are no use to later
                # reads; given back before the index is built from the Arrow answer, so the
                # two never add up (a 1M memory's open stays under 1.5 GB resident).
                self.graph.drop_page_cache()
            self.index.load(observations)
            del observations
            # The Arrow read (~500 MB at 1M observations) is gone: its pages go back to the
            # system, not kept by the allocators for reads that will not come.
            release_free_memory()
            marked = read_only or self._mark.check(len(self.index))
            self.vectors, rebuilt = open_vectors(
                self.root / VECTOR_DIR, config, embedder.dim, read_only=read_only
            )
            self.entities = EntityIndex()
            self._load_entities()
            release_free_memory()  # what the vector table's open scans and the entities read
            if read_only and (reason := self.needs_recovery()) is not None:
                raise RecoveryNeededError(
                    f"the memory {self.root} {reason}, which a read-only open cannot do: "
                    "open it read-write once (and close it), then read-only"
                )
        except BaseException:
            self._mark.close()
            self.graph.close()
            raise
        self._reads = GraphReads(self.graph)
        self._sketch_loaded = threading.Event()
        self._closing = threading.Event()
        self._loaders: list[threading.Thread] = []
        """The threads loading the in-process copies (joined at close)."""
        self._loader_lock = threading.Lock()
        self._sketch_deferred = False
        """The sketch is loaded once needed, not at open (a small memory: see _start_loads)."""
        # A read-only open keeps the same in-process copies (read from LanceDB, never
        # written back): its searches answer exactly as a read-write open's.
        sketched = config.area_sketch
        if sketched:
            self.index.sketch = VectorSketch(embedder.dim)
        # A small memory is searched exactly in process (storage/exact.py): LanceDB would scan
        # its whole table at every search until it builds its ANN index.
        self._exact: ExactVectors | None = None
        self._exact_loaded = threading.Event()
        self._exact_kept: tuple[tuple[Any, ...], ExactVectors, np.ndarray, np.ndarray] | None = None
        """_exact_hits' last question: (it with the index's and the copy's versions, the
        copy, the rows passing its filter with a vector, their scores)."""
        if len(self.index) <= config.exact_search_max_rows:
            self._exact = ExactVectors(embedder.dim)
        if sketched or self._exact is not None:
            self.vectors.listen(self._follow_vectors)
        if not read_only:
            self.reconcile()
            restore_vectors(
                self.root,
                self.graph,
                self.vectors,
                self.index,
                fetch=self._fetch,
                embed=self._embed,
                damaged=rebuilt,
                marked=marked,
            )
        self._start_loads()

    def close(self) -> None:
        """Confirm finished vector work in the journal and close both stores."""
        with self._loader_lock:
            self._closing.set()
            loaders = list(self._loaders)
        for loader in loaders:
            loader.join()
        if (retry := self._retry) is not None:
            retry.cancel()
        with self._write_lock:
            try:
                if not self.read_only:
                    if self._acknowledged:
                        with self.graph.write() as tx:
                            tx.run("clear_vector_journal", {"ids": self._acknowledged})
                        self._acknowledged = []
                    self._release_old_vector_versions()
            finally:
                self.vectors.release()
                self._mark.close()
                self.graph.close()

    def _release_old_vector_versions(self) -> None:
        # Disk only: a failure here loses nothing (the next compaction cleans up).
        try:
            self.vectors.close()
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("old vector versions not deleted at close: %s", exc)

    # --- writes --------------------------------------------------------------------------------

    def write_observations(self, observations: Sequence[Observation], vectors: np.ndarray) -> None:
        """Store a batch of observations with their vectors: one graph transaction (nodes,
        BELONGS_TO edges, journal), then one LanceDB commit.

        Raises:
            StorageError: the graph transaction failed (nothing was written).
        """
        self._refuse_writes("write_observations")
        if not observations:
            return
        rows = [observation_row(o) for o in observations]
        with self._write_lock:
            if self._vector_backlog:
                self.reconcile()
            journal = journal_table([r["id"] for r in rows], "observation", vectors)
            bulk = len(rows) >= COPY_MIN_ROWS
            with self.graph.write() as tx:
                self._confirm_journal(tx)
                waiting = self._journal(tx, journal, bulk=bulk)
                try:
                    if bulk:  # its BELONGS_TO COPY comes last (a rel COPY must: copy_edges)
                        self._copy_observations(tx, rows)
                    else:
                        self._create_observations(tx, rows)
                except BaseException:
                    self._pending.discard(waiting)
                    raise
            self._mark.committed(len(rows))
            self.index.append(observations)
            if self._index(
                [observation_vector(o, v) for o, v in zip(observations, vectors, strict=True)],
            ):
                self._pending.discard(waiting)

    def check_writable(self) -> None:
        """Commit a graph write transaction that carries no row (it deletes no journal entry):
        raises when the graph cannot be written at all (closed, read-only, its files failing),
        which tells a storage failure from a row the store cannot take.

        Raises:
            StorageError: the graph cannot be written.
        """
        self._refuse_writes("check_writable")
        with self._write_lock, self.graph.write() as tx:
            tx.run("clear_vector_journal", {"ids": []})

    def apply(self, change: GraphChange) -> None:
        """Run a multi-node change: its steps and their VectorSync journal entries in ONE graph
        transaction, then its vector work in LanceDB (see GraphChange).

        Raises:
            StorageError: the graph transaction failed (nothing was written).
        """
        self._refuse_writes("apply")
        if change.empty:
            return
        with self._write_lock:
            if self._vector_backlog:
                self.reconcile()
            waiting = None
            with self.graph.write() as tx:
                self._confirm_journal(tx)
                change.run_steps(tx)
                # After the steps: their row callbacks add vector work (archival's deletes).
                journal = change.journal()
                if journal is not None:
                    waiting = self._journal(tx, journal)
                if change.last_copy is not None:
                    rel, edges, from_table, to_table = change.last_copy
                    tx.copy_edges(rel, edges, from_table=from_table, to_table=to_table)
            self._follow(change)
            try:
                change.apply_vectors(self.vectors)
            except StorageError as exc:
                log.warning("vector write failed, retrying shortly: %s", exc)
                self._vector_failed()
                return
            self._pending.discard(waiting)
            self._acknowledged.extend(change.journal_ids())

    def create_episode(self, episode: Episode, *, follows: str | None, parent: str | None) -> None:
        """Create an episode with its FOLLOWS edge (to the episode that ended before it) and its
        SUBTASK_OF edge (to its parent), atomically."""
        self._refuse_writes("create_episode")
        with self._write_lock, self.graph.write() as tx:
            tx.run(
                "create_episode",
                {
                    "id": episode.id,
                    "name": episode.name,
                    "start_time": episode.start_time,
                    "status": episode.status,
                    "parent_episode_id": episode.parent_episode_id,
                    "metadata": json.dumps(episode.metadata),
                },
            )
            if follows is not None:
                tx.run("link_follows", {"id": episode.id, "previous_id": follows})
            if parent is not None:
                tx.run("link_subtask", {"id": episode.id, "parent_id": parent})

    def close_episode(self, episode_id: str, end_time: float, status: str) -> None:
        """Mark an episode completed or interrupted at ``end_time``."""
        self._refuse_writes("close_episode")
        with self._write_lock, self.graph.write() as tx:
            rows = tx.run(
                "close_episode", {"id": episode_id, "end_time": end_time, "status": status}
            )
            if not rows:
                raise StorageError(f"episode {episode_id} does not exist")

    def reconcile(self) -> int:
        """Redo the vector work the journal lists (after a crash or a failed LanceDB write).

        Rows missing from LanceDB are added (with the journalled vector, or re-embedded from the
        graph's text), rows whose node is gone are deleted. Returns the number of entries redone.
        """
        self._refuse_writes("reconcile")
        with self._write_lock:
            pending = self.graph.query("pending_vector_journal")
            if not pending:
                self._vector_backlog = False
                return 0
            upserts: list[VectorRow] = []
            deletes: list[str] = []
            waiting = self._pending.load()
            for kind in GET_QUERY:
                ids = [p["id"] for p in pending if p["kind"] == kind and p["op"] == "upsert"]
                nodes = self._fetch(kind, ids)
                deletes.extend(i for i in ids if i not in nodes)
                # The vector a node should have: the one waiting beside the graph (its latest),
                # else the one LanceDB already holds (only columns such as tier changed), else
                # re-embedded from the node's text in the graph.
                indexed = self.vectors.vectors_of([i for i in nodes if i not in waiting])
                need_text = [i for i in nodes if i not in waiting and i not in indexed]
                embedded = dict(
                    zip(
                        need_text,
                        self._embed([vector_text(nodes[i]) for i in need_text]),
                        strict=True,
                    )
                )
                for node_id, node in nodes.items():
                    vector = waiting.get(node_id)
                    if vector is None:
                        vector = indexed[node_id] if node_id in indexed else embedded[node_id]
                    upserts.append(vector_row(node, vector))
            deletes.extend(p["id"] for p in pending if p["op"] == "delete")
            self.vectors.upsert(upserts)
            self.vectors.delete(deletes)
            with self.graph.write() as tx:
                tx.run("clear_vector_journal", {"ids": [p["id"] for p in pending]})
            self._pending.clear()
            self._acknowledged = []
            self._vector_backlog = False
            log.info("reconciled %d vector entries (%d re-indexed)", len(pending), len(upserts))
            return len(pending)

    def _vector_failed(self) -> None:
        """Mark the journal's work as owed to LanceDB and retry it on a timer (the caller
        holds the write lock): the gist or entity a failed write carried is searchable within
        seconds, not only after some later write happens to reconcile."""
        self._vector_backlog = True
        if self._retry is None or not self._retry.is_alive():
            delay = RETRY_DELAYS_S[min(self._retries, len(RETRY_DELAYS_S) - 1)]
            self._retry = threading.Timer(delay, self._retry_vectors)
            self._retry.daemon = True
            self._retry.name = "emem-vector-retry"
            self._retry.start()

    def _retry_vectors(self) -> None:
        with self._write_lock:
            if self._closing.is_set() or not self._vector_backlog:
                return
            self._retries += 1
            try:
                self.reconcile()
            except Exception as exc:  # the journal keeps the work: tried again later
                if self._closing.is_set() or getattr(self.graph, "_closed", False):
                    # The memory is going away: the journal holds the work for the next open.
                    log.debug("vector work left to the next open (%s)", exc)
                    return
                log.warning("retrying the vector work failed (%s); trying again", exc)
                self._retry = None
                self._vector_failed()
                return
            self._retries = 0

    def _refuse_writes(self, what: str) -> None:
        """Refuse a write on a read-only store before anything is touched (the graph engine,
        opened read-only, would refuse it too)."""
        if self.read_only:
            raise ReadOnlyMemoryError(
                f"{what}: refused, the memory {self.root} is open read-only (nothing written)"
            )

    def needs_recovery(self) -> str | None:
        """What a read-write open would have to repair or finish in this memory before it
        answers, in words ("holds ..."), or None when nothing: episodes a stopped process left
        active or waiting for their consolidation, unfinished vector writes in the journal,
        nodes whose vector the table lacks."""
        active = len(self.graph.query("active_episodes"))
        if active:
            return f"holds {active} episode(s) left active by a process that stopped"
        waiting = len(self.graph.query("pending_consolidation_episodes"))
        if waiting:
            return f"holds {waiting} ended episode(s) whose consolidation never ran"
        journalled = int(self.graph.query("count_vector_journal")[0]["n"])
        if journalled:
            return f"holds {journalled} unfinished vector write(s) to replay"
        expected = sum(int(n) for n in self.graph.query("vector_node_counts")[0].values())
        held = self.vectors.count()
        if held < expected:
            return f"has {held} of the {expected} vectors its nodes need (to re-index)"
        return None

    # --- reads ---------------------------------------------------------------------------------

    def nearest(
        self, vector: np.ndarray, n: int, where: VectorFilter | None = None
    ) -> list[tuple[VectorHit, Observation | Gist | Entity]]:
        """The n nearest nodes to ``vector`` that pass the prefilter, with their records."""
        return self._hydrate(self.vector_hits(vector, n, where))

    def keyword(
        self, text: str, n: int, where: VectorFilter | None = None
    ) -> list[tuple[VectorHit, Observation | Gist | Entity]]:
        """The n best keyword (BM25) matches that pass the prefilter, with their records."""
        hits = [
            VectorHit(id=hit.id, kind=hit.kind, score=hit.score)
            for hit in self.keyword_hits(terms(text), n, where)
        ]
        return self._hydrate(hits)

    def counts(self) -> dict[str, int]:
        """Node counts per type plus pending (unsynced) vector entries."""
        row = self.graph.query("node_counts")[0]
        # Under the writer lock: a write between its graph commit and its acknowledgement would
        # otherwise count vectors LanceDB already holds as pending.
        with self._write_lock:
            journalled = int(self.graph.query("count_vector_journal")[0]["n"])
            # Acknowledged entries are in LanceDB already; they leave the journal with the next
            # write.
            pending = max(0, journalled - len(self._acknowledged))
        return {**{k: int(v) for k, v in row.items()}, "pending_vectors": pending}

    # --- internals -----------------------------------------------------------------------------

    def _follow(self, change: GraphChange) -> None:
        # The index follows the observation tiers a committed change set: promotions, and
        # archival (the only change that deletes an observation's vector).
        for tier, entries in change.retiers.items():
            self.index.set_tier([i for i, kind in entries if kind == "observation"], tier)
        self.index.set_tier([i for i, kind in change.deletes if kind == "observation"], "archived")
        self.entities.put(change.entities)
        if change.stays or change.dropped_stays:
            # The change holds its own copies (GraphChange.follow_entities).
            self.entities.put_stays(change.stays, change.dropped_stays, copy=False)
        if change.sightings:
            self.entities.add_sightings(
                [e for e, _ in change.sightings],
                self.index.rows_of([o for _, o in change.sightings]),
            )

    def _load_entities(self) -> None:
        rows = self.graph.query("all_entities")
        self.entities.put(list(nodes_by_id(rows, "entity").values()), copy=False)
        rows = self.graph.query("all_positions")
        self.entities.put_stays([position(row["p"]) for row in rows], copy=False)
        pairs = self.graph.query_arrow("entity_sightings")
        if pairs.num_rows:
            self.entities.add_sightings(
                pairs.column(0).to_pylist(), self.index.rows_of(pairs.column(1).to_pylist())
            )
        self.entities.take_changed()  # what was there at open is no write's change

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        if not texts:
            return []
        return list(self._embedder.embed(texts))

    def _index(self, rows: list[VectorRow]) -> bool:
        try:
            self.vectors.add(rows)
        except StorageError as exc:
            # The graph holds the nodes and the journal holds the work: retried shortly, before
            # the next write, and on the next open. Nothing is lost.
            log.warning("vector write failed, retrying shortly: %s", exc)
            self._vector_failed()
            return False
        self._acknowledged.extend(r.id for r in rows)
        return True

    def _journal(
        self, tx: GraphTransaction, journal: pa.Table, *, bulk: bool = False
    ) -> Path | None:
        """Journal vector work in ``tx``: ids/kinds/ops into the graph, vectors beside it.

        Returns the pending-vector file to discard once LanceDB holds the rows.
        """
        lengths = pc.list_value_length(journal.column("vector")).to_numpy(zero_copy_only=False)
        has_vector = np.flatnonzero(np.nan_to_num(lengths, nan=0) > 0)
        waiting = None
        if len(has_vector):
            chosen = journal.take(pa.array(has_vector))
            vectors = np.stack(chosen.column("vector").to_numpy(zero_copy_only=False))
            waiting = self._pending.save(chosen.column("id").to_pylist(), vectors)
        entries = journal.select(["id", "kind", "op"])
        try:
            if bulk:
                tx.copy_nodes("VectorSync", entries)
            else:
                tx.run("journal_vectors", {"rows": entries})
        except BaseException:
            self._pending.discard(waiting)
            raise
        return waiting

    def _confirm_journal(self, tx: GraphTransaction) -> None:
        if self._acknowledged:
            tx.run("clear_vector_journal", {"ids": self._acknowledged})
            # Cleared only when this transaction commits; until then a crash leaves them
            # journalled and reconcile() finds LanceDB already has them (an idempotent upsert).
            self._acknowledged = []

    @staticmethod
    def _create_observations(tx: GraphTransaction, rows: list[dict[str, Any]]) -> None:
        groups: dict[str | None, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(row["episode_id"], []).append(row)
        for episode_id, group in groups.items():
            table = pa.Table.from_pylist(group, schema=OBSERVATION_ARROW)
            if episode_id is None:
                tx.run("create_observations", {"rows": table})
                continue
            created = tx.run(
                "create_observations_in_episode", {"episode_id": episode_id, "rows": table}
            )
            if not created or int(created[0]["created"]) != len(group):
                raise StorageError(f"episode {episode_id} does not exist; observations refused")

    @staticmethod
    def _copy_observations(tx: GraphTransaction, rows: list[dict[str, Any]]) -> None:
        table = pa.Table.from_pylist(rows, schema=OBSERVATION_ARROW)
        tx.copy_nodes("Observation", table)
        members = [(r["id"], r["episode_id"]) for r in rows if r["episode_id"] is not None]
        if members:
            edges = pa.table(
                {"from": [m[0] for m in members], "to": [m[1] for m in members]},
            )
            tx.copy_edges("BELONGS_TO", edges, from_table="Observation", to_table="Episode")
