"""Where a concept is: the densest place of the relevant evidence, from the dense hits alone.

eMEM averaged the positions of every top-n hit, so one good match among nine weak ones landed in
the middle of nowhere. Averaging only the hits close to the best one (the previous estimate here)
still failed in a patrolled house (emem_graph/evals/locate_eval.py: 56% of objects within 1 m):
the best hit is often an entity whose name is exactly the query but which was made from a single
caption naming the object from across the room, and it outweighed every detection of the object
(an entity's name measures 1.0 against the query, the detection "1 refrigerator" only 0.79).
The estimate is now built in four steps, each a function below:

1. candidates (strong_hits): the hits within CANDIDATE_MARGIN of the best similarity (and at
   least CANDIDATE_RATIO of it).
2. votes (vote): where the concept is, is decided by votes. Names (entities) and texts
   (observations, gists) are scored on different scales, so a candidate is compared with the
   best of its own kind, exp((similarity - best of kind) / VOTE_TEMPERATURE), and its kind's best
   with the overall best, exp((best of kind - best) / KIND_TEMPERATURE). A text's vote is divided
   by the number of things it names (a caption naming a television and the red chair is at most
   half about the chair; a room's scene caption naming four things, a quarter), a gist's also by
   its spread (its centre is the middle of an area, not an object's place).
3. consensus (densest): the candidate with the most votes within CLUSTER_RADIUS around it is where
   the evidence agrees; hits elsewhere (an alike object in another room, seen more often; a
   caption about something else) do not move the answer.
4. centre (estimate_location): the mean of the hits within CLUSTER_RADIUS of the consensus, moved
   until they stop changing (mean shift), each weighted by its relevance (relevance: like its
   vote, but against the overall best with the softer RELEVANCE_TEMPERATURE: every hit about the
   thing helps place it). An entity weighs ENTITY_CENTRE_WEIGHT of its relevance here: its
   position is the running mean of every sighting merged into it, those of captions that merely
   name it included, so it votes for the place but the observations place the answer.

The radius is the weighted RMS distance of those hits from the answer (at least MIN_RADIUS):
how spread out the evidence is. Every rule looks at the hits only (records and similarities),
so the locate tool, recall and the spatial capability share it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from emem_graph.models import Entity, Gist, Observation

Hit = tuple[Observation | Gist | Entity, float]

CANDIDATE_MARGIN = 0.3
"""A hit is a candidate when its cosine similarity is at most this far below the best hit's..."""
CANDIDATE_RATIO = 0.7
"""...and at least this fraction of it."""
VOTE_TEMPERATURE = 0.08
"""Similarity below the best of its kind that divides a candidate's vote by e."""
KIND_TEMPERATURE = 0.5
"""Similarity of a kind's best below the overall best that divides its votes by e."""
RELEVANCE_TEMPERATURE = 0.25
"""Similarity below the best that divides a candidate's weight in the centre by e."""
CLUSTER_RADIUS = 2.0
"""Metres: hits this close to the consensus place are evidence of the same thing."""
ENTITY_CENTRE_WEIGHT = 0.25
"""Share of an entity's relevance that counts when the centre is computed."""
MIN_RADIUS = 1.0
"""Metres: the radius of an estimate from a single place."""
MAX_SHIFTS = 10
"""Mean-shift steps at most (the members stop changing after two or three)."""

_ARTICLE_RE = re.compile(r"\b(?:a|an|the)\b")
_LIST_SPLIT_RE = re.compile(r"[,;]|\band\b")


@dataclass(frozen=True)
class LocationEstimate:
    """Where a concept is: position, spread radius (metres) and the hits used."""

    x: float
    y: float
    z: float
    radius: float
    hits: list[Hit]
    """The hits the position is computed from (record, cosine similarity), best first."""


def strong_hits(hits: Sequence[Hit]) -> list[Hit]:
    """The candidates: the hits whose similarity is close to the best one, best first (ties
    keep the order given)."""
    if not hits:
        return []
    ranked = sorted(hits, key=lambda hit: -hit[1])
    best = ranked[0][1]
    floor = max(best - CANDIDATE_MARGIN, best * CANDIDATE_RATIO if best > 0 else best)
    return [hit for hit in ranked if hit[1] >= floor]


