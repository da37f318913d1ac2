"""From words to positions for the spatial tools: a place given as coordinates or as something
to locate, and the candidates of a target (known entities first, then matching memories).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from emem_graph.errors import InvalidInputError
from emem_graph.filters import VectorFilter
from emem_graph.models import INTEROCEPTION, STAY_RADIUS, Entity, EntityPosition, Gist, Observation
from emem_graph.retrieval.history import present_evidence
from emem_graph.retrieval.locate import estimate_location
from emem_graph.retrieval.search import HybridSearch, content_words, has_all_words

Record = Observation | Gist | Entity

_COORDINATES = re.compile(r"^\s*\(?\s*([^\s,;()]+)\s*[,;\s]\s*([^\s,;()]+)\s*\)?\s*$")
CANDIDATE_POOL = 50
"""Nearest records read per kind (entities, then observations) for a target."""
CANDIDATE_MARGIN = 0.15
"""A record is a candidate when its similarity is at most this far below the best of its
kind (entities; observations), or when it holds every content word of the target..."""
KIND_MARGIN = 0.3
"""...and at most this far below the best of both kinds (an entity list with no match holds
only weak hits)..."""
MIN_SIMILARITY = 0.3
"""...and at least this similar to the target (MiniLM cosine; unrelated texts score below)."""
ENTITY_MATCH = 0.8
"""An entity this similar to a place's words (or holding them all) stands for the place."""

_PERCEPTION = VectorFilter(
    kinds=("observation",),
    exclude_source_types=(INTEROCEPTION,),
    exclude_tiers=("archived",),
)
_ENTITIES = VectorFilter(kinds=("entity",))
_ANY = VectorFilter(exclude_source_types=(INTEROCEPTION,), exclude_tiers=("archived",))


@dataclass(frozen=True)
class Point:
    """A resolved place: its position and how the tools name it."""

    x: float
    y: float
    z: float
    label: str
    """'the given point' for coordinates, else the words that were located."""


@dataclass(frozen=True)
class Candidate:
    """A candidate instance of a target: the record that stands for it and its similarity."""

    record: Record
    similarity: float

    @property
    def x(self) -> float:
        return self.record.x

    @property
    def y(self) -> float:
        return self.record.y


def parse_coordinates(text: str) -> tuple[float, float] | None:
    """``'12.5, -3'`` or ``'(12.5, -3)'`` as (x, y); None when the text is not coordinates.

    Raises:
        InvalidInputError: coordinates that are not finite.
    """
    match = _COORDINATES.match(text)
    if match is None:
        return None
    try:
        x, y = float(match.group(1)), float(match.group(2))
    except ValueError:
        return None  # two words ("room 423"), not two numbers
    if not (math.isfinite(x) and math.isfinite(y)):
        raise InvalidInputError(f"coordinates must be finite numbers, got {text!r}")
    return x, y


def resolve_place(search: HybridSearch, text: str) -> Point | None:
    """Where ``text`` is: coordinates as given; else a known entity that matches it well
    (its name holds every content word, or it is ENTITY_MATCH similar); else the locate
    estimate from the strong matching memories. None when nothing matches."""
    given = parse_coordinates(text)
    if given is not None:
        return Point(given[0], given[1], 0.0, "the given point")
    label = " ".join(text.split())
    vector = search.embed([text])[0]
    words = content_words(text)
    entities = search.dense(vector, 10, _ENTITIES)
    for record, similarity in entities:
        if similarity >= ENTITY_MATCH or (words and has_all_words(record, words)):
            return Point(record.x, record.y, record.z, label)
    estimate = estimate_location(search.dense(vector, 10, _ANY))
    if estimate is None:
        return None
    return Point(estimate.x, estimate.y, estimate.z, label)


def find_candidates(
    search: HybridSearch,
    target: str,
    merge_radius: float,
    stays: Callable[[list[str]], dict[str, list[EntityPosition]]] | None = None,
) -> list[Candidate]:
    """The distinct instances of ``target`` in memory, best match first.

    Entities come first: the entities close in meaning to the target (within CANDIDATE_MARGIN
    of the best entity and KIND_MARGIN of the best record, at least MIN_SIMILARITY) or holding
    every content word of it. Then observations (a gist's centre is no instance's position),
    by the same rule among themselves; one within ``merge_radius`` of a candidate already
    taken is a sighting of it and is dropped, and so is one of a place an entity among the
    hits has left (``stays`` reads their stays: the cup carried to the sink is no instance on
    the kitchen table any more; history.present_evidence).
    """
    vector = search.embed([target])[0]
    words = content_words(target)
    taken: list[Candidate] = []
    hit_lists = [search.dense(vector, CANDIDATE_POOL, where) for where in (_ENTITIES, _PERCEPTION)]
    if stays is not None:
        entity_ids = [r.id for r, _ in hit_lists[0] if isinstance(r, Entity)]
        for history_of in stays(entity_ids).values():
            if len(history_of) > 1:
                hit_lists[1] = present_evidence(hit_lists[1], history_of, 2 * STAY_RADIUS)
    overall = max((s for hits in hit_lists for _, s in hits), default=0.0)
    for hits in hit_lists:
        for record, similarity in _relevant(hits, words, overall - KIND_MARGIN):
            if all(_apart(record, other.record, merge_radius) for other in taken):
                taken.append(Candidate(record, similarity))
    return taken


def _relevant(
    hits: list[tuple[Record, float]], words: list[str], overall_floor: float
) -> list[tuple[Record, float]]:
    if not hits:
        return []
    best = max(similarity for _, similarity in hits)
    floor = max(MIN_SIMILARITY, best - CANDIDATE_MARGIN, overall_floor)
    chosen = [
        (record, similarity)
        for record, similarity in hits
        if similarity >= floor or (len(words) > 0 and has_all_words(record, words))
    ]
    # Equal similarities (the same caption seen from several spots) rank the same way on every
    # run: by position, not by the random ids.
    return sorted(chosen, key=lambda hit: (-round(hit[1], 6), hit[0].x, hit[0].y, hit[0].id))


def _apart(a: Record, b: Record, radius: float) -> bool:
    return bool(np.hypot(a.x - b.x, a.y - b.y) > radius)
