"""Gists: their text (LLM or extractive fallback), their shape in space and time, their writing.

A gist summarizes a group of perception observations: text, centroid, radius, extent (the convex
hull of the positions, as a shapely polygon stored as WKT), time span, observation count, and
their layer (or None: cross-layer). Episodes and time windows both build gists here; the caller
adds the SUMMARIZES edges and tier promotion that fit its case to the same GraphChange.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import numpy as np
import shapely
from shapely.geometry import MultiPoint

from emem_graph import validation
from emem_graph.llm.client import MAX_PROMPT_TEXTS
from emem_graph.llm.guard import LLMGuard
from emem_graph.models import Gist, Observation
from emem_graph.storage.changes import GraphChange
from emem_graph.storage.records import gist_vector
from emem_graph.text.extractive import (
    Embed,
    cross_layer_summary,
    extractive_summary,
    select_representative,
    unique_texts,
)

VectorsOf = Callable[[Sequence[str]], dict[str, np.ndarray]]

EXTENT_MARGIN = 0.5
"""Metres around the positions' convex hull (a single position is still an area)."""
MAX_GIST_CHARS = 2000
MAX_EPISODE_GIST_CHARS = 1200


def split_at_gaps(observations: Sequence[Observation], window: float) -> list[list[Observation]]:
    """Observations in time order, split wherever two consecutive ones are more than
    ``window`` seconds apart."""
    ordered = sorted(observations, key=lambda o: o.timestamp)
    chunks: list[list[Observation]] = []
    for observation in ordered:
        if chunks and observation.timestamp - chunks[-1][-1].timestamp <= window:
            chunks[-1].append(observation)
        else:
            chunks.append([observation])
    return chunks


def common_layer(observations: Sequence[Observation]) -> str | None:
    """The layer all observations share, or None for a cross-layer group."""
    layers = {o.layer_name for o in observations}
    return next(iter(layers)) if len(layers) == 1 else None


def gist_shape(observations: Sequence[Observation]) -> tuple[np.ndarray, float, str]:
    """Centroid [x, y, z], radius (farthest position from the centroid) and extent WKT."""
    # Clamped to validation.MAX_COORDINATE: a position an older version stored beyond it
    # overflowed the norm and made GEOS fail, and the gist was never written.
    points = np.clip(
        np.nan_to_num(np.array([[o.x, o.y, o.z] for o in observations], dtype=np.float64)),
        -validation.MAX_COORDINATE,
        validation.MAX_COORDINATE,
    )
    center = points.mean(axis=0)
    radius = float(np.linalg.norm(points - center, axis=1).max())
    hull = MultiPoint([tuple(p) for p in points[:, :2]]).convex_hull
    extent = hull.buffer(EXTENT_MARGIN, quad_segs=2)
    return center, radius, shapely.to_wkt(extent, rounding_precision=3)


def build_gist(
    observations: Sequence[Observation],
    text: str,
    *,
    episode_id: str | None,
    created_at: float,
) -> Gist:
    """A new gist of ``observations`` (not yet written)."""
    center, radius, extent = gist_shape(observations)
    times = [o.timestamp for o in observations]
    return Gist(
        id=uuid.uuid4().hex,
        text=text,
        x=float(center[0]),
        y=float(center[1]),
        z=float(center[2]),
        radius=radius,
        extent_wkt=extent,
        time_start=min(times),
        time_end=max(times),
        source_observation_count=len(observations),
        layer_name=common_layer(observations),
        episode_id=episode_id,
        level=0,
        tier="long_term",
        created_at=created_at,
    )


def add_gist(change: GraphChange, gist: Gist, vector: np.ndarray) -> None:
    """Add the creation of ``gist`` and its vector to ``change``."""
    change.run(
        "create_gist",
        {
            "id": gist.id,
            "text": gist.text,
            "x": gist.x,
            "y": gist.y,
            "z": gist.z,
            "radius": gist.radius,
            "extent_wkt": gist.extent_wkt,
            "time_start": gist.time_start,
            "time_end": gist.time_end,
            "source_observation_count": int(gist.source_observation_count),
            "layer": gist.layer_name,
            "episode_id": gist.episode_id,
            "level": int(gist.level),
            "tier": gist.tier,
            "created_at": gist.created_at,
        },
    )
    change.upsert([gist_vector(gist, vector)])


