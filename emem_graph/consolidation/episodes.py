"""Episode consolidation: one gist per time chunk of an ended episode, and the episode's summary.

An episode's perception observations (never body state) are split at gaps longer than
consolidation_window; each chunk becomes a gist that SUMMARIZES its observations, which are
promoted to long_term; the episode's ``gist`` text summarizes the chunks. All of it is one graph
transaction; the gist vectors and the observations' new tier reach LanceDB right after.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from emem_graph.consolidation.gists import GistTexts, add_gist, build_gist, split_at_gaps
from emem_graph.errors import StorageError
from emem_graph.storage.changes import GraphChange, Rows, expect_count
from emem_graph.text.extractive import Embed

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)


class EpisodeConsolidator:
    """Writes the gists of ended episodes.

    Args:
        store: the memory's store.
        texts: writes gist text (LLM or fallback).
        embed: the memory's embedder (gist vectors).
        window: consolidation_window in seconds (a longer gap starts a new chunk).
        clock: the memory's clock (gist creation time).
    """

    def __init__(
        self,
        store: MemoryStore,
        texts: GistTexts,
        embed: Embed,
        *,
        window: float,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._texts = texts
        self._embed = embed
        self._window = window
        self._clock = clock

    def close(self, episode_id: str, end_time: float, status: str) -> None:
        """Close an episode and mark it as waiting for consolidation, atomically.

        Raises:
            StorageError: the episode does not exist.
        """
        change = GraphChange().run(
            "close_episode_for_consolidation",
            {"id": episode_id, "end_time": end_time, "status": status},
            on_rows=_exists(episode_id),
        )
        self._store.apply(change)

    def consolidate(self, episode_id: str) -> list[str]:
        """Write the gists of an ended episode; returns their ids (none when the episode has no
        unconsolidated perception observation). Safe to run twice: observations already
        summarized are not summarized again."""
        episode = self._store.get_episode(episode_id)
        if episode is None:
            log.warning("episode %s vanished before consolidation", episode_id)
            return []
        observations = [
            o
            for o in self._store.get_episode_observations(episode_id)
            if not o.is_body_state and o.tier == "short_term"
        ]
        change = GraphChange()
        if not observations:
            if episode.gist == "":
                change.run("set_episode_gist", {"id": episode_id, "gist": None})
                self._store.apply(change)
            return []
        chunks = split_at_gaps(observations, self._window)
        texts = [self._texts.write(chunk) for chunk in chunks]
        vectors = self._embed(texts)
        now = self._clock()
        gists = [
            build_gist(chunk, text, episode_id=episode_id, created_at=now)
            for chunk, text in zip(chunks, texts, strict=True)
        ]
        for gist, chunk, vector in zip(gists, chunks, vectors, strict=True):
            add_gist(change, gist, vector)
            change.run(
                "summarize_episode_chunk",
                {
                    "gist_id": gist.id,
                    "episode_id": episode_id,
                    "time_start": gist.time_start,
                    "time_end": gist.time_end,
                },
                on_rows=expect_count(len(chunk), f"observations summarized by gist {gist.id}"),
            )
            change.retier([o.id for o in chunk], "observation", "long_term")
        change.run(
            "set_episode_gist", {"id": episode_id, "gist": self._texts.combine(texts, observations)}
        )
        self._store.apply(change)
        log.info("episode %s consolidated into %d gist(s)", episode_id, len(gists))
        return [g.id for g in gists]


def _exists(episode_id: str) -> Callable[[Rows], None]:
    def check(rows: Rows) -> None:
        if not rows:
            raise StorageError(f"episode {episode_id} does not exist")

    return check
