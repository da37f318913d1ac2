"""ConsolidationEngine: consolidation, tiers and entities of one memory, composed for the facade.

The facade hands it flushed observations (for entity extraction), ended episodes (to
consolidate), entities added by hand (to merge), and asks it for time-window consolidation and
maintenance. Slow work runs on one background worker; close() stops it after finishing what is
queued with the built-in fallbacks, so closing never waits on an LLM.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from emem_graph.config import MemoryConfig
from emem_graph.consolidation import reads, tiers
from emem_graph.consolidation.detections import RuleBasedExtractor
from emem_graph.consolidation.entities import EntityResolver, Sighting
from emem_graph.consolidation.episodes import EpisodeConsolidator
from emem_graph.consolidation.extraction import EntityExtraction
from emem_graph.consolidation.gists import GistTexts
from emem_graph.consolidation.time_window import TimeWindowConsolidator
from emem_graph.consolidation.worker import BackgroundWorker
from emem_graph.llm.client import LLMClient, configured_llm
from emem_graph.llm.guard import LLMGuard
from emem_graph.models import Observation
from emem_graph.text.extractive import Embed

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)


def call_timeout(config: MemoryConfig) -> float:
    """Seconds one guarded LLM call may take: every try plus the backoff between them."""
    tries = config.llm_retries + 1
    backoff = config.llm_retry_backoff * (2**config.llm_retries - 1)
    return config.llm_timeout * tries + backoff + 1.0


class ConsolidationEngine:
    """Episode and time-window consolidation, archival and entities, with their worker.

    Args:
        store: the memory's store.
        config: the memory's configuration.
        embed: the memory's (thread-safe) embedder.
        clock: the memory's clock; schedules and ages use it.
        llm_client: an LLMClient, or None to build the one config names (or none).
        background: schedule the periodic entity extraction and maintenance (False for a
            memory opened read-only).
    """

    def __init__(
        self,
        store: MemoryStore,
        config: MemoryConfig,
        *,
        embed: Embed,
        clock: Callable[[], float],
        llm_client: LLMClient | None = None,
        background: bool = True,
    ) -> None:
        self._store = store
        self.config = config
        self._clock = clock
        client = llm_client if llm_client is not None else configured_llm(config)
        self.guard = LLMGuard(client, timeout=call_timeout(config))
        vectors_of = functools.partial(reads.stored_vectors, store)
        self.texts = GistTexts(
            self.guard,
            embed,
            vectors_of,
            config.summary_max_sentences,
            landmark=functools.partial(reads.landmark, store),
        )
        self.rules = RuleBasedExtractor(reads.entity_names(store))
        self.resolver = EntityResolver(
            store,
            embed,
            name_threshold=config.entity_similarity_threshold,
            context_threshold=config.entity_text_similarity_threshold,
            radius=config.entity_spatial_radius,
        )
        self.extraction = EntityExtraction(
            self.resolver,
            self.rules,
            self.guard,
            embed,
            vectors_of,
            flush_interval=config.entity_extract_flush_interval,
            llm_batch=config.llm_extract_batch_size,
        )
        self.episodes = EpisodeConsolidator(
            store, self.texts, embed, window=config.consolidation_window, clock=clock
        )
        self.time_window = TimeWindowConsolidator(
            store,
            self.texts,
            embed,
            window=config.consolidation_window,
            eps=config.consolidation_spatial_eps,
            min_samples=config.consolidation_min_samples,
            clock=clock,
        )
        self._extraction_queued = False
        self._queue_lock = threading.Lock()
        self.worker = BackgroundWorker(clock)
        if not background:  # a read-only memory: nothing is scheduled (every job writes)
            return
        self.worker.schedule(
            "entity extraction", config.entity_extract_time_interval, self._extract_pending
        )
        if config.maintenance_interval is not None:
            self.worker.schedule("maintenance", config.maintenance_interval, self._maintain)

    # --- episodes ------------------------------------------------------------------------------

    def close_episode(self, episode_id: str, end_time: float, status: str) -> None:
        """Close an episode, marked as waiting for its gists (one transaction)."""
        self.episodes.close(episode_id, end_time, status)

    def consolidate_episode(self, episode_id: str) -> Future[list[str]]:
        """Queue an ended episode's consolidation; the Future gives its gist ids."""
        return self.worker.submit(
            f"consolidate episode {episode_id}", lambda: self._consolidate_episode(episode_id)
        )

    def recover(self) -> int:
        """Queue the episodes closed but never consolidated (the process stopped first)."""
        pending = reads.pending_episodes(self._store)
        for episode_id in pending:
            self.consolidate_episode(episode_id)
        if pending:
            log.info("consolidating %d episode(s) left pending by an earlier run", len(pending))
        return len(pending)

    def _consolidate_episode(self, episode_id: str) -> list[str]:
        with self.guard.job():
            self.extraction.run_pending()
            return self.episodes.consolidate(episode_id)

    # --- entities ------------------------------------------------------------------------------

    def observations_written(self, observations: list[Observation]) -> None:
        """Queue a flushed batch for entity extraction (called on the flushing thread: cheap);
        nothing when config.entity_extraction is off."""
        if not self.config.entity_extraction:
            return
        if self.extraction.add(observations):
            self._queue_extraction()

    def add_entity(self, sighting: Sighting) -> str:
        """Merge a hand-given sighting into an entity (or create one) in memory; returns the
        entity id. The change is written by the next flush_entities()."""
        return self.resolver.resolve([sighting], stage=True)[0]

    def flush_entities(self, *, staged_only: bool = False) -> int:
        """Write the staged entity changes (see add_entity). Raises StorageError on failure;
        they stay staged.

        ``staged_only``: for a caller that needs only the add_entity() sightings written (a
        tool about to answer): it does not wait behind an extraction batch being resolved on
        the worker when no sighting is staged (that batch writes its own changes when done)."""
        if staged_only:
            return self.resolver.flush_staged()
        return self.resolver.flush()

    def extract_now(self) -> int:
        """Extract entities from everything queued, on the calling thread."""
        return self.extraction.run_pending()

    def _queue_extraction(self) -> None:
        with self._queue_lock:
            if self._extraction_queued:
                return
            self._extraction_queued = True
        try:
            self.worker.submit("entity extraction", self._extract_pending)
        except RuntimeError:
            with self._queue_lock:
                self._extraction_queued = False

    def _extract_pending(self) -> int:
        with self._queue_lock:
            self._extraction_queued = False
        if not self.extraction.pending:
            return 0
        return self.extraction.run_pending()

    # --- time windows, tiers -------------------------------------------------------------------

    def consolidate_time_window(self) -> list[str]:
        """Gists of old observations outside episodes (see time_window.py)."""
        with self.guard.job():
            return self.time_window.consolidate()

    def maintenance(self) -> int:
        """Archive long-term observations older than archive_after_seconds; returns how many."""
        return tiers.archive(self._store, self._clock() - self.config.archive_after_seconds)

    def _maintain(self) -> None:
        self.consolidate_time_window()
        self.maintenance()

    # --- lifecycle -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Finish the queued work with the fallbacks (the LLM is no longer asked), then stop
        the worker. Call before the store closes."""
        self.guard.stop()
        with contextlib.suppress(RuntimeError):
            self.worker.submit("final entity extraction", self.extraction.run_pending)
        self.worker.stop()

    def stats(self) -> dict[str, Any]:
        """Counters: LLM calls and failures, gist texts by source (and LLM answers set aside as
        too long or repeated), sightings, worker failures."""
        return {
            "llm_calls": self.guard.calls,
            "llm_failures": self.guard.failures,
            "gists_llm_text": self.texts.llm_texts,
            "gists_fallback_text": self.texts.fallback_texts,
            "gists_llm_rejected": self.texts.llm_rejected,
            "sightings": self.extraction.sightings,
            "extraction_pending": self.extraction.pending,
            "worker_failures": self.worker.failures,
        }
