"""SpatioTemporalMemory: the facade a robot meets first (a drop-in for eMEM's class)."""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import numpy as np

from emem_graph import validation
from emem_graph.areas import AreaMemory
from emem_graph.capability import Capability
from emem_graph.config import DEFAULT_DB_PATH, MemoryConfig, provider_dim
from emem_graph.config import settle as settle_config
from emem_graph.consolidation.engine import ConsolidationEngine
from emem_graph.consolidation.entities import Sighting
from emem_graph.consolidation.stay_reads import StayReads
from emem_graph.errors import (
    EmbeddingDimensionError,
    InvalidInputError,
    MemoryClosedError,
    ReadOnlyMemoryError,
    StorageError,
)
from emem_graph.gate import CallGate, Delegated, while_open, writes
from emem_graph.ingest.buffer import IngestBuffer
from emem_graph.ingest.embedding_cache import EmbeddingCache
from emem_graph.ingest.embeddings import EmbeddingProvider, make_embedder
from emem_graph.models import (
    AGENT_NOTE,
    INTEROCEPTION,
    Episode,
    Observation,
)
from emem_graph.profile import UserProfile
from emem_graph.retrieval.tools import RetrievalTools
from emem_graph.spatial import SpatialTools
from emem_graph.storage.store import MemoryStore
from emem_graph.writer import ENTITY_SIGHTING, Item, MemoryWriter, Pending

log = logging.getLogger(__name__)


