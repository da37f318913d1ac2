"""SpatioTemporalMemory: the facade a robot meets first (a drop-in for eMEM's class)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from emem_graph import validation
from emem_graph.config import MemoryConfig
from emem_graph.errors import EmbeddingDimensionError, InvalidInputError, MemoryClosedError
from emem_graph.ingest.buffer import IngestBuffer
from emem_graph.ingest.embeddings import EmbeddingProvider, make_embedder
from emem_graph.models import INTEROCEPTION, Entity, Episode, Observation
from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)


@dataclass
class _Pending:
    observation: Observation
    embedding: np.ndarray | None


class SpatioTemporalMemory:
    """A robot's memory of what it perceived, where and when, in one directory.

    Args:
        db_path: the memory's directory (graph and vectors live inside it).
        config: a MemoryConfig (or a dict of its fields); when given, its db_path wins.
        embedding_provider: object with ``dim`` and ``embed(list[str]) -> (N, dim) array``;
            default: the provider named by the config (all-MiniLM-L6-v2).
        llm_client: summariser / entity extractor used by consolidation (None: built-in
            fallbacks).
        get_current_time: clock in float seconds used for every time decision (default
            time.time); a simulation clock that starts at 0 is fine.

    Raises:
        ConfigError: invalid configuration.
        SchemaVersionError: db_path holds a memory of another schema or embedding dimension.
        BackendUnavailableError: the embedding model cannot be loaded.
    """

    def __init__(
        self,
        db_path: str = "memory.db",
        config: MemoryConfig | dict[str, Any] | None = None,
        embedding_provider: EmbeddingProvider | None = None,
        llm_client: Any = None,
        get_current_time: Callable[[], float] | None = None,
    ) -> None:
        if config is None:
            config = MemoryConfig.build(db_path=str(db_path))
            if embedding_provider is not None:
                config = config.model_copy(update={"embedding_dim": embedding_provider.dim})
        elif isinstance(config, dict):
            config = MemoryConfig.build(**{"db_path": str(db_path), **config})
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
        self._clock: Callable[[], float] = get_current_time or time.time
        self._embed_lock = threading.Lock()
        self._state_lock = threading.RLock()
        self._closed = False
        self._store = MemoryStore(config, self.embedder)
        self._episode_stack: list[str] = []
        self._close_interrupted_episodes()
        self._position = self._store.latest_perception_position()
        self._working: deque[Observation] = deque(maxlen=config.working_memory_size)
        self._buffer: IngestBuffer[_Pending] = IngestBuffer(
            self._write_batch,
            clock=self._clock,
            batch_size=config.flush_batch_size,
            interval=config.flush_interval,
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> SpatioTemporalMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def flush(self) -> int:
        """Write every buffered observation now. Returns how many were written."""
        self._check_open()
        return self._buffer.flush()

    def save(self) -> None:
        """Make everything added so far durable (eMEM's save())."""
        self.flush()

    def close(self) -> None:
        """Flush, stop the background thread and close the stores (idempotent)."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._buffer.stop()
        finally:
            self._store.close()

    @property
    def store(self) -> MemoryStore:
        """The store with eMEM's read helpers (get_observation, get_episode, ...); flushed first
        so that everything added is visible."""
        self.flush()
        return self._store

    # --- writing -------------------------------------------------------------------------------

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
            InvalidInputError: NaN/inf coordinates, empty or over-long text, confidence outside
                [0, 1], metadata that is not JSON, an embedding of the wrong dimension.
        """
        self._check_open()
        observation = Observation(
            id=uuid.uuid4().hex,
            text=validation.text("text", text, self.config.max_text_chars),
            x=validation.finite("x", x),
            y=validation.finite("y", y),
            z=validation.finite("z", z),
            timestamp=self._time(timestamp),
            layer_name=validation.name("layer_name", layer_name),
            source_type=validation.name("source_type", source_type),
            confidence=validation.confidence(confidence),
            metadata=validation.metadata(metadata, self.config.max_metadata_chars),
            episode_id=self.active_episode_id,
            tier="working",
        )
        vector = None if embedding is None else validation.embedding(embedding, self.embedder.dim)
        self._buffer.add(_Pending(observation, vector))
        with self._state_lock:
            self._working.append(observation)
            if source_type != INTEROCEPTION:
                self._position = observation.coordinates
        return observation.id

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
        """Record a persistent entity (the red chair by the door) at (x, y, z); returns its id."""
        self._check_open()
        seen = self._time(timestamp)
        entity = Entity(
            id=uuid.uuid4().hex,
            name=validation.name("name", name, self.config.max_text_chars),
            entity_type=None
            if entity_type is None
            else validation.name("entity_type", entity_type),
            x=validation.finite("x", x),
            y=validation.finite("y", y),
            z=validation.finite("z", z),
            first_seen=seen,
            last_seen=seen,
            observation_count=1,
            confidence=validation.confidence(confidence),
            layer_name=validation.name("layer_name", layer_name),
            metadata=validation.metadata(metadata, self.config.max_metadata_chars),
        )
        self._store.write_entity(entity, self.embed([entity.name])[0])
        return entity.id

    # --- episodes ------------------------------------------------------------------------------

    @property
    def active_episode_id(self) -> str | None:
        """The innermost active episode, or None."""
        with self._state_lock:
            return self._episode_stack[-1] if self._episode_stack else None

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
                self._end_top("completed")
            episode = Episode(
                id=uuid.uuid4().hex,
                name=label,
                start_time=self._clock(),
                status="active",
                parent_episode_id=parent_episode_id,
                metadata=meta,
            )
            self._store.create_episode(
                episode, follows=self._store.last_ended_episode_id(), parent=parent_episode_id
            )
            self._episode_stack.append(episode.id)
            return episode.id

    def end_episode(self, consolidate: bool = True) -> str | None:
        """End the innermost active episode; returns its id, or None when none is active.

        ``consolidate`` is accepted for eMEM compatibility; gist consolidation of the episode is
        not implemented yet (the episode is closed, its observations and edges are kept).
        """
        self._check_open()
        with self._state_lock:
            if not self._episode_stack:
                return None
            return self._end_top("completed")

    # --- reading helpers -----------------------------------------------------------------------

    @property
    def current_position(self) -> np.ndarray | None:
        """The last perception position [x, y, z] (body state does not move it), or None."""
        with self._state_lock:
            return None if self._position is None else self._position.copy()

    def get_recent(self, n: int | None = None) -> list[Observation]:
        """The ``n`` most recent observations (default working_memory_size), oldest first."""
        with self._state_lock:
            recent = list(self._working)
        if n is None:
            return recent
        if n < 0:
            raise InvalidInputError(f"n must be >= 0, got {n}")
        return recent[-n:] if n else []

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts with the memory's provider (serialised: models are not thread-safe)."""
        with self._embed_lock:
            return self.embedder.embed(list(texts))

    # --- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryClosedError("this memory is closed")

    def _time(self, timestamp: float | None) -> float:
        # 0.0 is a valid time (simulation clocks start there); only None means "now".
        return self._clock() if timestamp is None else validation.finite("timestamp", timestamp)

    def _end_top(self, status: str) -> str:
        self._buffer.flush()
        episode_id = self._episode_stack.pop()
        self._store.close_episode(episode_id, self._clock(), status)
        return episode_id

    def _close_interrupted_episodes(self) -> None:
        # An episode left active by a process that died is closed as "interrupted" at its last
        # observation, so no episode stays active forever and new ones FOLLOW it.
        for episode_id in self._store.active_episode_ids():
            episode = self._store.get_episode(episode_id)
            last = self._store.episode_last_time(episode_id)
            start = episode.start_time if episode else 0.0
            self._store.close_episode(
                episode_id, max(start, last if last is not None else start), "interrupted"
            )

    def _write_batch(self, batch: list[_Pending]) -> None:
        missing = [i for i, p in enumerate(batch) if p.embedding is None]
        vectors = np.zeros((len(batch), self.embedder.dim), dtype=np.float32)
        if missing:
            vectors[missing] = self.embed([batch[i].observation.text for i in missing])
        for i, pending in enumerate(batch):
            if pending.embedding is not None:
                vectors[i] = pending.embedding
        self._store.write_observations([p.observation for p in batch], vectors)
        for pending in batch:
            pending.observation.tier = "short_term"
