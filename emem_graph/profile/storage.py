"""The profile's nodes in the graph: reading the whole profile back, and the writes of an add,
an update, a removal and a grounding, each as one GraphChange (one transaction).

A profile is small (a household's facts and routines: tens to hundreds of nodes), so it is read
whole into a ProfileSnapshot after every write and searched in memory with exact NumPy cosine;
the embeddings are stored on the nodes (FLOAT[] properties), never in LanceDB.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from emem_graph.profile.models import (
    GroundedEntity,
    KnowledgeNode,
    LocationNode,
    ObjectNode,
    PatternNode,
)
from emem_graph.storage.changes import GraphChange

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore


def _vector(value: Any, dim: int) -> np.ndarray:
    if not value:
        return np.zeros(dim, dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


@dataclass
class ProfileSnapshot:
    """The whole profile as read from the graph at one moment."""

    users: dict[str, str] = field(default_factory=dict)
    """user id -> name as first given."""
    knowledge: dict[str, KnowledgeNode] = field(default_factory=dict)
    objects: dict[str, ObjectNode] = field(default_factory=dict)
    locations: dict[str, LocationNode] = field(default_factory=dict)

    def knowledge_of(self, user_id: str | None, subtype: str | None = None) -> list[KnowledgeNode]:
        """Knowledge of a user (None: every user), optionally of one subtype, oldest first."""
        return [
            k
            for k in self.knowledge.values()
            if (user_id is None or k.user_id == user_id)
            and (subtype is None or k.subtype == subtype)
        ]

    def objects_of(self, user_id: str) -> list[ObjectNode]:
        return [o for o in self.objects.values() if o.user_id == user_id]

    def locations_of(self, user_id: str) -> list[LocationNode]:
        return [p for p in self.locations.values() if p.user_id == user_id]


def read_snapshot(store: MemoryStore, dim: int) -> ProfileSnapshot:
    """Read every profile node and edge (one query per table)."""
    graph = store.graph
    snapshot = ProfileSnapshot()
    snapshot.users = {row["id"]: row["name"] for row in graph.query("profile_users")}
    for row in graph.query("profile_objects"):
        snapshot.objects[row["id"]] = ObjectNode(
            id=row["id"],
            user_id=row["user_id"],
            name=row["name"],
            attributes=list(json.loads(row["attributes"] or "[]")),
            granularity=row["granularity"] or "instance",
            vector=_vector(row["vector"], dim),
        )
    for row in graph.query("profile_groundings"):
        found = snapshot.objects.get(row["object_id"])
        if found is not None:
            found.groundings.append(
                GroundedEntity(
                    entity_id=row["entity_id"],
                    name=row["name"],
                    entity_type=row["entity_type"],
                    x=float(row["x"]),
                    y=float(row["y"]),
                    z=float(row["z"] or 0.0),
                    similarity=float(row["similarity"]),
                )
            )
    for row in graph.query("profile_locations"):
        snapshot.locations[row["id"]] = LocationNode(
            id=row["id"],
            user_id=row["user_id"],
            name=row["name"],
            expression=row["expression"] or row["name"],
            vector=_vector(row["vector"], dim),
        )
    for row in graph.query("profile_knowledge"):
        snapshot.knowledge[row["id"]] = KnowledgeNode(
            id=row["id"],
            user_id=row["user_id"],
            subtype=row["subtype"],
            alias=row["alias"],
            description=row["description"] or "",
            content=row["content"] or "",
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
            alias_vector=_vector(row["alias_vector"], dim),
            content_vector=_vector(row["content_vector"], dim),
        )
    arguments: dict[str, list[tuple[int, str, str]]] = {}
    for row in graph.query("profile_targets"):
        kind = "object" if row["kind"] == "ProfileObject" else "location"
        arguments.setdefault(row["pattern_id"], []).append(
            (int(row["position"]), kind, row["node_id"])
        )
    patterns: dict[str, list[tuple[PatternNode, str | None]]] = {}
    for row in graph.query("profile_patterns"):
        node = PatternNode(
            id=row["id"],
            knowledge_id=row["knowledge_id"],
            step=int(row["step"]),
            action=row["action"],
            text=row["text"],
            arguments=[
                (kind, node_id) for _, kind, node_id in sorted(arguments.get(row["id"], []))
            ],
        )
        patterns.setdefault(row["knowledge_id"], []).append((node, row["next_id"]))
    for knowledge_id, chain in patterns.items():
        knowledge = snapshot.knowledge.get(knowledge_id)
        if knowledge is not None:
            knowledge.patterns = before_order(chain)
    for row in graph.query("profile_composed"):
        knowledge = snapshot.knowledge.get(row["knowledge_id"])
        if knowledge is not None:
            knowledge.object_ids.append(row["object_id"])
    return snapshot


def before_order(chain: list[tuple[PatternNode, str | None]]) -> list[PatternNode]:
    """Patterns in the order of their BEFORE edges: from the one nothing comes before, along
    the chain. Patterns off the chain (never written so) follow by their step number."""
    by_id = {node.id: node for node, _ in chain}
    following = {node.id: nxt for node, nxt in chain}
    targets = {nxt for nxt in following.values() if nxt is not None}
    heads = sorted((n for n in by_id.values() if n.id not in targets), key=lambda n: n.step)
    ordered: list[PatternNode] = []
    seen: set[str] = set()
    for start in heads:
        current: str | None = start.id
        while current is not None and current not in seen and current in by_id:
            seen.add(current)
            ordered.append(by_id[current])
            current = following.get(current)
    ordered.extend(sorted((n for n in by_id.values() if n.id not in seen), key=lambda n: n.step))
    return ordered


def as_list(vector: np.ndarray) -> list[float]:
    """A vector as the Python list Kuzu takes for a FLOAT[] parameter."""
    return [float(v) for v in np.asarray(vector, dtype=np.float32).reshape(-1)]


@dataclass
class KnowledgeWrite:
    """Everything one add or update writes (built by the profile, applied in one transaction).

    Attributes:
        user: (id, name, created_at) of the user (merged).
        knowledge: the knowledge node's parameters (profile_create_knowledge's).
        replace: True to update the existing node of that id (its patterns and COMPOSED_OF edges
            are replaced), False to create it.
        objects / locations: new object and location nodes' parameters.
        patterns: new patterns' parameters, in step order.
        targets: (pattern id, kind, node id, position) of every step argument.
        composed: object ids the knowledge is COMPOSED_OF.
    """

    user: tuple[str, str, float]
    knowledge: dict[str, Any]
    replace: bool
    objects: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)
    patterns: list[dict[str, Any]] = field(default_factory=list)
    targets: list[tuple[str, str, str, int]] = field(default_factory=list)
    composed: list[str] = field(default_factory=list)

    def change(self) -> GraphChange:
        """The GraphChange writing all of it, orphans of the update removed."""
        user_id, name, created_at = self.user
        change = GraphChange()
        change.run("profile_merge_user", {"id": user_id, "name": name, "created_at": created_at})
        change.run_each("profile_create_object", self.objects)
        change.run_each("profile_create_location", self.locations)
        knowledge_id = self.knowledge["id"]
        if self.replace:
            updated = {k: v for k, v in self.knowledge.items() if k not in _CREATE_ONLY}
            change.run("profile_update_knowledge", updated)
            change.run("profile_delete_patterns", {"id": knowledge_id})
            change.run("profile_unlink_objects", {"id": knowledge_id})
        else:
            change.run("profile_create_knowledge", self.knowledge)
        change.run_each("profile_create_pattern", self.patterns)
        change.run_each(
            "profile_link_before",
            [
                {"a": a["id"], "b": b["id"]}
                for a, b in zip(self.patterns, self.patterns[1:], strict=False)
            ],
        )
        for kind in ("object", "location"):
            change.run_each(
                f"profile_link_target_{kind}",
                [
                    {"pattern": pattern, "node": node, "position": position}
                    for pattern, which, node, position in self.targets
                    if which == kind
                ],
            )
        change.run_each(
            "profile_link_composed",
            [{"knowledge_id": knowledge_id, "object_id": o} for o in dict.fromkeys(self.composed)],
        )
        change.run("profile_delete_orphan_objects", {"user_id": user_id})
        change.run("profile_delete_orphan_locations", {"user_id": user_id})
        return change


_CREATE_ONLY = frozenset({"user_id", "subtype", "created_at"})


def removal(knowledge: KnowledgeNode) -> GraphChange:
    """The change deleting a knowledge node, its patterns and the nodes only it used."""
    change = GraphChange()
    change.run("profile_delete_knowledge", {"id": knowledge.id})
    change.run("profile_delete_orphan_objects", {"user_id": knowledge.user_id})
    change.run("profile_delete_orphan_locations", {"user_id": knowledge.user_id})
    return change


def grounding(links: dict[str, list[tuple[str, float]]]) -> GraphChange:
    """The change replacing the GROUNDED_AS edges of these objects: object id -> [(entity id,
    similarity)] (an empty list ungrounds it)."""
    change = GraphChange()
    change.run_each("profile_unground", [{"object_id": o} for o in links])
    change.run_each(
        "profile_ground",
        [
            {"object_id": o, "entity_id": e, "similarity": float(s)}
            for o, found in links.items()
            for e, s in found
        ],
    )
    return change
