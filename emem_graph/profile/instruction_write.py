"""The graph write of one understood instruction: its knowledge node, its pattern steps (each
TARGETing the objects and places it names) and the object and location nodes, an existing node
of the user reused when it names the same thing (NodeChooser)."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from emem_graph.profile.matching import cosine, same_thing
from emem_graph.profile.models import (
    OBJECT_SEMANTICS,
    Instruction,
    KnowledgeNode,
    LocationSpec,
    ObjectSpec,
    ProfileUpdate,
    StepSpec,
)
from emem_graph.profile.storage import KnowledgeWrite, ProfileSnapshot, as_list


def knowledge_write(
    instruction: Instruction,
    update: ProfileUpdate,
    existing: KnowledgeNode | None,
    snapshot: ProfileSnapshot,
    vectors: dict[str, np.ndarray],
    user: tuple[str, str, float],
    description: str,
    content: list[str],
) -> KnowledgeWrite:
    """The write that adds (``existing`` None) or updates the knowledge ``update`` names.

    Args:
        instruction: what the user said, understood.
        update: its result so far (its knowledge id); the nodes reused and created are noted
            in it.
        existing: the user's knowledge node this instruction updates, or None.
        snapshot: the profile as stored now.
        vectors: the vector of every phrase of the instruction (alias, content, objects and
            step arguments).
        user: (id, name, now) of the user writing it.
        description: the knowledge's description; ``content`` starts with it.
        content: the description and the object or step texts.
    """
    uid, _, now = user
    knowledge_id = update.knowledge_id
    nodes = NodeChooser(vectors, snapshot, uid, update)
    write = KnowledgeWrite(user=user, knowledge={}, replace=existing is not None)
    if instruction.subtype == OBJECT_SEMANTICS:
        for spec in instruction.objects:
            write.composed.append(nodes.object_id(spec))
    else:
        for step_number, step in enumerate(instruction.steps):
            pattern_id = uuid.uuid4().hex
            for position, argument in enumerate(step.arguments):
                if isinstance(argument.spec, ObjectSpec):
                    node = nodes.object_id(argument.spec)
                else:
                    node = nodes.location_id(argument.spec)
                write.targets.append((pattern_id, argument.kind, node, position))
            write.patterns.append(
                {
                    "knowledge_id": knowledge_id,
                    "id": pattern_id,
                    "step": step_number,
                    "action": step.action,
                    "arguments": _arguments_json(step),
                    "text": step.text,
                }
            )
    write.objects, write.locations = nodes.new_objects, nodes.new_locations
    alias_vector = vectors[instruction.alias]
    content_vector = vectors[" ".join(content)]
    write.knowledge = {
        "user_id": uid,
        "id": knowledge_id,
        "subtype": instruction.subtype,
        "alias": instruction.alias,
        "description": description,
        "content": "; ".join(content[1:]),
        "created_at": existing.created_at if existing is not None else now,
        "updated_at": now,
        "alias_vector": as_list(alias_vector),
        "content_vector": as_list(content_vector),
    }
    return write


class NodeChooser:
    """Picks, for each object or place phrase of one instruction, an existing node of the user
    that names the same thing (matching.same_thing) or a new node (shared within the
    instruction: "the candle" twice is one node)."""

    def __init__(
        self,
        vectors: dict[str, np.ndarray],
        snapshot: ProfileSnapshot,
        uid: str,
        update: ProfileUpdate,
    ) -> None:
        self._vectors = vectors
        self._uid = uid
        self._update = update
        self._objects: list[tuple[str, str, np.ndarray]] = [
            (o.id, o.text, o.vector) for o in snapshot.objects_of(uid)
        ]
        self._locations: list[tuple[str, str, np.ndarray]] = [
            (p.id, p.name, p.vector) for p in snapshot.locations_of(uid)
        ]
        self._names = {o.id: o.name for o in snapshot.objects_of(uid)}
        self._names.update({p.id: p.name for p in snapshot.locations_of(uid)})
        self._existing = set(self._names)
        self.new_objects: list[dict[str, Any]] = []
        self.new_locations: list[dict[str, Any]] = []

    def object_id(self, spec: ObjectSpec) -> str:
        """The id of the user's object node ``spec`` names (a new node when none does)."""
        vector = self._vectors[spec.text]
        found = self._match(self._objects, spec.text, vector)
        if found is not None:
            return found
        node_id = uuid.uuid4().hex
        self.new_objects.append(
            {
                "id": node_id,
                "user_id": self._uid,
                "name": spec.name,
                "attributes": _json(spec.attributes),
                "granularity": spec.granularity,
                "vector": as_list(vector),
            }
        )
        self._objects.append((node_id, spec.text, vector))
        self._names[node_id] = spec.name
        self._update.created.append(spec.name)
        return node_id

    def location_id(self, spec: LocationSpec) -> str:
        """The id of the user's location node ``spec`` names (a new node when none does)."""
        vector = self._vectors[spec.text]
        found = self._match(self._locations, spec.name, vector)
        if found is not None:
            return found
        node_id = uuid.uuid4().hex
        self.new_locations.append(
            {
                "id": node_id,
                "user_id": self._uid,
                "name": spec.name,
                "expression": spec.expression or spec.name,
                "vector": as_list(vector),
            }
        )
        self._locations.append((node_id, spec.name, vector))
        self._names[node_id] = spec.name
        self._update.created.append(spec.name)
        return node_id

    def _match(
        self, pool: list[tuple[str, str, np.ndarray]], text: str, vector: np.ndarray
    ) -> str | None:
        if not pool:
            return None
        lowered = text.lower()
        for node_id, node_text, _ in pool:
            if node_text.lower() == lowered:
                self._note(text, node_id)
                return node_id
        scores = cosine(vector, np.stack([v for _, _, v in pool]))
        for index in np.argsort(-scores):
            node_id, node_text, _ = pool[int(index)]
            if same_thing(text, node_text, float(scores[index])):
                self._note(text, node_id)
                return node_id
            if scores[index] < 0.5:
                break
        return None

    def _note(self, text: str, node_id: str) -> None:
        if node_id not in self._existing:
            return  # named twice in this instruction: one new node, not a reuse
        reuse = (text, self._names.get(node_id, node_id))
        if reuse not in self._update.reused:
            self._update.reused.append(reuse)


def describe(instruction: Instruction) -> str:
    """The description of an instruction given without one, made from its alias and its
    objects or steps."""
    if instruction.subtype == OBJECT_SEMANTICS:
        names = " and ".join(o.name for o in instruction.objects)
        return f"{instruction.alias} is {names}"
    steps = ", then ".join(s.text for s in instruction.steps)
    return f"{instruction.alias}: {steps}"


def _arguments_json(step: StepSpec) -> str:
    return _json(
        [
            {"kind": a.kind, "name": a.spec.name}
            | ({"expression": a.spec.expression} if isinstance(a.spec, LocationSpec) else {})
            for a in step.arguments
        ]
    )


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
