"""Fleet entities: the entities of several robots merged into one where they are the same
thing, by the rule one memory merges sightings with: names that mean the same (the cosine
similarity of their name vectors reaches ``entity_similarity_threshold``, or the names are
equal ignoring case) at places within ``entity_spatial_radius`` of each other, in the fleet
frame. Each fleet entity keeps its per-robot sightings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from emem_graph.models import Entity
from emem_graph.retrieval.formatting import format_entity, format_time


@dataclass
class Sighting:
    """One robot's entity, in the fleet frame, with its name vector (unit length)."""

    robot: str
    entity: Entity
    vector: np.ndarray


@dataclass
class FleetEntity:
    """One thing seen by one or more robots."""

    sightings: list[Sighting] = field(default_factory=list)

    @property
    def robots(self) -> list[str]:
        """The robots that saw it (sorted)."""
        return sorted({s.robot for s in self.sightings})

    @property
    def entity(self) -> Entity:
        """The merged entity: the name and type of its most-seen sighting, the position
        weighted by sightings, counts summed, first and last seen over all."""
        ranked = sorted(self.sightings, key=lambda s: (-s.entity.observation_count, s.robot))
        weights = np.array([max(1, s.entity.observation_count) for s in ranked], dtype=float)
        points = np.array([[s.entity.x, s.entity.y, s.entity.z] for s in ranked])
        x, y, z = (weights[:, None] * points).sum(axis=0) / weights.sum()
        head = ranked[0].entity
        return head.model_copy(
            update={
                "x": float(x),
                "y": float(y),
                "z": float(z),
                "observation_count": int(sum(s.entity.observation_count for s in ranked)),
                "first_seen": min(s.entity.first_seen for s in ranked),
                "last_seen": max(s.entity.last_seen for s in ranked),
            }
        )

    def line(self) -> str:
        """``[robots a, b] [entity/...] (x,y) [seen Nx] name`` then each robot's sightings:
        ``(a: 3x at (x,y), last {time}; b: ...)``."""
        per_robot = "; ".join(
            f"{s.robot}: {s.entity.observation_count}x at ({s.entity.x:.1f},{s.entity.y:.1f}), "
            f"last {format_time(s.entity.last_seen)}"
            for s in sorted(self.sightings, key=lambda s: (s.robot, -s.entity.last_seen))
        )
        robots = ", ".join(self.robots)
        label = f"[robot {robots}]" if len(self.robots) == 1 else f"[robots {robots}]"
        return f"{label} {format_entity(self.entity)} ({per_robot})"


def merge_entities(
    sightings: Sequence[Sighting], *, name_threshold: float, radius: float
) -> list[FleetEntity]:
    """Group sightings into fleet entities, most-seen first: a sighting joins the first fleet
    entity that has a sighting of the same meaning within ``radius`` metres (candidates are
    found on a grid of ``radius`` cells, so the cost grows with the sightings, not their
    square)."""
    merged: list[FleetEntity] = []
    cell = max(radius, 1e-6)
    grid: dict[tuple[int, int], list[int]] = {}
    ordered = sorted(sightings, key=lambda s: (-s.entity.observation_count, s.robot, s.entity.id))
    for sighting in ordered:
        cx, cy = math.floor(sighting.entity.x / cell), math.floor(sighting.entity.y / cell)
        nearby = sorted(
            {i for dx in (-1, 0, 1) for dy in (-1, 0, 1) for i in grid.get((cx + dx, cy + dy), ())}
        )
        home = next(
            (i for i in nearby if _same_thing(merged[i], sighting, name_threshold, radius)), None
        )
        if home is None:
            home = len(merged)
            merged.append(FleetEntity([sighting]))
        else:
            merged[home].sightings.append(sighting)
        members = grid.setdefault((cx, cy), [])
        if home not in members:
            members.append(home)
    return merged


def _same_thing(
    fleet_entity: FleetEntity, sighting: Sighting, name_threshold: float, radius: float
) -> bool:
    for other in fleet_entity.sightings:
        dx = other.entity.x - sighting.entity.x
        dy = other.entity.y - sighting.entity.y
        if dx * dx + dy * dy > radius * radius:
            continue
        same_name = other.entity.name.strip().lower() == sighting.entity.name.strip().lower()
        if same_name or float(other.vector @ sighting.vector) >= name_threshold:
            return True
    return False