class GistTexts:
    """Writes gist text: the LLM when it answers, the extractive fallback otherwise.

    Args:
        guard: the guarded LLM (its ``call`` returns None when the fallback must answer).
        embed: the memory's embedder.
        vectors_of: stored vectors by observation id (reused instead of re-embedding).
        max_sentences: texts an extractive summary keeps.
    """

    def __init__(
        self, guard: LLMGuard, embed: Embed, vectors_of: VectorsOf, max_sentences: int
    ) -> None:
        self._guard = guard
        self._embed = embed
        self._vectors_of = vectors_of
        self.max_sentences = max_sentences
        self.llm_texts = 0
        self.fallback_texts = 0

    def write(self, observations: Sequence[Observation]) -> str:
        """The text of a gist of ``observations`` (one layer: a summary; several: a synthesis
        across layers)."""
        ordered = sorted(observations, key=lambda o: o.timestamp)
        vectors = self._vectors(ordered)
        by_layer: dict[str, list[int]] = {}
        for index, observation in enumerate(ordered):
            by_layer.setdefault(observation.layer_name, []).append(index)
        texts = {layer: [ordered[i].text for i in rows] for layer, rows in by_layer.items()}
        matrices = {layer: vectors[rows] for layer, rows in by_layer.items()}
        answer: object = None
        if self._guard.enabled:
            chosen = {layer: self._prompt_texts(texts[layer], matrices[layer]) for layer in texts}
            if len(chosen) == 1:
                answer = self._guard.call("summarize", next(iter(chosen.values())))
            else:
                answer = self._guard.call("synthesize", chosen)
        if isinstance(answer, str) and answer.strip():
            self.llm_texts += 1
            return _clip(" ".join(answer.split()), MAX_GIST_CHARS)
        self.fallback_texts += 1
        if len(texts) == 1:
            layer = next(iter(texts))
            return extractive_summary(
                texts[layer], self._embed, vectors=matrices[layer], max_sentences=self.max_sentences
            )
        return cross_layer_summary(
            texts, self._embed, vectors_by_layer=matrices, max_sentences=self.max_sentences
        )

    def combine(self, texts: Sequence[str]) -> str:
        """One summary of an episode from the texts of its chunks' gists."""
        parts = [t for t in texts if t]
        if len(parts) <= 1:
            return parts[0] if parts else ""
        answer = self._guard.call("summarize", list(parts)) if self._guard.enabled else None
        if isinstance(answer, str) and answer.strip():
            return _clip(" ".join(answer.split()), MAX_EPISODE_GIST_CHARS)
        return _clip(" ".join(parts), MAX_EPISODE_GIST_CHARS)

    def _vectors(self, observations: Sequence[Observation]) -> np.ndarray:
        stored = self._vectors_of([o.id for o in observations])
        missing = [i for i, o in enumerate(observations) if o.id not in stored]
        fresh = self._embed([observations[i].text for i in missing]) if missing else None
        rows = []
        fresh_row = {index: k for k, index in enumerate(missing)}
        for index, observation in enumerate(observations):
            if index in fresh_row and fresh is not None:
                rows.append(np.asarray(fresh[fresh_row[index]], dtype=np.float32))
            else:
                rows.append(np.asarray(stored[observation.id], dtype=np.float32))
        return np.vstack(rows)

    @staticmethod
    def _prompt_texts(texts: list[str], vectors: np.ndarray) -> list[str]:
        distinct, counts, first = unique_texts(texts)
        if len(distinct) <= MAX_PROMPT_TEXTS:
            return distinct
        picked = select_representative(vectors[first], counts, MAX_PROMPT_TEXTS)
        return [distinct[i] for i in sorted(picked)]


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > limit // 2 else cut.rstrip() + "…"