class SpatioTemporalMemory:
    """A robot's memory of what it perceived, where and when, in one directory.

    Args:
        db_path: the memory's directory (graph and vectors live inside it).
        config: a MemoryConfig (or a dict of its fields). An explicit db_path wins over a
            config left at the default path; two different explicit paths are a ConfigError.
            A given embedding_provider's dim is taken unless the config sets embedding_dim.
        embedding_provider: object with ``dim`` and ``embed(list[str]) -> (N, dim) array``;
            default: the provider named by the config (all-MiniLM-L6-v2).
        llm_client: summariser / entity extractor used by consolidation (an LLMClient, e.g.
            OllamaLLM); None: the one config.llm_provider names, by default none (built-in
            fallbacks).
        get_current_time: clock in float seconds used for every time decision (default
            time.time); a simulation clock that starts at 0 is fine. Each reading is checked
            as a ``timestamp=`` is: a reading that is not a number, not finite or outside
            years 2-9998 (nanoseconds, say) fails the call that read it with
            InvalidInputError, and that call writes nothing.
        read_only: open an existing memory for reading only: the graph in the engine's
            read-only mode (it refuses any write itself), the vector table only read, no
            background work, nothing in the directory created or changed. The retrieval and
            capability tools answer as on a read-write open; every method that writes raises
            ReadOnlyMemoryError. Several processes may hold one memory read-only at once,
            none while a process holds it read-write.

    Raises:
        ConfigError: invalid configuration, or db_path and config.db_path disagree.
        DatabaseInUseError: db_path is already open in this process (use that instance).
        DatabaseLockedError: db_path is open in another process.
        SchemaVersionError: db_path holds a memory of another schema or embedding dimension.
        BackendUnavailableError: the embedding model cannot be loaded.
        InvalidInputError: ``read_only`` and db_path holds no memory (none is created).
        RecoveryNeededError: ``read_only`` and the memory needs a read-write open first
            (a process stopped without closing it, or an older schema version).
    """

    def __init__(
        self,
        db_path: str = DEFAULT_DB_PATH,
        config: MemoryConfig | dict[str, Any] | None = None,
        embedding_provider: EmbeddingProvider | None = None,
        llm_client: Any = None,
        get_current_time: Callable[[], float] | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self.read_only = read_only
        """Opened for reading only (see the class): every write method raises
        ReadOnlyMemoryError."""
        config = settle_config(
            db_path,
            config,
            None if embedding_provider is None else provider_dim(embedding_provider),
        )
        self.config = config
        self.embedder = (
            embedding_provider if embedding_provider is not None else (make_embedder(config))
        )
        if self.embedder.dim != config.embedding_dim:
            raise EmbeddingDimensionError(
                f"the embedder gives {self.embedder.dim}-dimensional vectors but "
                f"config.embedding_dim is {config.embedding_dim}"
            )
        self.llm_client = llm_client
        self._clock: Callable[[], float] = (
            time.time if get_current_time is None else validation.checked_clock(get_current_time)
        )
        self._clock()  # a clock that gives no time is refused before anything opens
        self._embeddings = EmbeddingCache(self.embedder, config.embedding_cache_size)
        self._embedding_cache = self._embeddings.entries
        self._state_lock = threading.RLock()
        self._closed = False
        self._gate = CallGate()  # public calls vs close(): MemoryClosedError, never a store error
        self._store = MemoryStore(config, self.embedder, read_only=read_only)
        try:
            self._open(config, llm_client)
        except BaseException:
            # A construction failing half-way closes what it opened: the directory is free
            # again (a retry in this process is not refused as a second open).
            self._abandon()
            raise

    def _open(self, config: MemoryConfig, llm_client: Any) -> None:
        """Everything after the store: consolidation, recovery, the capabilities, the buffer."""
        self._consolidation = ConsolidationEngine(
            self._store,
            config,
            embed=self.embed,
            clock=self._clock,
            llm_client=llm_client,
            background=not self.read_only,
        )
        self._episode_stack: list[str] = []
        self._last_ended: str | None = None
        """The episode this process ended last (the next one FOLLOWS it)."""
        self._position = self._store.latest_perception_position()
        self._working: deque[Observation] = deque(maxlen=config.working_memory_size)
        self._capabilities: list[Capability] = []
        # Capabilities, one block each (their code lives in their own packages):
        # capability: spatial
        self.places = SpatialTools(self, self._store, self._clock)
        """The topological map (places, routes) and the spatial tools (emem_graph.spatial)."""
        self._capabilities.append(self.places)
        # capability: areas
        self.areas = AreaMemory(
            self, self._store, clock=self._clock, guard=self._consolidation.guard
        )
        self._capabilities.append(self.areas)
        # capability: profile
        self.profile = UserProfile(self, self._store, clock=self._clock)
        """Users' personal knowledge (facts, routines) grounded in entities (emem_graph.profile)."""
        self._capabilities.append(self.profile)
        self._writer = MemoryWriter(
            self._store,
            self._consolidation,
            config,
            embed=self.embed,
            embeddings=self._embeddings,
            clock=self._clock,
            capabilities=self._capabilities,
            warm_entity_lines=lambda entities: self.tools.warm_entity_lines(entities),
            read_only=self.read_only,
        )
        # No flush thread for a read-only memory: nothing can be added to it.
        self._buffer = self._writer.buffer
        self._writer.open()
        if not self.read_only:  # read-only: the store refused a memory needing these
            # After the rows a failed close kept are written: an episode's recovery reads
            # every observation it holds.
            self._close_interrupted_episodes()
            self._consolidation.recover()

    def _abandon(self) -> None:
        """Stop and close whatever a failed construction opened (never raises)."""
        self._closed = True
        stops: list[Callable[[], object]] = []
        if "_consolidation" in self.__dict__:
            stops.append(self._consolidation.stop)
        stops.extend(capability.close for capability in self.__dict__.get("_capabilities", []))
        stops.append(self._store.close)
        for stop in stops:
            try:
                stop()
            except Exception:
                log.exception("closing a memory whose construction failed")

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> SpatioTemporalMemory:
        self._check_open()  # a closed memory is not entered again
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @while_open
    def flush(self) -> int:
        """Write every buffered observation (and staged entity sighting) now. Returns how many
        observations were written (0 on a read-only memory: nothing can be buffered there;
        every tool flushes first)."""
        self._check_open()
        if self._buffer is None:
            return 0
        written = self._buffer.flush()
        self._consolidation.flush_entities(staged_only=True)
        return written

    def save(self) -> None:
        """Make everything added so far durable (eMEM's save())."""
        self.flush()

    @writes
    @while_open
    def catch_up(self) -> None:
        """Flush, then bring what the capabilities derive from the memory up to date (the
        places' entity links, the area forest): the upkeep a tool of theirs does before it
        answers, done now (after a bulk load, before a robot starts asking)."""
        self.flush()
        for capability in self._capabilities:
            capability.flush_before_tool()

    def close(self) -> None:
        """Flush, finish queued consolidation (with the built-in fallbacks: closing never
        waits on an LLM), stop the background threads and close the stores (idempotent: a
        close() racing another from a second thread returns once the first is done)."""
        # Refuse new calls, wait for those inside: a call racing close() finishes or raises
        # MemoryClosedError, and every add that returned is written by the buffer's last flush.
        if not self._gate.close():
            return
        self._closed = True
        try:
            self._close_all()
        finally:
            self._gate.finished()

    def _close_all(self) -> None:
        stopped: StorageError | None = None
        try:
            try:
                self._writer.stop()
            except StorageError as exc:
                stopped = exc  # raised below, after the rest is closed: it says where
        finally:
            try:
                self._consolidation.stop()
                if not self.read_only:
                    try:
                        self._writer.flush_entities_at_close(stopped)
                    except StorageError as exc:
                        stopped = exc  # raised below, once the rest is closed
                for capability in self._capabilities:
                    capability.close()
                if "tools" in self.__dict__:  # built on first use (functools.cached_property)
                    self.tools.close()
            finally:
                self._store.close()
        if stopped is not None:
            raise stopped

    @property
    def store(self) -> MemoryStore:
        """The store with eMEM's read helpers (get_observation, get_episode, ...); flushed first
        so that everything added is visible."""
        self.flush()
        return self._store

    # --- writing -------------------------------------------------------------------------------

    @writes
    @while_open
    def add(
        self,
        text: str,
        x: float,
        y: float,
        z: float = 0.0,
        timestamp: float | None = None,
        layer_name: str = "default",
        source_type: str = "manual",
        confidence: float = 1.0,
        metadata: dict[str, Any] | None = None,
        embedding: Any = None,
    ) -> str:
        """Remember ``text`` perceived at (x, y, z); returns its id at once (written in batches).

        Raises:
            InvalidInputError: NaN/inf coordinates or beyond +-validation.MAX_COORDINATE (1e9 m),
                empty or over-long text, confidence outside [0, 1], metadata that is not JSON,
                an embedding of the wrong dimension.
        """
        self._check_open()
        observation = Observation(
            id=uuid.uuid4().hex,
            text=validation.text("text", text, self.config.max_text_chars),
            x=validation.coordinate("x", x),
            y=validation.coordinate("y", y),
            z=validation.coordinate("z", z),
            timestamp=self._time(timestamp),
            layer_name=validation.name("layer_name", layer_name),
            source_type=validation.name("source_type", source_type),
            confidence=validation.confidence(confidence),
            metadata=validation.metadata(metadata, self.config.max_metadata_chars),
            episode_id=self.active_episode_id,
            tier="working",
        )
        vector = None if embedding is None else validation.embedding(embedding, self.embedder.dim)
        self._writer.add(Pending(observation, vector))
        with self._state_lock:
            self._working.append(observation)
            if source_type not in (INTEROCEPTION, AGENT_NOTE):
                self._position = observation.coordinates
        return observation.id

    @writes
    def add_body_state(
        self,
        text: str,
        layer_name: str,
        x: float = 0.0,
        y: float = 0.0,
        z: float = 0.0,
        timestamp: float | None = None,
        confidence: float = 1.0,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Remember a reading of the robot's own state (battery, temperature...): an
        observation with source_type "interoception", kept out of perception results."""
        return self.add(
            text,
            x,
            y,
            z,
            timestamp=timestamp,
            layer_name=layer_name,
            source_type=INTEROCEPTION,
            confidence=confidence,
            metadata=metadata,
        )

    @writes
    @while_open
    def add_entity(
        self,
        name: str,
        x: float,
        y: float,
        z: float = 0.0,
        timestamp: float | None = None,
        entity_type: str | None = None,
        confidence: float = 1.0,
        layer_name: str = "default",
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Record a sighting of a persistent entity (the red chair by the door) at (x, y, z);
        returns the entity's id.

        It goes through the same merge as extracted entities: an entity of a matching name
        within entity_spatial_radius is updated in place (count, running position estimate,
        first/last seen); otherwise a new entity is created.
        """
        self._check_open()
        sighting = Sighting(
            name=validation.name("name", name, self.config.max_text_chars),
            x=validation.coordinate("x", x),
            y=validation.coordinate("y", y),
            z=validation.coordinate("z", z),
            timestamp=self._time(timestamp),
            layer=validation.name("layer_name", layer_name),
            entity_type=None
            if entity_type is None
            else validation.name("entity_type", entity_type),
            confidence=validation.confidence(confidence),
            metadata=validation.metadata(metadata, self.config.max_metadata_chars),
        )
        entity_id = self._consolidation.add_entity(sighting)
        self._ingest().add(ENTITY_SIGHTING)
        return entity_id

    # --- episodes ------------------------------------------------------------------------------

    @property
    def active_episode_id(self) -> str | None:
        """The innermost active episode, or None."""
        with self._state_lock:
            return self._episode_stack[-1] if self._episode_stack else None

    @writes
    @while_open
    def start_episode(
        self,
        name: str,
        metadata: dict[str, Any] | None = None,
        parent_episode_id: str | None = None,
    ) -> str:
        """Start an episode; observations added from now on BELONG_TO it.

        Without a parent, any active episode is ended first (explicitly, never orphaned). With
        ``parent_episode_id`` the new episode is a SUBTASK_OF that episode and nests inside it
        (episodes nested deeper than the parent are ended). Every new episode FOLLOWS the episode
        that ended before it.
        """
        self._check_open()
        label = validation.name("name", name, 1000)
        meta = validation.metadata(metadata, self.config.max_metadata_chars)
        parent_episode_id = validation.optional_text("parent_episode_id", parent_episode_id)
        with self._state_lock:
            if parent_episode_id is not None:
                if self._store.get_episode(parent_episode_id) is None:
                    raise InvalidInputError(f"parent episode {parent_episode_id!r} does not exist")
                keep = (
                    self._episode_stack.index(parent_episode_id) + 1
                    if parent_episode_id in self._episode_stack
                    else 0
                )
            else:
                keep = 0
            while len(self._episode_stack) > keep:
                self._end_top("completed", consolidate=True)
            episode = Episode(
                id=uuid.uuid4().hex,
                name=label,
                start_time=self._clock(),
                status="active",
                parent_episode_id=parent_episode_id,
                metadata=meta,
            )
            # The episode this process ended last: the graph's latest end_time cannot tell
            # apart episodes ended at one clock time (a paused simulation clock).
            follows = self._last_ended or self._store.last_ended_episode_id()
            self._store.create_episode(episode, follows=follows, parent=parent_episode_id)
            self._episode_stack.append(episode.id)
            return episode.id

    @writes
    def end_episode(self, consolidate: bool = True, wait: bool = False) -> str | None:
        """End the innermost active episode; returns its id, or None when none is active.

        The episode is closed at once. With ``consolidate``, the background worker extracts the
        entities of its observations and writes one gist per time chunk (split at gaps longer
        than consolidation_window) plus the episode's summary; ``wait`` blocks until that is
        done. A failing, slow or absent LLM gives the built-in fallback gist: it never leaves
        the episode active or unconsolidated.

        Raises:
            StorageError: with ``wait``, the gists could not be written (the episode is closed
                and stays marked for consolidation, retried on the next open).
        """
        # Only the store write is inside the gate: close() does not wait for ``wait`` (it
        # finishes the job itself, with the built-in fallbacks).
        with self._gate:
            self._check_open()
            with self._state_lock:
                if not self._episode_stack:
                    return None
                episode_id, job = self._end_top("completed", consolidate)
        if job is not None and wait:
            job.result()
        return episode_id

    # --- consolidation -------------------------------------------------------------------------

    @property
    def consolidation(self) -> ConsolidationEngine:
        """The consolidation engine (gists, tiers, entities, its worker and counters)."""
        return self._consolidation

    @writes
    @while_open
    def consolidate_time_window(self) -> list[str]:
        """Consolidate short-term observations older than consolidation_window that belong to
        no episode: clusters (HDBSCAN on position, split at time gaps) of at least
        consolidation_min_samples become gists; the rest stays short_term. Returns the new gist
        ids. Also runs every maintenance_interval in the background."""
        self._check_open()
        self.flush()
        return self._consolidation.consolidate_time_window()

    @writes
    @while_open
    def maintenance(self) -> int:
        """Archive long-term observations older than archive_after_seconds: their raw text and
        vectors are dropped, their gists stay searchable. Returns how many were archived. Also
        runs every maintenance_interval in the background."""
        self._check_open()
        return self._consolidation.maintenance()

    @writes
    @while_open
    def extract_entities(self) -> int:
        """Extract entities from every observation still waiting for it, now (normally done
        in the background every entity_extract_flush_interval flushes or
        entity_extract_time_interval seconds). Returns the number of sightings merged."""
        self._check_open()
        self.flush()
        return self._consolidation.extract_now()

    # --- reading helpers -----------------------------------------------------------------------

    @property
    def current_position(self) -> np.ndarray | None:
        """The last perception position [x, y, z] (body state does not move it), or None."""
        with self._state_lock:
            return None if self._position is None else self._position.copy()

    @while_open
    def get_recent(self, n: int | None = None) -> list[Observation]:
        """The ``n`` most recent observations (default working_memory_size), oldest first."""
        with self._state_lock:
            recent = list(self._working)
        set_aside = self._writer.set_aside_ids
        if set_aside:
            recent = [o for o in recent if o.id not in set_aside]
        if n is None:
            return recent
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise InvalidInputError(f"n must be a whole number >= 0, got {n!r}")
        return recent[-int(n) :] if n else []

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts with the memory's provider (serialised: models are not thread-safe).
        Each distinct text is embedded once; the last embedding_cache_size texts are kept.

        Raises:
            InvalidInputError: ``texts`` is not a list of strings (one string alone is refused,
                not embedded letter by letter), or a text UTF-8 cannot encode.
        """
        return self._embeddings.embed(validation.text_list("texts", texts))

    # --- internals -----------------------------------------------------------------------------

    def in_use(self) -> CallGate:
        """The gate a tool call runs in (``with memory.in_use(): ...``): MemoryClosedError once
        the memory is closed; close() waits for the calls inside."""
        return self._gate

    def _ingest(self) -> IngestBuffer[Item]:
        if self._buffer is None:  # the write methods refused first (_writes)
            raise ReadOnlyMemoryError("the memory is open read-only: nothing can be added")
        return self._buffer

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryClosedError("this memory is closed")

    def _time(self, timestamp: float | None) -> float:
        # 0.0 is a valid time (simulation clocks start there); only None means "now".
        return self._clock() if timestamp is None else validation.timestamp("timestamp", timestamp)

    def _end_top(self, status: str, consolidate: bool) -> tuple[str, Future[list[str]] | None]:
        episode_id = self._episode_stack.pop()
        if not consolidate:
            # Its buffered observations keep their episode id and are written with the next
            # batch (a closed episode still takes its BELONGS_TO edges): the caller does not
            # wait for a write (a patrol ending a lap spent 4 of 27 s of a 100k ingest here).
            self._store.close_episode(episode_id, self._clock(), status)
            self._last_ended = episode_id
            return episode_id, None
        # The worker reads the episode's observations: they are written first. Closed and
        # marked for consolidation in one transaction, consolidated by the worker.
        self._ingest().flush()
        self._consolidation.close_episode(episode_id, self._clock(), status)
        self._last_ended = episode_id
        return episode_id, self._consolidation.consolidate_episode(episode_id)

    def _close_interrupted_episodes(self) -> None:
        # An episode left active by a process that died is closed as "interrupted" at its last
        # observation, so no episode stays active forever and new ones FOLLOW it; it is marked
        # for consolidation like any ended episode (recover() queues it).
        for episode_id in self._store.active_episode_ids():
            episode = self._store.get_episode(episode_id)
            last = self._store.episode_last_time(episode_id)
            start = episode.start_time if episode else 0.0
            self._consolidation.close_episode(
                episode_id, max(start, last if last is not None else start), "interrupted"
            )

    @property
    def rejected_observations(self) -> int:
        """Rows set aside in ``rejected.jsonl`` of the memory's directory: observations (and
        entity changes) accepted at the door, then refused by the store; over every open."""
        return self._writer.rejected.count()

    # --- retrieval tools (emem_graph.retrieval) ------------------------------------------------
    # Delegations (_Delegated: the signature and docstring are the tool's own): the tools, their
    # schemas, validation and formatting live in emem_graph/retrieval (tools.py, schemas.py,
    # dispatch.py). Each tool flushes first and
    # raises InvalidInputError (a ValueError) on bad arguments; dispatch_tool_call never raises.
    # Each tool's parameters are defined in its schema; tests/test_tool_definitions.py checks
    # that these methods take exactly those (names, order, defaults, types).

    @functools.cached_property
    def tools(self) -> RetrievalTools:
        """The ten retrieval tools and the planner actions of this memory."""
        tools = RetrievalTools(self, self._store, self._clock, StayReads(self._store))
        for capability in self._capabilities:
            tools.attach(capability, capability.tool_names)
        return tools

    def get_tool_definitions(self, include_actions: bool = False) -> list[dict[str, Any]]:
        """The ten tools in OpenAI function-calling form (plus store_specific_memory,
        start_episode and end_episode with ``include_actions``)."""
        return self.tools.definitions(include_actions)

    def get_tools_for_registration(
        self, include_actions: bool = False
    ) -> list[tuple[Callable[..., str], dict[str, Any]]]:
        """(callable, definition) pairs, one per tool."""
        return self.tools.for_registration(include_actions)

    def dispatch_tool_call(
        self, tool_name: str, arguments: dict[str, Any] | str | None = None
    ) -> str:
        """Run a tool (or planner action) by name with a dict or JSON-string of arguments;
        returns its text, or one line ``Error: ...``. Never raises."""
        return self.tools.dispatch(tool_name, arguments)

    semantic_search = Delegated("tools", RetrievalTools.semantic_search)
    spatial_query = Delegated("tools", RetrievalTools.spatial_query)
    temporal_query = Delegated("tools", RetrievalTools.temporal_query)
    episode_summary = Delegated("tools", RetrievalTools.episode_summary)
    get_current_context = Delegated("tools", RetrievalTools.get_current_context)
    search_gists = Delegated("tools", RetrievalTools.search_gists)
    entity_query = Delegated("tools", RetrievalTools.entity_query)
    locate = Delegated("tools", RetrievalTools.locate)
    recall = Delegated("tools", RetrievalTools.recall)
    body_status = Delegated("tools", RetrievalTools.body_status)

    @writes
    def store_specific_memory(
        self,
        content: str,
        layer_name: str = "agent_notes",
        x: float | None = None,
        y: float | None = None,
        z: float | None = None,
    ) -> str:
        """Planner action: remember a note at (x, y, z), by default the current position;
        unlike add(), the note is written (durable) before this returns (StorageError: not)."""
        return self.tools.store_specific_memory(content, layer_name, x, y, z)

    # --- capabilities' tools (thin delegations, one block per capability) ----------------------
    # tools: spatial
    route_query = Delegated("places", SpatialTools.route_query)
    directional_query = Delegated("places", SpatialTools.directional_query)
    navigate_to = Delegated("places", SpatialTools.navigate_to)

    @writes
    @while_open
    def rebuild_places(self) -> int:
        """Build the topological map again from every perception observation (places count)."""
        self._check_open()
        return self.places.rebuild()

    # tools: areas
    describe_area = Delegated("areas", AreaMemory.describe_area)
    global_search = Delegated("areas", AreaMemory.global_search)

    # tools: profile
    user_profile = Delegated("profile", UserProfile.user_profile)