def named_things(text: str) -> int:
    """How many things a text names, roughly: its articles ("a television above the red
    chair": 2), or the items of a list without articles ("1 chair, 2 cups": 2); at least 1."""
    lowered = text.lower()
    articles = len(_ARTICLE_RE.findall(lowered))
    if articles:
        return articles
    return max(1, sum(1 for item in _LIST_SPLIT_RE.split(lowered) if item.strip()))


def _share(record: Observation | Gist | Entity) -> float:
    """How much of a record is about one thing at its position: 1 for an entity; a text's
    1 / named_things, and a gist's also shrinks with its spread."""
    if isinstance(record, Entity):
        return 1.0
    share = 1.0 / named_things(record.text)
    if isinstance(record, Gist) and record.radius > MIN_RADIUS:
        share *= (MIN_RADIUS / record.radius) ** 2
    return share


def vote(
    record: Observation | Gist | Entity, similarity: float, best_of_kind: float, best: float
) -> float:
    """A candidate's say in where the concept is (1 for the best hit when it is an entity or
    names one thing)."""
    within_kind = math.exp((similarity - best_of_kind) / VOTE_TEMPERATURE)
    kind = math.exp((best_of_kind - best) / KIND_TEMPERATURE)
    return within_kind * kind * _share(record)


def relevance(record: Observation | Gist | Entity, similarity: float, best: float) -> float:
    """A candidate's weight in the centre of the place chosen."""
    return math.exp((similarity - best) / RELEVANCE_TEMPERATURE) * _share(record)


def votes(candidates: Sequence[Hit]) -> np.ndarray:
    """vote() of each candidate, names (entities) and texts each against their own best."""
    best = max(s for _, s in candidates)
    best_of = {
        is_name: max((s for r, s in candidates if isinstance(r, Entity) == is_name), default=best)
        for is_name in (True, False)
    }
    return np.array([vote(r, s, best_of[isinstance(r, Entity)], best) for r, s in candidates])


def densest(points: np.ndarray, weights: np.ndarray) -> int:
    """The index of the point with the most weight within CLUSTER_RADIUS (itself included);
    the first such point on a tie."""
    distances = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2)
    mass = (weights[None, :] * (distances <= CLUSTER_RADIUS)).sum(axis=1)
    return int(np.argmax(mass))


def estimate_location(hits: Sequence[Hit]) -> LocationEstimate | None:
    """The position the relevant hits agree on, or None when there are no hits.

    Args:
        hits: (record, cosine similarity) pairs from a dense search.
    """
    candidates = strong_hits(hits)
    if not candidates:
        return None
    best = candidates[0][1]
    centre_weights = np.array(
        [
            relevance(r, s, best) * (ENTITY_CENTRE_WEIGHT if isinstance(r, Entity) else 1.0)
            for r, s in candidates
        ]
    )
    points = np.array([[r.x, r.y, r.z] for r, _ in candidates], dtype=np.float64)
    centre = points[densest(points[:, :2], votes(candidates))]
    members = np.zeros(len(candidates), dtype=bool)
    for _ in range(MAX_SHIFTS):
        near = np.linalg.norm(points[:, :2] - centre[:2], axis=1) <= CLUSTER_RADIUS
        if not near.any() or np.array_equal(near, members):
            break
        members = near
        w = centre_weights[members]
        centre = (w[:, None] * points[members]).sum(axis=0) / w.sum()
    w = centre_weights[members]
    horizontal = np.linalg.norm(points[members, :2] - centre[:2], axis=1)
    spread = math.sqrt(float((w * horizontal**2).sum() / w.sum()))
    return LocationEstimate(
        x=float(centre[0]),
        y=float(centre[1]),
        z=float(centre[2]),
        radius=max(MIN_RADIUS, spread),
        hits=[hit for hit, member in zip(candidates, members, strict=True) if member],
    )
