"""Grounding: which world entity (Entity node) a profile object is.

A profile object is matched against the entities nearest to its embedding (LanceDB, kind
"entity"); an entity qualifies when the name similarity reaches GROUND_THRESHOLD and the type
agrees: the head nouns are the same or close ("cup" / "mug"), the entity's type names the
object's head noun, and no modifier conflicts ("red cup" is not the "blue cup"). An instance
object is grounded in its best entity; a category ("blue plates") in up to MAX_CATEGORY_MEMBERS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.consolidation.names import words
from emem_graph.models import Entity
from emem_graph.profile.matching import conflicts, cosine, head_noun
from emem_graph.storage.vectors import VectorFilter

if TYPE_CHECKING:
    from emem_graph.profile.models import ObjectNode
    from emem_graph.storage.store import MemoryStore

GROUND_THRESHOLD = 0.55
"""Cosine similarity of object phrase and entity name from which an entity may be the object
("yellow cup with the wooden handle" / "yellow cup" measure ~0.8 with MiniLM)."""
HEAD_THRESHOLD = 0.7
"""Cosine similarity of two different head nouns that still name one kind ("cup" / "mug")."""
CANDIDATES = 8
"""Nearest entities looked at per object."""
MAX_CATEGORY_MEMBERS = 5

Embed = Callable[[list[str]], np.ndarray]


def ground_object(store: MemoryStore, embed: Embed, obj: ObjectNode) -> list[tuple[str, float]]:
    """The entities ``obj`` is grounded in: [(entity id, similarity)], best first (may be
    empty)."""
    hits = store.nearest(obj.vector, CANDIDATES, VectorFilter(kinds=("entity",)))
    passing: list[tuple[str, float]] = []
    for hit, record in hits:
        if not isinstance(record, Entity) or hit.score < GROUND_THRESHOLD:
            continue
        if same_kind(embed, obj.text, record):
            passing.append((record.id, float(hit.score)))
    passing.sort(key=lambda pair: -pair[1])
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
