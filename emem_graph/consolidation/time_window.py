"""Time-window consolidation: gists of old short-term observations that belong to no episode.

Perception observations older than consolidation_window that no episode holds are clustered by
position with HDBSCAN (clusters closer than consolidation_spatial_eps merge), each cluster is
split at time gaps longer than consolidation_window, and every piece with at least
consolidation_min_samples observations becomes a gist. The rest (noise) stays short_term and is
considered again next time. One graph transaction per gist.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from emem_graph import validation
from emem_graph.consolidation import reads
from emem_graph.consolidation.gists import GistTexts, add_gist, build_gist, split_at_gaps
from emem_graph.models import Observation
from emem_graph.storage.changes import GraphChange, expect_count
from emem_graph.text.extractive import Embed

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

MAX_CANDIDATES = 20_000
"""Observations clustered per run (oldest first); a backlog is worked off over several runs."""


def cluster_observations(
    observations: Sequence[Observation], *, eps: float, min_samples: int, window: float
) -> list[list[Observation]]:
    """Groups of at least ``min_samples`` observations that are close in space (HDBSCAN on
    x, y) and in time (no gap longer than ``window``); the rest is noise and left out."""
    # Positions an older version stored beyond validation.MAX_COORDINATE are noise here:
    # their distances overflow to inf, on which HDBSCAN's Boruvka tree never finishes.
    observations = [o for o in observations if validation.in_bounds(o.x, o.y)]
    if len(observations) < min_samples:
        return []
    import hdbscan  # slow to import (numba); only needed here

    positions = np.array([[o.x, o.y] for o in observations], dtype=np.float64)
    labels = (
        hdbscan.HDBSCAN(
            min_cluster_size=min_samples,
            min_samples=min_samples,
            cluster_selection_epsilon=float(eps),
            allow_single_cluster=True,
        )
        .fit(positions)
        .labels_
    )
    groups: dict[int, list[Observation]] = {}
    for observation, label in zip(observations, labels, strict=True):
        if label >= 0:
            groups.setdefault(int(label), []).append(observation)
    pieces: list[list[Observation]] = []
    for group in groups.values():
        pieces.extend(p for p in split_at_gaps(group, window) if len(p) >= min_samples)
    pieces.sort(key=lambda p: (p[0].timestamp, p[0].id))
    return pieces


class TimeWindowConsolidator:
    """Writes gists of old observations outside episodes (one run at a time).

    Args:
        store: the memory's store.
        texts: writes gist text (LLM or fallback).
        embed: the memory's embedder (gist vectors).
        window: consolidation_window (age threshold and time-gap split), seconds.
        eps: consolidation_spatial_eps, metres.
        min_samples: consolidation_min_samples.
        clock: the memory's clock.
    """

    def __init__(
        self,
        store: MemoryStore,
        texts: GistTexts,
        embed: Embed,
        *,
        window: float,
        eps: float,
        min_samples: int,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._texts = texts
        self._embed = embed
        self._window = window
        self._eps = eps
        self._min_samples = min_samples
        self._clock = clock
        self._lock = threading.Lock()

    def consolidate(self) -> list[str]:
        """Cluster the eligible observations and write one gist per cluster; returns the ids."""
        with self._lock:
            now = self._clock()
            candidates = reads.time_window_candidates(
                self._store, now - self._window, MAX_CANDIDATES
            )
            clusters = cluster_observations(
                candidates, eps=self._eps, min_samples=self._min_samples, window=self._window
            )
            gist_ids = []
            for cluster in clusters:
                gist_ids.append(self._write(cluster, now))
            if clusters:
                log.info(
                    "time-window consolidation: %d gist(s) from %d of %d observations",
                    len(clusters),
                    sum(len(c) for c in clusters),
                    len(candidates),
                )
            return gist_ids

    def _write(self, cluster: list[Observation], now: float) -> str:
        text = self._texts.write(cluster)
        gist = build_gist(cluster, text, episode_id=None, created_at=now)
        change = GraphChange()
        add_gist(change, gist, self._embed([text])[0])
        change.run_each(
            "link_gist_observation",
            [{"gist_id": gist.id, "observation_id": o.id} for o in cluster],
        )
        change.run(
            "promote_summarized",
            {"gist_id": gist.id},
            on_rows=expect_count(len(cluster), f"observations promoted by gist {gist.id}"),
        )
        change.retier([o.id for o in cluster], "observation", "long_term")
        self._store.apply(change)
        return gist.id
