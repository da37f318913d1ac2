"""SpatioTemporalMemory: the facade a robot meets first (a drop-in for eMEM's class)."""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast, overload

import numpy as np

from emem_graph import validation
from emem_graph.areas import AreaMemory
from emem_graph.capability import Capability
from emem_graph.config import DEFAULT_DB_PATH, MemoryConfig
from emem_graph.config import settle as settle_config
from emem_graph.consolidation import reads, whereabouts
from emem_graph.consolidation.engine import ConsolidationEngine
from emem_graph.consolidation.entities import Sighting
from emem_graph.errors import (
    EmbeddingDimensionError,
    InvalidInputError,
    MemoryClosedError,
    ReadOnlyMemoryError,
    RecoveryNeededError,
    StorageError,
)
from emem_graph.gate import CallGate, while_open
from emem_graph.ingest.buffer import IngestBuffer
from emem_graph.ingest.embeddings import EmbeddingProvider, make_embedder
from emem_graph.ingest.rejected import RejectedRows
from emem_graph.ingest.unwritten import UnwrittenRows
from emem_graph.models import (
    AGENT_NOTE,
    INTEROCEPTION,
    Entity,
    EntityPosition,
    Episode,
    Observation,
)
from emem_graph.profile import UserProfile
from emem_graph.retrieval.tools import RetrievalTools
from emem_graph.spatial import SpatialTools
from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)


@dataclass
class _Pending:
    observation: Observation
    embedding: np.ndarray | None


class _EntitySighting:
    """A buffer item marking a staged add_entity(): the flush that takes it writes the staged
    entity changes, so they follow the same time bound as observations and a count bound of
    their own (IngestBuffer's ``kind``: flush_batch_size sightings)."""


_ENTITY_SIGHTING = _EntitySighting()

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")


def _writes(method: F) -> F:
    """Mark a facade method that writes: on a memory opened read-only it raises
    ReadOnlyMemoryError before anything is touched."""

    @functools.wraps(method)
    def refusing(self: SpatioTemporalMemory, *args: Any, **kwargs: Any) -> Any:
        if self.read_only:
            raise ReadOnlyMemoryError(
                f"{method.__name__}: refused, the memory {self.config.db_path} is open "
                "read-only (read_only=True): nothing was written; open it without read_only "
                "to write"
            )
        return method(self, *args, **kwargs)

    return cast(F, refusing)


