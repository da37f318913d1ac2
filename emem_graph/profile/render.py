"""One natural-language line per knowledge node (template rendering, no LLM needed).

Object semantics: ``[object] my favorite cup (Alice): the yellow cup with the wooden handle —
at (3.2, 1.0) as entity 'yellow cup'.`` Routines: ``[routine] my cozy evening (Alice): 1) move
candle to the table; 2) move candle to the couch. Objects: candle at (2.0, 3.0) as entity
'white candle'.`` Positions are the grounded entities' current estimates (x, y with one
decimal, API.md's style); an object not matched to any entity yet says so.
"""

from __future__ import annotations

from emem_graph.profile.models import OBJECT_SEMANTICS, KnowledgeNode, ObjectNode
from emem_graph.profile.storage import ProfileSnapshot
from emem_graph.retrieval.formatting import one_line


def render(knowledge: KnowledgeNode, snapshot: ProfileSnapshot) -> str:
    """The knowledge node as one line of text."""
    user = snapshot.users.get(knowledge.user_id, knowledge.user_id)
    if knowledge.subtype == OBJECT_SEMANTICS:
        objects = [snapshot.objects[o] for o in knowledge.object_ids if o in snapshot.objects]
        body = "; ".join(_object_phrase(o, with_name=True) for o in objects) or "(no objects)"
        return one_line(f"[object] {knowledge.alias} ({user}): {body}.")
    steps = "; ".join(f"{i}) {p.text}" for i, p in enumerate(knowledge.patterns, start=1))
    line = f"[routine] {knowledge.alias} ({user}): {steps or '(no steps)'}."
    seen: dict[str, ObjectNode] = {}
    for pattern in knowledge.patterns:
        for kind, node_id in pattern.arguments:
            if kind == "object" and node_id in snapshot.objects:
                seen.setdefault(node_id, snapshot.objects[node_id])
    grounded = [_object_phrase(o, with_name=True) for o in seen.values() if o.groundings]
    if grounded:
        line += " Objects: " + "; ".join(grounded) + "."
    return one_line(line)


def _object_phrase(obj: ObjectNode, *, with_name: bool) -> str:
    granularity = " (any of that kind)" if obj.granularity == "category" else ""
    name = f"{obj.text}{granularity}" if with_name else ""
    if not obj.groundings:
        return f"{name} — not located yet"
    places = ", ".join(f"at ({g.x:.1f}, {g.y:.1f}) as entity '{g.name}'" for g in obj.groundings)
    return f"{name} — {places}"
