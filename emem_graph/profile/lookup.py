"""Which of the profile's knowledge a text names: the ranked hits of a request (user_profile),
the knowledge an alias updates or removes, and what a locate/recall concept's alias stands for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.profile import parse
from emem_graph.profile.matching import ALIAS_THRESHOLD, conflicts, cosine, strip_possessive
from emem_graph.profile.models import OBJECT_SEMANTICS, KnowledgeNode, ProfileHit
from emem_graph.profile.render import render

if TYPE_CHECKING:
    from emem_graph.profile.grounding import Embed
    from emem_graph.profile.storage import ProfileSnapshot

SUBTYPE_BONUS = 0.1
"""Added to the score of knowledge of the type a request was classified as (the right subgraph
first; the other still answers when it matches much better)."""
MENTION_BONUS = 0.15
"""Added when the request names the alias word for word ("... my cozy evening")."""
MIN_SCORE = 0.3
"""Below this cosine similarity a knowledge node is not returned at all."""
RESOLVE_THRESHOLD = 0.75
"""Cosine similarity of a locate/recall concept and an alias from which the concept is read as
that alias (the concept must also say whose: 'my', 'our', ...)."""

_POSSESSIVE_RE = re.compile(r"\b(my|our|mine|his|her|their)\b", re.IGNORECASE)


def ranked_hits(
    snapshot: ProfileSnapshot, uid: str | None, query: str, k: int, embed: Embed
) -> list[ProfileHit]:
    """The ``k`` knowledge nodes (of user ``uid``; None: anyone's) best matching ``query``,
    best first: the better of alias and content similarity, with SUBTYPE_BONUS for the type
    the request was classified as and MENTION_BONUS when it names the alias."""
    candidates = snapshot.knowledge_of(uid)
    if not candidates:
        return []
    wanted = parse.classify_request(query)
    vector = embed([query])[0]
    aliases = np.stack([k.alias_vector for k in candidates])
    contents = np.stack([k.content_vector for k in candidates])
    scores = np.maximum(cosine(vector, aliases), cosine(vector, contents))
    lowered = " ".join(query.lower().split())
    ranked: list[tuple[float, KnowledgeNode]] = []
    for knowledge, score in zip(candidates, scores, strict=True):
        if score < MIN_SCORE:
            continue
        total = float(score)
        if wanted is not None and knowledge.subtype == wanted:
            total += SUBTYPE_BONUS
        if strip_possessive(knowledge.alias).lower() in lowered:
            total += MENTION_BONUS
        ranked.append((total, knowledge))
    ranked.sort(key=lambda pair: (-pair[0], pair[1].id))
    return [
        ProfileHit(
            knowledge=knowledge,
            user_name=snapshot.users.get(knowledge.user_id, knowledge.user_id),
            score=score,
            description=render(knowledge, snapshot),
        )
        for score, knowledge in ranked[:k]
    ]


def existing_knowledge(
    snapshot: ProfileSnapshot,
    uid: str,
    subtype: str,
    alias: str,
    embed: Embed,
    vector: np.ndarray | None = None,
) -> KnowledgeNode | None:
    """The knowledge of user ``uid`` and ``subtype`` that ``alias`` names: the same words, or
    an alias at least ALIAS_THRESHOLD similar that does not conflict (``vector``: the alias's,
    when already embedded); None when there is none."""
    own = snapshot.knowledge_of(uid, subtype)
    if not own:
        return None
    wanted = " ".join(alias.lower().split())
    for knowledge in own:
        if " ".join(knowledge.alias.lower().split()) == wanted:
            return knowledge
    if vector is None:
        vector = embed([alias])[0]
    scores = cosine(vector, np.stack([k.alias_vector for k in own]))
    index = int(np.argmax(scores))
    if scores[index] >= ALIAS_THRESHOLD and not conflicts(alias, own[index].alias):
        return own[index]
    return None


def says_whose(concept: object) -> bool:
    """Whether a locate/recall concept says whose it is ('my', 'our', ...): only then may it
    name an alias."""
    return isinstance(concept, str) and _POSSESSIVE_RE.search(concept) is not None


def concept_names(
    snapshot: ProfileSnapshot, uid: str | None, concept: str, embed: Embed
) -> str | None:
    """What the object-semantics alias ``concept`` names stands for (of user ``uid``; None:
    anyone's): the grounded entities' names, or the objects' own phrases where not grounded.
    None when it names no alias."""
    candidates = [k for k in snapshot.knowledge_of(uid, OBJECT_SEMANTICS) if k.object_ids]
    if not candidates:
        return None
    lowered = " ".join(concept.lower().split())
    mentioned = [k for k in candidates if strip_possessive(k.alias).lower() in lowered]
    if mentioned:
        best = max(mentioned, key=lambda k: len(k.alias))
    else:
        vector = embed([concept])[0]
        scores = cosine(vector, np.stack([k.alias_vector for k in candidates]))
        index = int(np.argmax(scores))
        if scores[index] < RESOLVE_THRESHOLD:
            return None
        best = candidates[index]
    names: list[str] = []
    for object_id in best.object_ids:
        obj = snapshot.objects.get(object_id)
        if obj is not None:
            names.append(obj.groundings[0].name if obj.groundings else obj.name)
    return " and ".join(dict.fromkeys(names)) or None
