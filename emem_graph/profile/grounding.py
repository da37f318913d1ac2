"""Grounding: which world entity (Entity node) a profile object is.

A profile object is matched against the entities nearest to its embedding and to the embedding
of its core phrase (LanceDB, kind "entity"; "keys" of "keys on the red keychain"); an entity
qualifies when its better name similarity reaches GROUND_THRESHOLD and the type agrees: the head
nouns are the same or close ("cup" / "mug") or the entity's type names the object's head noun,
and no modifier conflicts ("red cup" is not the "blue cup"). Entities named with a modifier the
user said rank a little higher. An instance object is grounded in its best entity; a category
("blue plates") in up to MAX_CATEGORY_MEMBERS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.filters import VectorFilter
from emem_graph.models import Entity
from emem_graph.profile.matching import (
    conflicts,
    content_words,
    core_phrase,
    cosine,
    head_noun,
)
from emem_graph.text.names import words

if TYPE_CHECKING:
    from emem_graph.profile.models import ObjectNode
    from emem_graph.storage.store import MemoryStore

GROUND_THRESHOLD = 0.55
"""Cosine similarity of object phrase and entity name from which an entity may be the object
("yellow cup with the wooden handle" / "yellow cup" measure ~0.8 with MiniLM)."""
HEAD_THRESHOLD = 0.7
"""Cosine similarity of two different head nouns that still name one kind ("cup" / "mug")."""
MODIFIER_BONUS = 0.05
"""Ranking bonus per modifier word (at most two) of an entity's name that the user also said."""
CANDIDATES = 8
"""Nearest entities looked at per object."""
MAX_CATEGORY_MEMBERS = 5

Embed = Callable[[list[str]], np.ndarray]


def ground_object(store: MemoryStore, embed: Embed, obj: ObjectNode) -> list[tuple[str, float]]:
    """The entities ``obj`` is grounded in: [(entity id, similarity)], best first (may be
    empty)."""
    # The whole phrase, and its core ("keys" of "keys on the red keychain"), which is what an
    # entity's name usually holds; an entity scores its better similarity of the two.
    queries = [obj.vector]
    core = core_phrase(obj.text)
    if core and core != " ".join(words(obj.text)):
        queries.append(embed([core])[0])
    best: dict[str, tuple[Entity, float]] = {}
    for vector in queries:
        for hit, record in store.nearest(vector, CANDIDATES, VectorFilter(kinds=("entity",))):
            if isinstance(record, Entity) and hit.score > best.get(record.id, (record, -1.0))[1]:
                best[record.id] = (record, float(hit.score))
    said = set(content_words(obj.text))
    ranked: list[tuple[float, str, float]] = []
    for entity, score in best.values():
        if score < GROUND_THRESHOLD or not same_kind(embed, obj.text, entity):
            continue
        # An entity named with a modifier the user also said ("orange notebook" for "the
        # spiral notebook with the orange cover") beats a bare "notebook" of similar score.
        shared = len((set(content_words(entity.name)) - {head_noun(entity.name)}) & said)
        ranked.append((score + min(shared, 2) * MODIFIER_BONUS, entity.id, score))
    ranked.sort(key=lambda item: (-item[0], item[1]))
    passing = [(entity_id, score) for _, entity_id, score in ranked]
    limit = MAX_CATEGORY_MEMBERS if obj.granularity == "category" else 1
    return passing[:limit]


def same_kind(embed: Embed, phrase: str, entity: Entity) -> bool:
    """Whether an entity can be the object ``phrase`` names: same or close head noun (or the
    entity's type names it), and no conflicting modifier."""
    if conflicts(phrase, entity.name):
        return False
    mine, theirs = head_noun(phrase), head_noun(entity.name)
    if not mine or not theirs or mine == theirs:
        return True
    if entity.entity_type and mine in words(entity.entity_type):
        return True
    vectors = embed([mine, theirs])
    return float(cosine(vectors[0], vectors[1:])[0]) >= HEAD_THRESHOLD
