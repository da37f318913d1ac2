"""MemoryStore: the one writer, keeping the graph (truth) and the vector index consistent.

Every write goes graph first, vectors second. The graph transaction that creates or changes a
node also writes a VectorSync journal entry for it; the entry is cleared (inside the next graph
transaction) once LanceDB holds the change. After a crash, whatever is left in the journal is
exactly what reconcile() redoes on open: time proportional to what is missing, not to the size
of the memory.

Opening the vector table, and rebuilding from the graph what it lacks, is
storage/vector_recovery.py; the in-process indexes this store keeps in step are
storage/observation_index.py and storage/entity_index.py.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.config import MemoryConfig
from emem_graph.errors import (
    DatabaseInUseError,
    DatabaseLockedError,
    InvalidInputError,
    ReadOnlyMemoryError,
    RecoveryNeededError,
    StorageError,
)
from emem_graph.filters import VectorFilter
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.models import INTEROCEPTION, Entity, Episode, Gist, Observation, VectorHit
from emem_graph.storage.changes import GraphChange
from emem_graph.storage.entity_index import EntityIndex
from emem_graph.storage.exact import ExactVectors
from emem_graph.storage.graph import COPY_MIN_ROWS, GraphDB, GraphTransaction
from emem_graph.storage.health import GraphMark, refuse_lost_graph
from emem_graph.storage.keyword_index import KeywordHit, KeywordIndex, Matches, bm25, terms
from emem_graph.storage.observation_index import ObservationIndex
from emem_graph.storage.pending import PendingVectors
from emem_graph.storage.records import (
    OBSERVATION_ARROW,
    episode,
    journal_table,
    nodes_by_id,
    observation,
    observation_row,
    observation_vector,
    position,
    vector_row,
    vector_text,
)
from emem_graph.storage.release import release_free_memory
from emem_graph.storage.sketch import VectorSketch
from emem_graph.storage.vector_recovery import open_vectors, restore_vectors
from emem_graph.storage.vectors import VectorRow

log = logging.getLogger(__name__)

GRAPH_FILE = "graph.kuzu"
VECTOR_DIR = "vectors"
PENDING_DIR = "pending_vectors"
FIRST_TEXT_BLOCK = 8
"""Distinct texts whose rows the keyword search filters first (then twice as many each time):
the best few texts of a robot's repeated observations hold enough rows for n."""
DROP_PAGE_CACHE_ROWS = 250_000
"""From this many observations, the open gives the graph engine's buffer pool back after reading
them all for the observation index (GraphDB.drop_page_cache: ~310 MB at 1M; ~0.1 s)."""
RELEASE_EVERY_BATCHES = 1
"""The vector loader at open returns freed memory to the system every this many batches (of
vectors.SCAN_BATCH rows): the C library kept ~185 MB of the scan's batches at 1M otherwise."""
_GET_QUERY = {"observation": "get_observations", "gist": "get_gists", "entity": "get_entities"}
_NODE_TABLE = {"observation": "Observation", "gist": "Gist", "entity": "Entity"}