class _Delegated(Generic[P, R]):
    """A facade method that is the same-named method of one of the memory's parts (its
    retrieval tools, places, areas, profile): signature, defaults and docstring are the part's,
    written once there. On the class it is the part's function (for inspection)."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self._part = part
        self._method = method
        self._name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"facade method {name} delegates to a method named {self._name}")

    @overload
    def __get__(self, memory: None, owner: type) -> Callable[Concatenate[Any, P], R]: ...

    @overload
    def __get__(self, memory: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(
        self, memory: object | None, owner: type | None = None
    ) -> Callable[P, R] | Callable[Concatenate[Any, P], R]:
        if memory is None:
            return self._method
        bound: Callable[P, R] = getattr(getattr(memory, self._part), self._name)
        return bound


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
            db_path, config, None if embedding_provider is None else embedding_provider.dim
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
        self._embed_lock = threading.Lock()
        self._embedding_cache: OrderedDict[str, np.ndarray] = OrderedDict()
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
        if not self.read_only:  # read-only: the store refused a memory needing these
            self._close_interrupted_episodes()
            self._consolidation.recover()
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
        self._rejected = RejectedRows(self._store.root)
        self._set_aside_ids: set[str] = set()
        self._consolidation.resolver.set_aside = self._set_aside_entity
        # No flush thread for a read-only memory: nothing can be added to it.
        self._buffer: IngestBuffer[_Pending | _EntitySighting] | None = (
            None
            if self.read_only
            else IngestBuffer(
                self._write_batch,
                clock=self._clock,
                batch_size=config.flush_batch_size,
                interval=config.flush_interval,
                set_aside=self._set_aside,
                probe=self._probe_storage,
                kind=type,
            )
        )
        self._unwritten = UnwrittenRows(self._store.root)
        if self._buffer is not None and self._unwritten.exists():
            self._write_unwritten()
        elif self.read_only and self._unwritten.exists():
            # Answering without them would be answering from a memory that lost them.
            raise RecoveryNeededError(
                f"the memory {self._store.root} holds observations or entity sightings a "
                f"failed close left unwritten ({self._unwritten.path.name}), which a "
                "read-only open cannot "
                "write: open it read-write once (and close it), then read-only"
            )

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
        self._consolidation.flush_entities()
        return written

    def save(self) -> None:
        """Make everything added so far durable (eMEM's save())."""
        self.flush()

    @_writes
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
                if self._buffer is not None:
                    self._stop_buffer(self._buffer)
            except StorageError as exc:
                stopped = exc  # raised below, after the rest is closed: it says where
        finally:
            try:
                self._consolidation.stop()
                if not self.read_only:
                    try:
                        self._flush_entities_at_close(stopped)
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

    def _flush_entities_at_close(self, stopped: StorageError | None) -> None:
        """Write the staged entity sightings; when the observations' last write failed too,
        a failure here is logged beside that error instead of replacing it (its message says
        where the observations are kept).

        Raises:
            StorageError: the sightings could not be written (the observations were).
        """
        try:
            self._consolidation.flush_entities()
        except Exception as exc:
            staged = self._consolidation.resolver.staged_sightings()
            if staged:
                self._unwritten.keep([], [_sighting_entry(s, i) for s, i in staged])
            if stopped is not None:
                log.error(
                    "closing: %d staged entity sightings could not be written either (%s); "
                    "they are kept in %s too",
                    len(staged),
                    exc,
                    self._unwritten.path,
                )
                return
            raise StorageError(
                f"closing: {len(staged)} staged entity sightings could not be written "
                f"({type(exc).__name__}: {exc}); they are kept in {self._unwritten.path} and "
                "written when the memory next opens read-write"
            ) from exc

    def _stop_buffer(self, buffer: IngestBuffer[_Pending | _EntitySighting]) -> None:
        """Stop the flush thread and write what waits; rows the last write cannot store (the
        embedder or the storage fails as a whole) are kept in unwritten.jsonl for the next open.

        Raises:
            StorageError: the last write failed (the rows are kept, the message says where),
                or they could not be kept either.
        """
        try:
            buffer.stop()
        except Exception as exc:
            left = [(i.observation, i.embedding) for i in buffer.drain() if isinstance(i, _Pending)]
            if not left:
                raise StorageError(f"closing: the last write failed: {exc}") from exc
            self._unwritten.keep(left)
            raise StorageError(
                f"closing: {len(left)} observations could not be written "
                f"({type(exc).__name__}: {exc}); they are kept in {self._unwritten.path} and "
                "written when the memory next opens read-write"
            ) from exc

    def _write_unwritten(self) -> None:
        """Write the rows a failed close kept (unwritten.jsonl), then remove the file. Rows
        stored already (the file outlived their write) are skipped; when the write fails as a
        whole the file stays for the next open and the memory opens without them."""
        assert self._buffer is not None
        rows = self._unwritten.load()
        stored = {o.id for o in self._store.get_observations([o.id for o, _ in rows])}
        for observation, vector in rows:
            if observation.id not in stored:
                self._buffer.add(_Pending(observation, vector))
        try:
            self._buffer.flush()
        except Exception as exc:
            self._buffer.drain()  # still in the file
            log.warning(
                "the %d observations kept in %s at the last close could not be written yet "
                "(%s); they stay there for the next open",
                len(rows),
                self._unwritten.path,
                exc,
            )
            return
        sightings = self._unwritten.load_sightings()
        if sightings:
            resolver = self._consolidation.resolver
            try:
                resolver.resolve(
                    [_sighting_of(entry) for entry in sightings],
                    stage=True,
                    ids=[str(entry["entity_id"]) for entry in sightings],
                )
                self._consolidation.flush_entities()
            except Exception as exc:
                resolver.forget_staged()  # still in the file: never counted twice
                log.warning(
                    "the %d entity sightings kept in %s at the last close could not be "
                    "written yet (%s); they stay there for the next open",
                    len(sightings),
                    self._unwritten.path,
                    exc,
                )
                return
        self._unwritten.discard()

    @property
    def store(self) -> MemoryStore:
        """The store with eMEM's read helpers (get_observation, get_episode, ...); flushed first
        so that everything added is visible."""
        self.flush()
        return self._store

    # --- writing -------------------------------------------------------------------------------

    @_writes
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
        self._ingest().add(_Pending(observation, vector))
        with self._state_lock:
            self._working.append(observation)
            if source_type not in (INTEROCEPTION, AGENT_NOTE):
                self._position = observation.coordinates
        return observation.id

    @_writes
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

    @_writes
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
        self._ingest().add(_ENTITY_SIGHTING)
        return entity_id

    # --- episodes ------------------------------------------------------------------------------

    @property
    def active_episode_id(self) -> str | None:
        """The innermost active episode, or None."""
        with self._state_lock:
            return self._episode_stack[-1] if self._episode_stack else None

    @_writes
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

    @_writes
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

    @_writes
    @while_open
    def consolidate_time_window(self) -> list[str]:
        """Consolidate short-term observations older than consolidation_window that belong to
        no episode: clusters (HDBSCAN on position, split at time gaps) of at least
        consolidation_min_samples become gists; the rest stays short_term. Returns the new gist
        ids. Also runs every maintenance_interval in the background."""
        self._check_open()
        self.flush()
        return self._consolidation.consolidate_time_window()

    @_writes
    @while_open
    def maintenance(self) -> int:
        """Archive long-term observations older than archive_after_seconds: their raw text and
        vectors are dropped, their gists stay searchable. Returns how many were archived. Also
        runs every maintenance_interval in the background."""
        self._check_open()
        return self._consolidation.maintenance()

    @_writes
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
        if self._set_aside_ids:
            recent = [o for o in recent if o.id not in self._set_aside_ids]
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
        texts = validation.text_list("texts", texts)
        with self._embed_lock:
            cache = self._embedding_cache
            fresh: dict[str, np.ndarray] = {}
            missing = [t for t in dict.fromkeys(texts) if t not in cache]
            if missing:
                vectors = np.asarray(self.embedder.embed(missing), dtype=np.float32)
                fresh = {t: v.copy() for t, v in zip(missing, vectors, strict=True)}
            out = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
            for i, text in enumerate(texts):
                vector = fresh.get(text)
                if vector is None:
                    vector = cache[text]
                    cache.move_to_end(text)
                out[i] = vector
            size = self.config.embedding_cache_size
            if size:
                cache.update(fresh)
                while len(cache) > size:
                    cache.popitem(last=False)
            return out

    # --- internals -----------------------------------------------------------------------------

    def in_use(self) -> CallGate:
        """The gate a tool call runs in (``with memory.in_use(): ...``): MemoryClosedError once
        the memory is closed; close() waits for the calls inside."""
        return self._gate

    def _ingest(self) -> IngestBuffer[_Pending | _EntitySighting]:
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

    def _write_batch(self, items: list[_Pending | _EntitySighting]) -> int:
        batch = [item for item in items if isinstance(item, _Pending)]
        sightings = len(batch) < len(items)
        if batch:
            self._write_observations(batch, self._names_to_embed() if sightings else [])
        if sightings:
            try:
                self._consolidation.flush_entities()
            except Exception as exc:  # staged still; the next flush() retries and raises
                log.warning("writing entity sightings failed (will retry): %s", exc)
            else:
                self._warm_entity_lines()
        return len(batch)

    def _warm_entity_lines(self) -> None:
        # entity_query's lines of the entities just written, made here on the writer's
        # thread rather than by the next question (RetrievalTools.warm_entity_lines).
        try:
            changed = self._store.entities.take_changed()
            if changed:
                self._store.entities.prepare()
                self.tools.warm_entity_lines(changed)
        except Exception:  # written already; a question makes the lines itself
            log.exception("making entity lines after a write failed")

    def _set_aside(self, item: _Pending | _EntitySighting, error: BaseException) -> None:
        # An observation that fails alone in a working store (IngestBuffer) is kept in
        # rejected.jsonl, not retried in front of the others; an OSError here keeps it queued.
        if not isinstance(item, _Pending):
            return  # a staged-entity marker: its write logs and retries by itself
        observation = item.observation
        self._rejected.set_aside(
            "observation", observation.id, observation.model_dump(), error, self._clock()
        )
        # Not under _state_lock: end_episode() holds it while it flushes (a deadlock with the
        # flush thread); adding to a set is atomic, get_recent() leaves these ids out.
        self._set_aside_ids.add(observation.id)

    def _set_aside_entity(self, entity: Entity, error: BaseException) -> None:
        # An entity change the graph refuses alone (EntityResolver) is kept like a row.
        self._rejected.set_aside("entity", entity.id, entity.model_dump(), error, self._clock())

    def _probe_storage(self) -> None:
        # Content-free: the embedder (past the cache) and a graph write transaction. When
        # these fail, a failed batch is the storage's fault and no row is set aside.
        with self._embed_lock:  # models are not thread-safe (see embed)
            self.embedder.embed(["storage probe"])
        self._store.check_writable()

    @property
    def rejected_observations(self) -> int:
        """Rows set aside in ``rejected.jsonl`` of the memory's directory: observations (and
        entity changes) accepted at the door, then refused by the store; over every session."""
        return self._rejected.count()

    def _names_to_embed(self) -> list[str]:
        # The entity names the flush after this batch embeds, when the embedding cache keeps
        # them until then (_write_observations embeds them with the texts).
        size = self.config.embedding_cache_size
        names = self._consolidation.resolver.names_to_embed()
        return names if len(names) <= size else []

    def _write_observations(self, batch: list[_Pending], names: Sequence[str] = ()) -> None:
        """Write a batch of observations, embedding those without a vector; ``names`` (entity
        names the flush writes next) are embedded in the same model call, into the cache."""
        missing = [i for i, p in enumerate(batch) if p.embedding is None]
        vectors = np.zeros((len(batch), self.embedder.dim), dtype=np.float32)
        if missing or names:
            texts = [batch[i].observation.text for i in missing]
            vectors[missing] = self.embed([*texts, *names])[: len(texts)]
        for i, pending in enumerate(batch):
            if pending.embedding is not None:
                vectors[i] = pending.embedding
        self._store.write_observations([p.observation for p in batch], vectors)
        for pending in batch:
            pending.observation.tier = "short_term"
        written = [p.observation for p in batch]
        # Stored from here on: nothing below may fail the batch (IngestBuffer would write it
        # again, or set it aside although it is in the memory).
        try:
            self._consolidation.observations_written(written)
        except Exception:  # the batch is stored; only its entity extraction is missed
            log.exception("queueing a written batch for entity extraction failed")
        for capability in self._capabilities:
            try:
                capability.observations_written(written)
            except Exception:  # the batch is stored; the capability catches up on rebuild
                log.exception("capability %s failed on a written batch", capability.name)

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
        tools = RetrievalTools(self, self._store, self._clock, _StayReads(self._store))
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

    semantic_search = _Delegated("tools", RetrievalTools.semantic_search)
    spatial_query = _Delegated("tools", RetrievalTools.spatial_query)
    temporal_query = _Delegated("tools", RetrievalTools.temporal_query)
    episode_summary = _Delegated("tools", RetrievalTools.episode_summary)
    get_current_context = _Delegated("tools", RetrievalTools.get_current_context)
    search_gists = _Delegated("tools", RetrievalTools.search_gists)
    entity_query = _Delegated("tools", RetrievalTools.entity_query)
    locate = _Delegated("tools", RetrievalTools.locate)
    recall = _Delegated("tools", RetrievalTools.recall)
    body_status = _Delegated("tools", RetrievalTools.body_status)

    @_writes
    def store_specific_memory(
        self,
        content: str,
        layer_name: str = "agent_notes",
        x: float | None = None,
        y: float | None = None,
        z: float | None = None,
    ) -> str:
        """Planner action: remember a note at (x, y, z), by default the current position."""
        return self.tools.store_specific_memory(content, layer_name, x, y, z)

    # --- capabilities' tools (thin delegations, one block per capability) ----------------------
    # tools: spatial
    route_query = _Delegated("places", SpatialTools.route_query)
    directional_query = _Delegated("places", SpatialTools.directional_query)
    navigate_to = _Delegated("places", SpatialTools.navigate_to)

    @_writes
    @while_open
    def rebuild_places(self) -> int:
        """Build the topological map again from every perception observation (places count)."""
        self._check_open()
        return self.places.rebuild()

    # tools: areas
    describe_area = _Delegated("areas", AreaMemory.describe_area)
    global_search = _Delegated("areas", AreaMemory.global_search)

    # tools: profile
    user_profile = _Delegated("profile", UserProfile.user_profile)


class _StayReads:
    """The stays as the tools read them (retrieval/history.StayReader): consolidation's
    reads and whereabouts rules on this memory's store."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def positions_of(self, entity_ids: Sequence[str]) -> dict[str, list[EntityPosition]]:
        # The store's in-process copy of the stays, no graph round trip; the kept objects
        # themselves (StayReader's readers never change a stay), in fresh lists.
        return self._store.entities.stays_of(entity_ids, shared=True)

    def landmark(self, x: float, y: float) -> str | None:
        return reads.landmark(self._store, x, y)

    def missed_at(self, stay: EntityPosition, layer: str | None, until: float) -> float | None:
        # Kept until the next write to the index (entity_query asks it for every entity it
        # answers, call after call). A time past the latest observation reads as that one: a
        # clock that moves on without new observations asks the same question.
        version, latest = self._store.index.version
        at = min(until, latest)
        key = ("missed_at", version, at, stay.x, stay.y, stay.last_seen, layer)
        return self._store.cached_read(
            key, lambda: whereabouts.missed_at(self._store, stay, layer, at)
        )


MAX_KEPT_TEXT_CHARS = 10_000_000
"""Bound on a kept sighting's name and metadata when read back (add_entity() checked them
against the config of the memory that kept them)."""


def _sighting_entry(sighting: Sighting, entity_id: str) -> dict[str, Any]:
    """An add_entity() sighting as unwritten.jsonl keeps it, with the entity it resolved to."""
    return {
        "entity_id": entity_id,
        "name": sighting.name,
        "x": sighting.x,
        "y": sighting.y,
        "z": sighting.z,
        "timestamp": sighting.timestamp,
        "layer": sighting.layer,
        "entity_type": sighting.entity_type,
        "confidence": sighting.confidence,
        "metadata": sighting.metadata,
    }


def _sighting_of(entry: dict[str, Any]) -> Sighting:
    """The sighting _sighting_entry kept (checked as add_entity() checks its arguments).

    Raises:
        InvalidInputError: a field is not what add_entity() accepts (the file was edited).
    """
    return Sighting(
        name=validation.name("name", entry["name"], MAX_KEPT_TEXT_CHARS),
        x=validation.coordinate("x", entry["x"]),
        y=validation.coordinate("y", entry["y"]),
        z=validation.coordinate("z", entry["z"]),
        timestamp=validation.timestamp("timestamp", entry["timestamp"]),
        layer=validation.name("layer_name", entry["layer"]),
        entity_type=None
        if entry["entity_type"] is None
        else validation.name("entity_type", entry["entity_type"]),
        confidence=validation.confidence(entry["confidence"]),
        metadata=validation.metadata(entry["metadata"], MAX_KEPT_TEXT_CHARS),
    )
