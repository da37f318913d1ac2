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
from emem_graph.text import digest
from emem_graph.text.detections import parse_detections
from emem_graph.text.extractive import Embed, select_representative, unique_texts

VectorsOf = Callable[[Sequence[str]], dict[str, np.ndarray]]
Landmark = Callable[[float, float], str | None]
"""The name of a landmark at (x, y), or None: how a gist says where it is."""

EXTENT_MARGIN = 0.5
"""Metres around the positions' convex hull (a single position is still an area)."""


def split_at_gaps(observations: Sequence[Observation], window: float) -> list[list[Observation]]:
    """Observations in time order, split wherever two consecutive ones are more than
    ``window`` seconds apart."""
    ordered = sorted(observations, key=lambda o: (o.timestamp, o.id))
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
    """Writes gist text: the LLM's summary when it answers acceptably, the digest otherwise.

    Either way a gist is a summary, not its observations back to back: distinct things with how
    often they were seen (names kept whole), the most representative one or two free texts, and
    how many observations it covers, where and when (text/digest.py). The LLM is given that
    digest's material (each distinct text once, with its count) and its answer is checked
    (text/digest.acceptable): too long, not shorter than its parts, or repeating a sentence, and
    the digest is written instead. The footer (count, place, time span) ends both, so gists of
    two visits to the same place do not carry the same text.

    Args:
        guard: the guarded LLM (its ``call`` returns None when the fallback must answer).
        embed: the memory's embedder.
        vectors_of: stored vectors by observation id (reused instead of re-embedding).
        max_sentences: kept for compatibility (the digest keeps at most digest.MAX_TEXTS texts).
        landmark: names a landmark at a gist's centre ("near the fridge (4.3, 2.1)"), or None:
            the centre's coordinates alone.
    """

    def __init__(
        self,
        guard: LLMGuard,
        embed: Embed,
        vectors_of: VectorsOf,
        max_sentences: int,
        landmark: Landmark | None = None,
    ) -> None:
        self._guard = guard
        self._landmark = landmark
        self._embed = embed
        self._vectors_of = vectors_of
        self.max_sentences = max_sentences
        self.llm_texts = 0
        self.fallback_texts = 0
        self.llm_rejected = 0
        """LLM answers set aside by digest.acceptable (too long, repeated, not shorter)."""

    def write(self, observations: Sequence[Observation]) -> str:
        """The text of a gist of ``observations`` (any layers)."""
        ordered = sorted(observations, key=lambda o: (o.timestamp, o.id))
        vectors = self._vectors(ordered)
        answer = self._ask(ordered, vectors) if self._guard.enabled else None
        if answer is not None:
            self.llm_texts += 1
            return answer
        self.fallback_texts += 1
        return self._digest(ordered, vectors)

    def combine(self, texts: Sequence[str], observations: Sequence[Observation]) -> str:
        """One summary of an episode from its chunks' gist texts: the LLM's summary of them
        (checked), or the digest of all the episode's ``observations`` — never the chunks'
        texts back to back."""
        parts = [t for t in texts if t]
        if len(parts) <= 1:
            return parts[0] if parts else ""
        ordered = sorted(observations, key=lambda o: (o.timestamp, o.id))
        tail = self._footer(ordered)
        if self._guard.enabled:
            answer = self._checked(self._guard.call("summarize", list(parts)), parts, tail)
            if answer is not None:
                return answer
        return self._digest(ordered, self._vectors(ordered))

    def _digest(self, ordered: Sequence[Observation], vectors: np.ndarray) -> str:
        return digest.summarize_texts(
            [o.text for o in ordered],
            self._embed,
            vectors=vectors,
            positions=[(o.x, o.y) for o in ordered],
            times=[o.timestamp for o in ordered],
            place=self._place(ordered),
        )

    def _place(self, ordered: Sequence[Observation]) -> str | None:
        if self._landmark is None:
            return None
        x, y = _center(ordered)
        return self._landmark(x, y)

    def _footer(self, ordered: Sequence[Observation]) -> str:
        times = [o.timestamp for o in ordered]
        center = _center(ordered)
        return digest.footer(len(ordered), center, min(times), max(times), self._place(ordered))

    def _ask(self, ordered: Sequence[Observation], vectors: np.ndarray) -> str | None:
        by_layer: dict[str, list[int]] = {}
        for index, observation in enumerate(ordered):
            by_layer.setdefault(observation.layer_name, []).append(index)
        chosen = {
            layer: self._prompt_texts([ordered[i].text for i in rows], vectors[rows])
            for layer, rows in by_layer.items()
        }
        if len(chosen) == 1:
            answer = self._guard.call("summarize", next(iter(chosen.values())))
        else:
            answer = self._guard.call("synthesize", chosen)
        return self._checked(answer, [o.text for o in ordered], self._footer(ordered))

    def _checked(self, answer: object, parts: Sequence[str], tail: str) -> str | None:
        if answer is None:
            return None
        limit = digest.LLM_GIST_MAX_CHARS - len(tail) - 1
        text = digest.acceptable(answer, digest.parts_length(parts), limit)
        if text is None:
            self.llm_rejected += 1
            return None
        return f"{text} {tail}"

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
        """What the LLM reads of one layer: the things of its detection lists with their
        counts (one line), then its distinct free texts, each once with ``(3x)`` when
        repeated (the most representative ones when there are too many)."""
        things = digest.things_sentence(digest.things_seen(texts), limit=MAX_PROMPT_TEXTS)
        free = [i for i, t in enumerate(texts) if parse_detections(t) is None]
        distinct, counts, first = unique_texts([texts[i] for i in free])
        room = MAX_PROMPT_TEXTS - (1 if things else 0)
        keep = list(range(len(distinct)))
        if len(distinct) > room:
            rows = [free[i] for i in first]
            keep = sorted(select_representative(vectors[rows], counts, room))
        lines = [f"{distinct[i]} ({counts[i]}x)" if counts[i] > 1 else distinct[i] for i in keep]
        return ([things] if things else []) + lines


def _center(ordered: Sequence[Observation]) -> tuple[float, float]:
    points = np.asarray([[o.x, o.y] for o in ordered], dtype=np.float64)
    return float(points[:, 0].mean()), float(points[:, 1].mean())