class MemoryStore:
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
            self.root.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._write_lock = threading.RLock()
        self._acknowledged: list[str] = []
        self._vector_backlog = False
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
                # two never add up (issue 23's 1M goal).
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

    def _start_loads(self) -> None:
        """Load the in-process copies of the observation vectors in the background. A memory
        searched exactly in process (at most exact_search_max_rows observations) loads its
        exact copy only: its sketch answers nothing while that copy is held, and is loaded
        once the memory grows past the limit or a caller waits for it (wait_for_sketch).
        Loading both at open took ~250 ms of a 20k memory's two cores beside its first
        query; the exact copy alone ~150 ms."""
        sketch = self.index.sketch
        if self._exact is not None and len(self.index) > 0:
            self._sketch_deferred = sketch is not None
            self._start_loader([self._exact])
        else:  # a new memory's copies fill as it is written: nothing to defer
            self._start_loader([c for c in (self._exact, sketch) if c is not None])

    def _start_loader(self, copies: list[ExactVectors | VectorSketch]) -> None:
        if not copies:
            return
        thread = threading.Thread(
            target=self._load_copies, args=(copies,), name="emem-sketch", daemon=True
        )
        self._loaders.append(thread)
        thread.start()

    def _load_deferred_sketch(self) -> None:
        """Start loading the sketch if it was left for later (see _start_loads); once."""
        with self._loader_lock:
            if not self._sketch_deferred or self._closing.is_set():
                return
            self._sketch_deferred = False
            sketch = self.index.sketch
            if sketch is not None:
                self._start_loader([sketch])

    def close(self) -> None:
        """Confirm finished vector work in the journal and close both stores."""
        with self._loader_lock:
            self._closing.set()
            loaders = list(self._loaders)
        for loader in loaders:
            loader.join()
        with self._write_lock:
            try:
                if not self.read_only:
                    if self._acknowledged:
                        with self.graph.write() as tx:
                            tx.run("clear_vector_journal", {"ids": self._acknowledged})
                        self._acknowledged = []
                    self._release_old_vector_versions()
            finally:
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
                log.warning("vector write failed, will reconcile: %s", exc)
                self._vector_backlog = True
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
            for kind in _GET_QUERY:
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

    def get_observation(self, observation_id: str) -> Observation | None:
        """One observation by id, or None."""
        found = self.get_observations([observation_id])
        return found[0] if found else None

    def get_observations(self, ids: Sequence[str]) -> list[Observation]:
        """Observations by id, in the order given; unknown ids are skipped (from the in-process
        index, the graph for any it lacks)."""
        found = self._fetch("observation", ids)
        return [found[i] for i in ids if i in found]

    def get_gist(self, gist_id: str) -> Gist | None:
        """One gist by id, or None."""
        found = self._get_many("gist", [gist_id])
        return found[0] if found else None  # type: ignore[return-value]

    def get_gists(self, ids: Sequence[str]) -> list[Gist]:
        """Gists by id, in the order given; unknown ids are skipped."""
        found = self._fetch("gist", list(dict.fromkeys(ids)))
        return [found[i] for i in ids if i in found]

    def get_entity(self, entity_id: str) -> Entity | None:
        """One entity by id, or None."""
        found = self._get_many("entity", [entity_id])
        return found[0] if found else None  # type: ignore[return-value]

    def get_episode(self, episode_id: str) -> Episode | None:
        """One episode by id, or None."""
        rows = self.graph.query("get_episode", {"id": episode_id})
        return episode(rows[0]["e"]) if rows else None

    def get_episode_observations(self, episode_id: str) -> list[Observation]:
        """The observations that BELONG_TO an episode, in time order."""
        rows = self.graph.query("episode_observations", {"episode_id": episode_id})
        return [observation(row["o"]) for row in rows]

    def observations_in_radius(
        self,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
        include_body_state: bool = False,
        limit: int | None = None,
    ) -> list[Observation]:
        """Observations within ``radius`` of (x, y), nearest first (box scan, exact circle)."""
        rows = self.graph.query(
            "observations_in_box",
            {
                "xmin": x - radius,
                "xmax": x + radius,
                "ymin": y - radius,
                "ymax": y + radius,
                "layer": layer,
                "time_after": time_after,
                "time_before": time_before,
                "include_body_state": include_body_state,
            },
        )
        scored = [(((r["x"] - x) ** 2 + (r["y"] - y) ** 2) ** 0.5, r["id"]) for r in rows]
        inside = sorted((d, i) for d, i in scored if d <= radius)
        if limit is not None:
            inside = inside[:limit]
        return self.get_observations([i for _, i in inside])

    def observations_in_box(
        self, xmin: float, xmax: float, ymin: float, ymax: float, *, limit: int | None = None
    ) -> list[Observation]:
        """Perception observations inside an axis-aligned box, oldest first."""
        rows = self.graph.query(
            "observations_in_box",
            {
                "xmin": xmin,
                "xmax": xmax,
                "ymin": ymin,
                "ymax": ymax,
                "layer": None,
                "time_after": None,
                "time_before": None,
                "include_body_state": False,
            },
        )
        rows.sort(key=lambda r: r["timestamp"])
        if limit is not None:
            rows = rows[:limit]
        return self.get_observations([r["id"] for r in rows])

    def observations_in_time(
        self,
        time_after: float | None,
        time_before: float | None,
        *,
        layer: str | None = None,
        newest_first: bool = True,
        limit: int = 100,
        include_body_state: bool = False,
    ) -> list[Observation]:
        """Observations in a time range, newest (or oldest) first."""
        rows = self.graph.query(
            "observations_in_time",
            {
                "time_after": time_after,
                "time_before": time_before,
                "layer": layer,
                "newest_first": newest_first,
                "limit": int(limit),
                "include_body_state": include_body_state,
            },
        )
        return self.get_observations([r["id"] for r in rows])

    def nearest(
        self, vector: np.ndarray, n: int, where: VectorFilter | None = None
    ) -> list[tuple[VectorHit, Observation | Gist | Entity]]:
        """The n nearest nodes to ``vector`` that pass the prefilter, with their records."""
        return self._hydrate(self.vector_hits(vector, n, where))

    def vector_hits(
        self, vector: np.ndarray, n: int, where: VectorFilter | None = None
    ) -> list[VectorHit]:
        """The n nearest vector rows passing the prefilter (ids, kinds, similarities).

        Searched exactly in process: over gists and entities alone (the vector store's copy
        of their rows), and any search of a memory of at most ``exact_search_max_rows``
        observations (ExactVectors, with that copy). Otherwise an area is searched in process
        (the observations' vector sketch and the copy of the gist and entity rows): every
        area with ``sketch_min_rows`` 0, else one holding at least that many rows (counted
        from the in-process indexes, matching_rows); any other search by LanceDB."""
        if where is not None and where.kinds is not None and "observation" not in where.kinds:
            # Gists and entities only: the vector store's in-process copy of their rows, exact
            # (LanceDB's search skipping every observation cost 8-9 ms at 100k rows).
            return self.vectors.search_others(vector, n, where)
        found = self._exact_hits(vector, n, where)
        if found is not None:
            return found
        sketch = self.index.sketch
        # The area's row count only matters against a sketch_min_rows above 0, or to LanceDB:
        # counted only then (a pass over the area's grid cells: 0.3 ms at 100k rows).
        matching: int | None = None
        # A small memory's area is never scored by the sketch: its exact copy answers once
        # loaded, and LanceDB meanwhile scores as that copy will (the same answer either way).
        sketched = (
            sketch is not None
            and self._exact is None
            and where is not None
            and _sketch_answers(where)
        )
        if sketched and self.config.sketch_min_rows > 0:
            matching = self.matching_rows(where)
            sketched = matching is not None and matching >= self.config.sketch_min_rows
        if sketched and where is not None and self._sketch_loaded.is_set():
            found = self._sketch_hits(vector, n, where)
            if found is not None:
                return found
        # A memory searched in process once its exact copy (or, for this area, its sketch)
        # has loaded is searched by LanceDB until then: scored as in process (the same bits),
        # the answer is the same either way.
        if matching is None:
            matching = self.matching_rows(where)
        return self.vectors.search(
            vector,
            n,
            where,
            matching=matching,
            rescore=self._exact is not None or sketched,
            observation_scores=(
                sketch.scores_of_vectors if sketched and sketch is not None else None
            ),
        )

    def matching_rows(self, where: VectorFilter | None) -> int | None:
        """About how many vector rows pass an area filter, from the in-process indexes (the
        vector store would count them with a pass of the filter: 17 ms for a 1% area at 1M
        rows); None for other filters. Observations in the circle (with the filter's layer,
        time and body-state conditions) plus every entity: an estimate, since gists are left
        out and entities counted wherever they are, but it only chooses between an exact, an
        indexed and an in-process search."""
        area = _index_area(where)
        if area is None:
            return None
        return self.index.count_within(**area) + len(self.entities)

    def wait_for_sketch(self, timeout: float | None = None) -> bool:
        """Wait until the vector sketch holds every observation vector of the open, and the
        exact copy of a small memory too (both are loaded in the background, a small memory's
        sketch only from this call or once the memory grows past exact_search_max_rows;
        LanceDB answers meanwhile). True when loaded, False on timeout or with the sketch
        off."""
        if self.index.sketch is None:
            return False
        self._load_deferred_sketch()
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._sketch_loaded.wait(timeout):
            return False
        if self._exact is None:
            return True
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        return self._exact_loaded.wait(left)  # the exact copy, loaded on its own

    def dense_in_process(self, where: VectorFilter | None) -> bool:
        """Whether vector_hits answers ``where`` in process without LanceDB (gists and
        entities alone, or a small memory's exact search): nothing to overlap with another
        search on a thread, whose handoff would only add to the call."""
        if where is not None and where.kinds is not None and "observation" not in where.kinds:
            return True
        return self.exact_search and len(self.index) <= self.config.exact_search_max_rows

    @property
    def exact_search(self) -> bool:
        """Whether vector searches are answered exactly in process now (a memory of at most
        ``exact_search_max_rows`` observations, once their vectors are loaded at open)."""
        return self._exact is not None and self._exact_loaded.is_set()

    def _exact_hits(
        self, vector: np.ndarray, n: int, where: VectorFilter | None
    ) -> list[VectorHit] | None:
        """The search of vector_hits over every row in process, exact, or None when the
        memory keeps no exact copy (grown past exact_search_max_rows, or still loading)."""
        exact = self._exact
        if exact is None or not self._exact_loaded.is_set():
            return None
        if len(self.index) > self.config.exact_search_max_rows:
            self._exact = None  # grown past the limit: LanceDB's index from now on
            self._load_deferred_sketch()
            return None
        if n < 1:
            return []
        # The last question's scores are kept until the next write to the index or the copy:
        # semantic_search asks the same question again for more results when records of one
        # text share a line.
        version = self.index.version[0]
        total = len(self.index)
        key = (np.asarray(vector).tobytes(), repr(where), version, exact.version, total)
        kept = self._exact_kept
        if kept is not None and kept[0] == key and kept[1] is exact:
            rows, scores = kept[2], kept[3]
        else:
            rows = np.flatnonzero(self.index.admitted(np.arange(total), where))
            if rows.size * EXACT_GATHER_SHARE < total:
                # A selective filter (an area, a time window): score the admitted rows only.
                scores = exact.scores_of(vector, rows)
            else:
                scores = exact.scores(vector, total)[rows]
            held = np.flatnonzero(~np.isnan(scores))
            rows, scores = rows[held], scores[held]
            self._exact_kept = (key, exact, rows, scores)
        best = _best(scores, n)
        hits = [
            VectorHit(
                id=self.index.id_of(int(rows[at])), kind="observation", score=float(scores[at])
            )
            for at in best.tolist()
        ]
        kinds = ("gist", "entity") if where is None or where.kinds is None else where.kinds
        others = tuple(k for k in kinds if k != "observation")
        if others:
            hits += self.vectors.search_others(
                vector, n, replace(where or VectorFilter(), kinds=others)
            )
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:n]

    def _sketch_hits(
        self, vector: np.ndarray, n: int, where: VectorFilter
    ) -> list[VectorHit] | None:
        """An area search in process, or None when the filter has conditions the observation
        index does not hold (_sketch_answers; then LanceDB searches)."""
        area = _index_area(where)
        if area is None or not _sketch_answers(where):
            return None
        nearest = self.index.nearest_to_vector(vector, limit=n, **area)
        hits = [VectorHit(id=i, kind="observation", score=s) for i, s in nearest]
        others = tuple(k for k in where.kinds or ("gist", "entity") if k != "observation")
        if others:
            hits += self.vectors.search_others(vector, n, replace(where, kinds=others))
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:n]

    def keyword(
        self, text: str, n: int, where: VectorFilter | None = None
    ) -> list[tuple[VectorHit, Observation | Gist | Entity]]:
        """The n best keyword (BM25) matches that pass the prefilter, with their records."""
        hits = [
            VectorHit(id=hit.id, kind=hit.kind, score=hit.score)
            for hit in self.keyword_hits(terms(text), n, where)
        ]
        return self._hydrate(hits)

    def keyword_hits(
        self, query_terms: Sequence[str], n: int, where: VectorFilter | None = None
    ) -> list[KeywordHit]:
        """The ``n`` best BM25 matches of ``query_terms`` (keyword_index.terms of a request)
        passing the prefilter, best first, ties by id: observations, gists and entities scored
        as one collection by the in-process keyword indexes, so the same texts always give the
        same scores (LanceDB's full-text scores change as its index catches up)."""
        if n < 1 or not query_terms:
            return []
        others, columns = self.vectors.keyword_others()
        listed = columns.rows
        # Observations still count in the collection's statistics when the filter leaves
        # them out (search_gists), but their matches are not scored. They are scored once per
        # distinct text: a robot repeats itself (a 1M patrol holds ~8,600 texts).
        wanted = where is None or where.kinds is None or "observation" in where.kinds
        keywords = self.index.keywords()
        observed, other = bm25(
            [keywords, others], query_terms, scored=(wanted, True), by_text=(True, False)
        )
        hits: list[KeywordHit] = []
        if observed.rows.shape[0]:
            hits += self._best_observations(keywords, observed, n, where)
        # The gist and entity rows are listed by id: best first by (score, row) is by (score,
        # id), and the filter is asked only until n rows have passed it.
        order = np.lexsort((other.rows, -other.scores))
        if where is not None:
            # The rows of other kinds or outside an area left out at once (a 1% area at 1M
            # rows walked ~500 entities elsewhere, one admits_row each).
            order = order[columns.kinds_and_circle(where)[other.rows[order]]]
        taken = 0
        for at in order.tolist():
            if taken == n:
                break
            found = listed[int(other.rows[at])]
            if where is None or where.admits_row(found):
                hits.append(
                    KeywordHit(
                        found.id, found.kind, float(other.scores[at]), float(other.coverage[at])
                    )
                )
                taken += 1
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:n]

    def _best_observations(
        self, keywords: KeywordIndex, texts: Matches, n: int, where: VectorFilter | None
    ) -> list[KeywordHit]:
        """The n best observations by (score, id) passing ``where``, of a BM25 scored by
        distinct text (``texts.rows`` are text numbers): the texts are walked best first in
        blocks (doubling) that end where the score changes, each block's rows filtered at
        once, until n rows have passed; every text left then scores lower than they do.
        An area is read from its own side instead (_best_in_area)."""
        found = self._best_in_area(keywords, texts, n, where)
        if found is not None:
            return found
        total = texts.scores.shape[0]
        wanted = max(4 * n, 8 * FIRST_TEXT_BLOCK)
        order = _best_first(texts.scores, wanted)
        descending = -texts.scores[order]  # ascending: searchsorted finds a tie group's end
        rows_found: list[np.ndarray] = []
        texts_found: list[np.ndarray] = []
        passed, start, block = 0, 0, FIRST_TEXT_BLOCK
        while passed < n:
            if start >= order.shape[0]:
                if order.shape[0] == total:
                    break
                # Every text read and too few rows passed (a selective filter): the next
                # best texts; the longer order starts with the one walked so far.
                wanted *= 8
                order = _best_first(texts.scores, wanted)
                descending = -texts.scores[order]
                continue
            stop = min(order.shape[0], start + block)
            stop = int(np.searchsorted(descending, descending[stop - 1], side="right"))
            chosen = order[start:stop]
            rows, owner = keywords.rows_of_texts(texts.rows[chosen].tolist())
            keep = self.index.admitted(rows, where)
            rows_found.append(rows[keep])
            texts_found.append(chosen[owner[keep]])
            passed += int(np.count_nonzero(keep))
            start, block = stop, 2 * block
        if not rows_found:
            return []
        return self._text_hits(texts, np.concatenate(rows_found), np.concatenate(texts_found), n)

    def _best_in_area(
        self, keywords: KeywordIndex, texts: Matches, n: int, where: VectorFilter | None
    ) -> list[KeywordHit] | None:
        """_best_observations for a filter with a circle, from the circle's side: its rows
        (the observation index's grid), those passing the whole filter, each scored by its
        text. The walk by text expands the best texts into every row holding them, most of
        them outside a small area (a 1% area at 100k rows: 3.3 ms, of which ~3 went to
        rows of other places). None when the filter has no circle or the circle's cells
        hold a large share of the rows (then the walk stops early)."""
        if where is None or where.center is None or where.radius is None:
            return None
        x, y, radius = float(where.center[0]), float(where.center[1]), float(where.radius)
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(radius)) or radius < 0:
            return None
        # A hair wider than the circle: admitted() then decides the edge as the walk does.
        rows = self.index.rows_in_circle(x, y, radius * (1.0 + 1e-9) + 1e-9)
        if rows is None:
            return None
        rows = rows[self.index.admitted(rows, where)]
        text_of = keywords.texts_of_rows(rows)
        # texts.rows: the matched text numbers, ascending (never empty here).
        at = np.minimum(np.searchsorted(texts.rows, text_of), texts.rows.shape[0] - 1)
        matched = (text_of >= 0) & (texts.rows[at] == text_of)
        return self._text_hits(texts, rows[matched], at[matched], n)

    def _text_hits(
        self, texts: Matches, rows: np.ndarray, of_text: np.ndarray, n: int
    ) -> list[KeywordHit]:
        """The n best of these observation rows by (score, id), each scored by its matched
        text (``of_text``: its position in ``texts``)."""
        scores = texts.scores[of_text]
        best = _best(scores, n)
        return [
            KeywordHit(
                self.index.id_of(int(rows[at])),
                "observation",
                float(scores[at]),
                float(texts.coverage[of_text[at]]),
            )
            for at in _cut_by_id(scores, best, n, lambda at: self.index.id_of(int(rows[at])))
        ]

    def last_ended_episode_id(self) -> str | None:
        """The episode that ended most recently (what a new episode FOLLOWS)."""
        rows = self.graph.query("last_ended_episode")
        return rows[0]["id"] if rows else None

    def active_episode_ids(self) -> list[str]:
        """Episodes still marked active, oldest first."""
        return [row["id"] for row in self.graph.query("active_episodes")]

    def episode_last_time(self, episode_id: str) -> float | None:
        """Time of an episode's latest observation, or None when it has none."""
        rows = self.graph.query("episode_last_observation_time", {"id": episode_id})
        return rows[0]["t"] if rows else None

    def latest_perception_position(self) -> np.ndarray | None:
        """Position of the latest perception observation, or None on an empty memory."""
        return self.index.latest_perception_position()

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

    def _follow_vectors(
        self, rows: Sequence[VectorRow], stored: np.ndarray | None, deleted: Sequence[str]
    ) -> None:
        """Keep the sketch and the exact copy with the observation vectors LanceDB holds (a
        VectorStore listener, in the writer's thread): the stored values, as the loader at
        open reads them. The exact copy is dropped once the memory has grown past
        exact_search_max_rows."""
        exact = self._exact
        if exact is not None and len(self.index) > self.config.exact_search_max_rows:
            self._exact = exact = None
            self._load_deferred_sketch()  # areas are searched with it from now on
        copies = [c for c in (self.index.sketch, exact) if c is not None]
        if not copies:
            return
        chosen = [at for at, r in enumerate(rows) if r.kind == "observation"]
        if chosen and stored is not None:
            placed = self.index.rows_of([rows[at].id for at in chosen])
            for copy in copies:
                copy.put(placed, stored[chosen])
        if deleted:
            gone = self.index.rows_of(list(deleted))
            for copy in copies:
                copy.clear(gone)

    def _load_copies(self, copies: list[ExactVectors | VectorSketch]) -> None:
        """Fill these copies (the sketch, the exact copy) with the observation vectors
        LanceDB holds (in the background: 4-5 s at 1M observations). Vectors the writer put
        meanwhile win."""
        sketch = next((c for c in copies if c is self.index.sketch), None)
        exact = next((c for c in copies if c is self._exact), None)
        copies = list(copies)
        batches_read = 0
        try:
            if copies:
                for copy in copies:
                    copy.reserve(len(self.index))  # once, not grown batch by batch
                with closing(self.vectors.scan_vectors("observation")) as batches:
                    for ids, vectors in batches:
                        if self._closing.is_set():
                            return
                        if exact is not None and self._exact is None:
                            copies.remove(exact)  # grown past the limit meanwhile
                            exact = None
                            if not copies:
                                return
                        finite = np.isfinite(vectors).all(axis=1)
                        if not finite.all():
                            # Bytes damaged inside a data file (Lance keeps no checksums):
                            # such rows are left to LanceDB, which ranks them last.
                            log.warning(
                                "%d stored vectors hold NaN or infinity (a damaged vector "
                                "file); delete %s to have them rebuilt from the graph",
                                int((~finite).sum()),
                                self.root / VECTOR_DIR,
                            )
                            ids = [i for i, ok in zip(ids, finite, strict=True) if ok]
                            vectors = vectors[finite]
                        placed = self.index.rows_of(ids)
                        for copy in copies:
                            copy.put(placed, vectors, only_missing=True)
                        batches_read += 1
                        if batches_read % RELEASE_EVERY_BATCHES == 0:
                            release_free_memory()  # the scan's batches, as it goes
                release_free_memory()
                if sketch is not None:
                    self._sketch_loaded.set()
                if exact is not None:
                    self._exact_loaded.set()
        except (StorageError, OSError, RuntimeError, ValueError) as exc:
            # Searches go on through LanceDB: slower in large areas, never wrong.
            log.warning("vector sketch not loaded, areas are searched by LanceDB: %s", exc)

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
            # The graph holds the nodes and the journal holds the work: retried before the next
            # write, and on the next open. Nothing is lost.
            log.warning("vector write failed, will reconcile: %s", exc)
            self._vector_backlog = True
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

    def _get_many(self, kind: str, ids: Sequence[str]) -> list[Observation | Gist | Entity]:
        if not ids:
            return []
        nodes = self._fetch(kind, ids)
        return [nodes[i] for i in ids if i in nodes]

    def _fetch(self, kind: str, ids: Sequence[str]) -> dict[str, Any]:
        """Records of ``kind`` by id (observations and entities from the in-process indexes,
        the graph for any observation the index lacks; primary-key lookups for short lists)."""
        if not ids:
            return {}
        if kind == "entity":
            return self.entities.get(ids)
        if kind == "observation":
            # A graph round trip per search (locate, recall, nearest) was half of locate's
            # time at 20k observations: 6 of 11 ms.
            found: dict[str, Any] = self.index.records(ids)
            missing = [i for i in ids if i not in found]
            if missing:
                found.update(self._fetch_nodes(kind, missing))
            return found
        if kind == "gist":
            # Gists are few and change only with a write: kept until the graph's next one
            # (a graph round trip per search_gists call was most of its time).
            return self._reads.gists(ids, self._fetch_nodes)
        return self._fetch_nodes(kind, ids)

    def _fetch_nodes(self, kind: str, ids: Sequence[str]) -> dict[str, Any]:
        rows = self.graph.nodes_by_id(_NODE_TABLE[kind], ids, _GET_QUERY[kind])
        return nodes_by_id(rows, kind)

    def cached_read(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        """``read()``'s result, kept until the graph's next write transaction: for reads of the
        graph alone whose answer is small (an episode's span, the recent episodes). The result
        is shared by later calls: callers must not change it."""
        return self._reads.get(key, read)

    def _hydrate(
        self, hits: list[VectorHit]
    ) -> list[tuple[VectorHit, Observation | Gist | Entity]]:
        records: dict[str, Observation | Gist | Entity] = {}
        for kind in _GET_QUERY:
            ids = [h.id for h in hits if h.kind == kind]
            if ids:
                records.update(self._fetch(kind, ids))
        # A hit whose node is gone (deleted between the two stores) is dropped, not returned.
        return [(h, records[h.id]) for h in hits if h.id in records]


T = TypeVar("T")

EXACT_GATHER_SHARE = 4
"""An exact search whose filter admits fewer than 1 / EXACT_GATHER_SHARE of the rows gathers
and scores those rows only; a wider one scores every row in one product and picks (gathering
copies the rows: slower than the product over all of them past about a quarter)."""

GRAPH_READS_MAX = 4096
"""Results GraphReads keeps at most between two writes (then it starts over)."""


class GraphReads:
    """Small graph reads kept until the graph's next write transaction (GraphDB.generation):
    between two writes (two flushes or consolidations) the same question gets the same answer
    without a round trip. Thread-safe; a read racing a write is kept under the generation
    taken before it, so it is dropped at the write's end (GraphDB.write)."""

    def __init__(self, graph: GraphDB) -> None:
        self._graph = graph
        self._lock = threading.Lock()
        self._generation = -1
        self._values: dict[tuple[Any, ...], Any] = {}
        self._gists: dict[str, Gist] = {}

    def _current(self) -> int:
        """The graph's generation, with the kept results cleared when it moved (under _lock)."""
        generation = self._graph.generation
        if generation != self._generation or len(self._values) > GRAPH_READS_MAX:
            self._values.clear()
            self._gists.clear()
            self._generation = generation
        return generation

    def get(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        with self._lock:
            generation = self._current()
            if key in self._values:
                found: T = self._values[key]
                return found
        value = read()
        with self._lock:
            if self._current() == generation:
                self._values[key] = value
        return value

    def gists(
        self, ids: Sequence[str], fetch: Callable[[str, Sequence[str]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Gists by id (unknown ids left out): kept ones as copies, the others fetched."""
        with self._lock:
            generation = self._current()
            found = {i: self._gists[i].model_copy() for i in ids if i in self._gists}
        missing = [i for i in ids if i not in found]
        if missing:
            fetched = fetch("gist", missing)
            with self._lock:
                if self._current() == generation and len(self._gists) < GRAPH_READS_MAX:
                    self._gists.update({i: g.model_copy() for i, g in fetched.items()})
            found.update(fetched)
        return found


def _best_first(scores: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` highest ``scores`` and of every score tied with the
    count-th, best first (equal scores by position): a longer count's order starts with a
    shorter one's."""
    chosen = _best(scores, count)
    return chosen[np.argsort(-scores[chosen], kind="stable")]


def _cut_by_id(
    scores: np.ndarray, best: np.ndarray, n: int, id_of: Callable[[int], str]
) -> list[int]:
    """Of the positions ``best`` (_best's: the n highest ``scores`` and every one tied with
    the n-th), the n first by score, then id (``id_of`` a position), best first; only the
    tie group at the n-th place has its ids read."""
    if best.shape[0] <= n:
        return sorted(best.tolist(), key=lambda at: (-scores[at], id_of(at)))
    chosen = scores[best]
    kth = np.partition(chosen, chosen.shape[0] - n)[chosen.shape[0] - n]
    above = best[chosen > kth].tolist()
    tied = heapq.nsmallest(n - len(above), best[chosen == kth].tolist(), key=id_of)
    return sorted(above, key=lambda at: (-scores[at], id_of(at))) + tied


def _best(scores: np.ndarray, n: int) -> np.ndarray:
    """Positions of the ``n`` highest scores, and of every score tied with the n-th (so that
    the caller's tie break on ids decides, not the order of the rows)."""
    if scores.shape[0] <= n:
        return np.arange(scores.shape[0])
    kth = np.partition(scores, scores.shape[0] - n)[scores.shape[0] - n]
    return np.flatnonzero(scores >= kth)


def _sketch_answers(where: VectorFilter) -> bool:
    """Whether _sketch_hits can answer an area filter: every condition held by the
    observation index (_index_area: kinds that include observations, one layer at most),
    archived rows left out and nothing else, body states alone left out if any."""
    if _index_area(where) is None or where.tiers is not None:
        return False
    if set(where.exclude_tiers or ()) != {"archived"}:
        return False  # the index never answers archived rows, and only leaves those out
    return set(where.exclude_source_types or ()) <= {INTEROCEPTION}


def _index_area(where: VectorFilter | None) -> dict[str, Any] | None:
    """The observation-index reading (count_within / nearest_to_vector keywords) of an area
    filter, or None when the filter has no circle or a condition the index does not hold
    (a box, an episode, a source-type list, kinds without observations, several layers)."""
    if where is None or where.center is None or where.radius is None:
        return None
    if where.box is not None or where.episode_id is not None or where.source_types:
        return None
    if where.kinds is not None and "observation" not in where.kinds:
        return None
    layers = where.layers
    if layers is not None and len(layers) != 1:
        return None
    radius = float(where.radius)
    if not math.isfinite(radius) or radius < 0:
        return None  # the vector store gives the error
    return {
        "x": float(where.center[0]),
        "y": float(where.center[1]),
        "radius": radius,
        "layer": None if layers is None else layers[0],
        "time_after": where.time_after,
        "time_before": where.time_before,
        "include_body_state": (
            not where.exclude_source_types or INTEROCEPTION not in where.exclude_source_types
        ),
    }
