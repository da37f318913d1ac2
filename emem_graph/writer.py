"""MemoryWriter: the write path of a read-write memory, behind the facade's add() and close().

add() returns at once; the rows wait in an IngestBuffer whose flush thread writes them in
batches (embedding those given without a vector, graph and vectors in one store write), then
tells consolidation and the capabilities. A row the store refuses alone is set aside in
``rejected.jsonl``; rows the last write of a close cannot store, and add_entity() sightings
whose write fails at close, are kept in ``unwritten.jsonl`` and written at the next read-write
open, before anything else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from emem_graph import validation
from emem_graph.capability import Capability
from emem_graph.config import MemoryConfig
from emem_graph.consolidation.engine import ConsolidationEngine
from emem_graph.consolidation.entities import Sighting
from emem_graph.errors import ReadOnlyMemoryError, RecoveryNeededError, StorageError
from emem_graph.ingest.buffer import IngestBuffer
from emem_graph.ingest.embedding_cache import EmbeddingCache
from emem_graph.ingest.rejected import RejectedRows
from emem_graph.ingest.unwritten import UnwrittenRows
from emem_graph.ingest.waiting import WaitingObservations
from emem_graph.models import Entity, Observation
from emem_graph.retrieval.formatting import one_line
from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)


@dataclass
class Pending:
    """An added observation waiting in the buffer, with its given vector (None: embed it)."""

    observation: Observation
    embedding: np.ndarray | None


class EntitySighting:
    """A buffer item marking a staged add_entity(): the flush that takes it writes the staged
    entity changes, so they follow the same time bound as observations and a count bound of
    their own (IngestBuffer's ``kind``: flush_batch_size sightings)."""


ENTITY_SIGHTING = EntitySighting()

Item = Pending | EntitySighting


class MemoryWriter:
    """The buffer, the batch write and what a failed write leaves (rejected and unwritten
    rows) of one memory.

    Args:
        store: the memory's store.
        consolidation: its consolidation engine (staged entity sightings, extraction queue).
        config: its configuration (batch size, flush interval, embedding cache size).
        embed: the facade's embed (cached, serialised).
        embeddings: the facade's embedding cache (its provider and lock: the storage probe).
        clock: the memory's clock.
        capabilities: told of every written batch.
        warm_entity_lines: makes entity_query's lines of entities just written.
        read_only: no buffer and no flush thread: nothing can be added.
    """

    def __init__(
        self,
        store: MemoryStore,
        consolidation: ConsolidationEngine,
        config: MemoryConfig,
        *,
        embed: Callable[[list[str]], np.ndarray],
        embeddings: EmbeddingCache,
        clock: Callable[[], float],
        capabilities: Sequence[Capability],
        warm_entity_lines: Callable[[Sequence[Entity]], object],
        read_only: bool,
    ) -> None:
        self._store = store
        self._consolidation = consolidation
        self._config = config
        self._embed = embed
        self._embeddings = embeddings
        self._clock = clock
        self._capabilities = capabilities
        self._warm_lines = warm_entity_lines
        self.rejected = RejectedRows(store.root)
        self.set_aside_ids: set[str] = set()
        """Ids of observations set aside (get_recent() leaves them out)."""
        consolidation.resolver.set_aside = self._set_aside_entity
        self.waiting = WaitingObservations()
        """The observations added and not yet written: a sighting resolved now sees them."""
        consolidation.resolver.waiting = self.waiting
        self.buffer: IngestBuffer[Item] | None = (
            None
            if read_only
            else IngestBuffer(
                self._write_batch,
                clock=clock,
                batch_size=config.flush_batch_size,
                interval=config.flush_interval,
                max_waiting=config.flush_max_batch,
                set_aside=self._set_aside,
                probe=self._probe_storage,
                kind=type,
            )
        )
        self.unwritten = UnwrittenRows(store.root)

    def open(self) -> None:
        """Write what a failed close kept (read-write), or refuse a read-only open while the
        memory holds such rows.

        Raises:
            RecoveryNeededError: read-only, and ``unwritten.jsonl`` holds rows.
        """
        if not self.unwritten.exists():
            return
        if self.buffer is not None:
            self._write_unwritten()
            return
        # Answering without them would be answering from a memory that lost them.
        raise RecoveryNeededError(
            f"the memory {self._store.root} holds observations or entity sightings a "
            f"failed close left unwritten ({self.unwritten.path.name}), which a "
            "read-only open cannot write: open it read-write once (and close it), then read-only"
        )

    def add(self, pending: Pending) -> None:
        """Queue an added observation for the buffer's next write; until it is written the
        entity resolver reads it from ``waiting``.

        Raises:
            ReadOnlyMemoryError: the memory is open read-only (no buffer).
            RuntimeError: the buffer is stopped (the memory is closing).
        """
        if self.buffer is None:
            raise ReadOnlyMemoryError("the memory is open read-only: nothing can be added")
        self.waiting.add(pending.observation)
        try:
            self.buffer.add(pending)
        except BaseException:
            self.waiting.discard([pending.observation.id])
            raise

    # --- close ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the flush thread and write what waits; rows the last write cannot store (the
        embedder or the storage fails as a whole) are kept in unwritten.jsonl for the next open.

        Raises:
            StorageError: the last write failed (the rows are kept, the message says where),
                or they could not be kept either.
        """
        if self.buffer is None:
            return
        try:
            self.buffer.stop()
        except Exception as exc:
            left = [
                (i.observation, i.embedding) for i in self.buffer.drain() if isinstance(i, Pending)
            ]
            if not left:
                raise StorageError(f"closing: the last write failed: {exc}") from exc
            self.unwritten.keep(left)
            raise StorageError(
                f"closing: {len(left)} observations could not be written "
                f"({type(exc).__name__}: {exc}); they are kept in {self.unwritten.path} and "
                "written when the memory next opens read-write"
            ) from exc

    def flush_entities_at_close(self, stopped: StorageError | None) -> None:
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
                self.unwritten.keep([], [sighting_entry(s, i) for s, i in staged])
            if stopped is not None:
                log.error(
                    "closing: %d staged entity sightings could not be written either (%s); "
                    "they are kept in %s too",
                    len(staged),
                    exc,
                    self.unwritten.path,
                )
                return
            raise StorageError(
                f"closing: {len(staged)} staged entity sightings could not be written "
                f"({type(exc).__name__}: {exc}); they are kept in {self.unwritten.path} and "
                "written when the memory next opens read-write"
            ) from exc

    def _write_unwritten(self) -> None:
        """Write the rows a failed close kept (unwritten.jsonl), then remove the file. Rows
        stored already (the file outlived their write) are skipped; when the write fails as a
        whole the file stays for the next open and the memory opens without them."""
        assert self.buffer is not None
        rows = self.unwritten.load()
        stored = {o.id for o in self._store.get_observations([o.id for o, _ in rows])}
        for observation, vector in rows:
            if observation.id not in stored:
                self.buffer.add(Pending(observation, vector))
        try:
            self.buffer.flush()
        except Exception as exc:
            self.buffer.drain()  # still in the file
            log.warning(
                "the %d observations kept in %s at the last close could not be written yet "
                "(%s); they stay there for the next open",
                len(rows),
                self.unwritten.path,
                exc,
            )
            return
        sightings = self.unwritten.load_sightings()
        if sightings:
            resolver = self._consolidation.resolver
            try:
                resolver.resolve(
                    [sighting_of(entry) for entry in sightings],
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
                    self.unwritten.path,
                    exc,
                )
                return
        self.unwritten.discard()

    # --- the batch write -----------------------------------------------------------------------

    def _write_batch(self, items: list[Item]) -> int:
        batch = [item for item in items if isinstance(item, Pending)]
        sightings = len(batch) < len(items)
        if batch:
            self.write_observations(batch, self._names_to_embed() if sightings else [])
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
                self._warm_lines(changed)
        except Exception:  # written already; a question makes the lines itself
            log.exception("making entity lines after a write failed")

    def _set_aside(self, item: Item, error: BaseException) -> None:
        # An observation that fails alone in a working store (IngestBuffer) is kept in
        # rejected.jsonl, not retried in front of the others; an OSError here keeps it queued.
        if not isinstance(item, Pending):
            return  # a staged-entity marker: its write logs and retries by itself
        observation = item.observation
        self.rejected.set_aside(
            "observation", observation.id, observation.model_dump(), error, self._clock()
        )
        self.waiting.discard([observation.id])  # never written: not a look
        # Not under the facade's state lock: end_episode() holds it while it flushes (a
        # deadlock with the flush thread); adding to a set is atomic.
        self.set_aside_ids.add(observation.id)

    def _set_aside_entity(self, entity: Entity, error: BaseException) -> None:
        # An entity change the graph refuses alone (EntityResolver) is kept like a row.
        self.rejected.set_aside("entity", entity.id, entity.model_dump(), error, self._clock())

    def _probe_storage(self) -> None:
        # Content-free: the embedder (past the cache) and a graph write transaction. When
        # these fail, a failed batch is the storage's fault and no row is set aside.
        self._embeddings.probe()
        self._store.check_writable()

    def _names_to_embed(self) -> list[str]:
        # The entity names the flush after this batch embeds, when the embedding cache keeps
        # them until then (write_observations embeds them with the texts).
        size = self._config.embedding_cache_size
        names = self._consolidation.resolver.names_to_embed()
        return names if len(names) <= size else []

    def write_observations(self, batch: list[Pending], names: Sequence[str] = ()) -> None:
        """Write a batch of observations, embedding those without a vector; ``names`` (entity
        names the flush writes next) are embedded in the same model call, into the cache."""
        missing = [i for i, p in enumerate(batch) if p.embedding is None]
        vectors = np.zeros((len(batch), self._embeddings.embedder.dim), dtype=np.float32)
        if missing or names:
            texts = [batch[i].observation.text for i in missing]
            vectors[missing] = self._embed([*texts, *names])[: len(texts)]
        for i, pending in enumerate(batch):
            if pending.embedding is not None:
                vectors[i] = pending.embedding
        self._store.write_observations([p.observation for p in batch], vectors)
        self.waiting.discard(p.observation.id for p in batch)  # the store's index holds them
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


MAX_KEPT_TEXT_CHARS = 10_000_000
"""Bound on a kept sighting's name and metadata when read back (add_entity() checked them
against the config of the memory that kept them)."""


def sighting_entry(sighting: Sighting, entity_id: str) -> dict[str, Any]:
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


def sighting_of(entry: dict[str, Any]) -> Sighting:
    """The sighting sighting_entry kept (checked as add_entity() checks its arguments).

    Raises:
        InvalidInputError: a field is not what add_entity() accepts (the file was edited).
    """
    return Sighting(
        name=validation.name("name", _kept_name(entry["name"]), MAX_KEPT_TEXT_CHARS),
        x=validation.coordinate("x", entry["x"]),
        y=validation.coordinate("y", entry["y"]),
        z=validation.coordinate("z", entry["z"]),
        timestamp=validation.timestamp("timestamp", entry["timestamp"]),
        layer=validation.name("layer_name", _kept_name(entry["layer"])),
        entity_type=None
        if entry["entity_type"] is None
        else validation.name("entity_type", _kept_name(entry["entity_type"])),
        confidence=validation.confidence(entry["confidence"]),
        metadata=validation.metadata(entry["metadata"], MAX_KEPT_TEXT_CHARS),
    )


def _kept_name(value: Any) -> Any:
    """A kept name as add_entity() takes names now: a version before names were one line
    kept "red\nchair" (the resolver read it as "red chair"); its control characters read as
    a space, so that the sighting is written, not refused at every open."""
    return one_line(value) if isinstance(value, str) else value
