"""Where a concept is: a relevance-weighted position estimate from the strong hits only.

eMEM averaged the positions of every top-n hit, so one good match among nine weak ones landed
in the middle of nowhere. Here a hit counts only when its similarity is close to the best one
(within STRONG_MARGIN and at least STRONG_RATIO of it), and the strong hits are weighted by
exp((similarity - best) / WEIGHT_TEMPERATURE), so the best matches dominate. The radius is the
weighted RMS distance of the strong hits from the estimate (at least MIN_RADIUS): it says how
spread out the evidence is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from emem_graph.models import Entity, Gist, Observation

STRONG_MARGIN = 0.1
"""A hit is strong when its cosine similarity is at most this far below the best hit's..."""
STRONG_RATIO = 0.8
"""...and at least this fraction of it."""
WEIGHT_TEMPERATURE = 0.05
"""Similarity difference that divides a hit's weight by e."""
MIN_RADIUS = 1.0
"""Metres: the radius of an estimate from a single place."""


@dataclass(frozen=True)
class LocationEstimate:
    """Where a concept is: position, spread radius (metres) and the strong hits used."""

    x: float
    y: float
    z: float
    radius: float
    hits: list[tuple[Observation | Gist | Entity, float]]
    """The strong hits (record, cosine similarity), best first."""


def strong_hits(
    hits: Sequence[tuple[Observation | Gist | Entity, float]],
) -> list[tuple[Observation | Gist | Entity, float]]:
    """The hits whose similarity is close to the best one, best first."""
    if not hits:
        return []
    ranked = sorted(hits, key=lambda hit: -hit[1])
    best = ranked[0][1]
    floor = max(best - STRONG_MARGIN, best * STRONG_RATIO if best > 0 else best)
    return [hit for hit in ranked if hit[1] >= floor]


def estimate_location(
    hits: Sequence[tuple[Observation | Gist | Entity, float]],
) -> LocationEstimate | None:
    """The relevance-weighted position of the strong hits, or None when there are no hits.

    Args:
        hits: (record, cosine similarity) pairs from a dense search.
    """
    strong = strong_hits(hits)
    if not strong:
        return None
    best = strong[0][1]
    weights = np.array([math.exp((s - best) / WEIGHT_TEMPERATURE) for _, s in strong])
    points = np.array([[r.x, r.y, r.z] for r, _ in strong], dtype=np.float64)
    centre = (weights[:, None] * points).sum(axis=0) / weights.sum()
    horizontal = np.linalg.norm(points[:, :2] - centre[:2], axis=1)
    spread = math.sqrt(float((weights * horizontal**2).sum() / weights.sum()))
    return LocationEstimate(
        x=float(centre[0]),
        y=float(centre[1]),
        z=float(centre[2]),
        radius=max(MIN_RADIUS, spread),
        hits=strong,
    )
