"""The spatial capability: the topological map's upkeep and the tools route_query,
directional_query and navigate_to, returning API.md's line style.

Positions print with one decimal; candidates print as the record lines of the core tools
followed by `` — `` and what the tool measured (distance along the route, detour, distance,
side). Distances along the map are route lengths over CONNECTS (Kuzu weighted shortest paths,
queries/spatial_route*.cypher); a position is joined to the map at its nearest place.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from emem_graph.consolidation import reads
from emem_graph.errors import InvalidInputError
from emem_graph.gate import while_open
from emem_graph.retrieval.dispatch import tool_method
from emem_graph.retrieval.formatting import format_record, numbered
from emem_graph.retrieval.search import HybridSearch
from emem_graph.spatial import geometry, places
from emem_graph.spatial import schemas as _schemas  # noqa: F401  (registers the schemas)
from emem_graph.spatial.keeper import MapKeeper
from emem_graph.spatial.places import Route
from emem_graph.spatial.resolve import Candidate, Point, find_candidates, resolve_place

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.models import Observation
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

WAYPOINT_TOLERANCE = 0.5
"""Metres: navigate_to drops waypoints where the path stays this close to the walked one."""
MIN_DIRECTION_DISTANCE = 0.5
"""Metres: a candidate this close to the anchor has no direction from it."""
MIN_SIDE_OFFSET = 0.5
"""Metres: a candidate this close to the route is on it, neither left nor right (an
observation is placed where the robot stood, on its path)."""
NO_MAP = "No map yet: the robot has not been anywhere (no perception observations)."


class SpatialHost(Protocol):
    """What the spatial tools need from the memory facade."""

    config: MemoryConfig

    def flush(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...

    @property
    def current_position(self) -> np.ndarray | None: ...


@dataclass(frozen=True)
class RoutedCandidate:
    """A candidate of route_query with what it costs to take it in."""

    candidate: Candidate
    along: float
    detour: float


@dataclass(frozen=True)
class _Leg:
    """A route between two points through the map: the points, their places, the route."""

    start: Point
    goal: Point
    route: Route
    start_offset: float
    goal_offset: float

    @property
    def length(self) -> float:
        return self.start_offset + self.route.length + self.goal_offset

    def polyline(self) -> tuple[list[float], list[float]]:
        """The path: start point, the route's places, goal point."""
        xs = [self.start.x, *self.route.xs, self.goal.x]
        ys = [self.start.y, *self.route.ys, self.goal.y]
        return xs, ys


class SpatialTools:
    """The spatial capability of one memory (Capability protocol of emem_graph.capability).

    Args:
        host: the memory facade (flush, embed, current position, config).
        store: its store.
        clock: its clock.
    """

    def __init__(self, host: SpatialHost, store: MemoryStore, clock: Callable[[], float]) -> None:
        self.name = "spatial"
        self.tool_names = ["route_query", "directional_query", "navigate_to"]
        self._host = host
        self._store = store
        self._config: MemoryConfig = host.config
        self.keeper = MapKeeper(store, host.config)
        self._search = HybridSearch(store, host.embed, host.config, clock)

    # --- Capability ----------------------------------------------------------------------------

    @while_open
    def flush_before_tool(self) -> None:
        """Flush the memory, write the map's pending growth and link new or moved entities to
        their places."""
        self._host.flush()
        self.keeper.sync_entities()

    def observations_written(self, observations: list[Observation]) -> None:
        """Grow the map from a written batch (on the flush thread; written in larger ones)."""
        self.keeper.observations_written(observations)

    def close(self) -> None:
        """Write the map's pending growth; a failure is logged, not raised (the map is derived:
        the next open places those observations again), so the memory still closes."""
        try:
            self.keeper.write_pending()
        except Exception as exc:
            log.warning("the map's last growth was not written (placed again on open): %s", exc)

    @while_open
    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Build the map again from every perception observation; returns the place count."""
        self._host.flush()
        return self.keeper.rebuild(progress)

    # --- tools ---------------------------------------------------------------------------------

    @tool_method
    def route_query(
        self,
        target: str,
        goal: str,
        start: str | None = None,
        max_detour: float = 30.0,
        n_results: int = 10,
    ) -> str:
        """Candidates of ``target`` ranked by the detour they add to the route from ``start``
        (default: the current position) to ``goal``."""
        found = self.route_candidates(target, goal, start, max_detour)
        if isinstance(found, str):
            return found
        leg, ranked = found
        header = _route_header(leg)
        if not ranked:
            return f"{header}\nNo {target.strip()} found within {max_detour:.1f} m of the route."
        lines = [
            f"{format_record(r.candidate.record)} — {r.along:.1f} m along the route, "
            f"detour {r.detour:.1f} m"
            for r in ranked[:n_results]
        ]
        return f"{header}\n{numbered(lines)}"

    @tool_method
    def directional_query(
        self,
        target: str,
        anchor: str,
        direction: str,
        max_distance: float = 50.0,
        route_goal: str | None = None,
        n_results: int = 10,
    ) -> str:
        """Candidates of ``target`` in ``direction`` from ``anchor``, nearest first."""
        found = self.directional_candidates(target, anchor, direction, max_distance, route_goal)
        if isinstance(found, str):
            return found
        header, ranked = found
        if not ranked:
            return f"{header}\nNo {target.strip()} found {direction} within {max_distance:.1f} m."
        return f"{header}\n{numbered([line for _, line in ranked[:n_results]])}"

    @tool_method
    def navigate_to(self, concept: str) -> str:
        """Waypoints from the current position to where ``concept`` is."""
        position = self._host.current_position
        if position is None:
            return "No current position: the robot has not perceived anything yet."
        start = Point(float(position[0]), float(position[1]), float(position[2]), "here")
        goal = resolve_place(self._search, concept)
        if goal is None:
            return f"Could not locate: {concept.strip()}"
        leg = self._leg(start, goal)
        if isinstance(leg, str):
            return leg
        xs, ys = leg.polyline()
        points = geometry.waypoints(xs, ys, WAYPOINT_TOLERANCE)
        lines = [f"({x:.1f}, {y:.1f})" for x, y in points]
        return (
            f"Route to '{goal.label}' at ({goal.x:.1f}, {goal.y:.1f}): {leg.length:.1f} m, "
            f"{len(points)} waypoints from ({start.x:.1f}, {start.y:.1f}):\n{numbered(lines)}"
        )

    # --- typed results (the tools format these; evaluation reads them) -------------------------

    @while_open
    def candidates(self, target: str) -> list[Candidate]:
        """The distinct instances of ``target`` in memory, entities first (resolve.py)."""
        return find_candidates(
            self._search,
            target,
            self._config.entity_spatial_radius,
            lambda ids: reads.positions_of(self._store, ids),
        )

    @while_open
    def route_candidates(
        self, target: str, goal: str, start: str | None, max_detour: float
    ) -> tuple[_Leg, list[RoutedCandidate]] | str:
        """The route and the candidates within ``max_detour``, smallest detour first; or the
        line saying why there is none."""
        origin = self._start(start)
        if isinstance(origin, str):
            return origin
        end = resolve_place(self._search, goal)
        if end is None:
            return f"Could not locate the goal: {goal.strip()}"
        leg = self._leg(origin, end)
        if isinstance(leg, str):
            return leg
        candidates = self.candidates(target)
        snapped = [self.keeper.nearest(c.x, c.y) for c in candidates]
        ids = sorted({found[0].id for found in snapped if found is not None})
        graph = self._store.graph
        from_start = places.route_lengths(graph, leg.route.place_ids[0], ids)
        to_goal = places.route_lengths(graph, leg.route.place_ids[-1], ids)
        xs, ys = leg.polyline()
        ranked = []
        for candidate, found in zip(candidates, snapped, strict=True):
            if found is None:
                continue
            place, offset = found
            if place.id not in from_start or place.id not in to_goal:
                continue  # not reachable through the map
            via = from_start[place.id] + to_goal[place.id] + 2.0 * offset
            detour = max(0.0, via - leg.route.length)
            if detour <= max_detour:
                along = geometry.project(xs, ys, candidate.x, candidate.y).along
                ranked.append(RoutedCandidate(candidate, along, detour))
        ranked.sort(key=lambda r: (r.detour, r.along, -r.candidate.similarity))
        return leg, ranked

    @while_open
    def directional_candidates(
        self,
        target: str,
        anchor: str,
        direction: str,
        max_distance: float,
        route_goal: str | None,
    ) -> tuple[str, list[tuple[Candidate, str]]] | str:
        """The header and the (candidate, line) pairs in the direction, nearest first; or the
        line saying why there is none."""
        origin = resolve_place(self._search, anchor)
        if origin is None:
            return f"Could not locate the anchor: {anchor.strip()}"
        candidates = self.candidates(target)
        if direction in geometry.COMPASS:
            if route_goal is not None:
                raise InvalidInputError(
                    f"route_goal goes with direction 'left' or 'right', not {direction!r}"
                )
            header = f"{direction.capitalize()} of {_named(origin)}:"
            return header, _compass(candidates, origin, direction, max_distance)
        if route_goal is None:
            raise InvalidInputError(
                f"direction {direction!r} needs route_goal: the route from the anchor whose "
                f"{direction} side is meant"
            )
        end = resolve_place(self._search, route_goal)
        if end is None:
            return f"Could not locate the route goal: {route_goal.strip()}"
        leg = self._leg(origin, end)
        if isinstance(leg, str):
            return leg
        header = f"{_route_header(leg)}\nOn its {direction}:"
        return header, _sided(candidates, leg, direction, max_distance)

    # --- internals -----------------------------------------------------------------------------

    def _start(self, start: str | None) -> Point | str:
        if start is not None:
            origin = resolve_place(self._search, start)
            return origin if origin is not None else f"Could not locate the start: {start.strip()}"
        position = self._host.current_position
        if position is None:
            return "No current position: give start (the robot has not perceived anything yet)."
        return Point(float(position[0]), float(position[1]), float(position[2]), "here")

    def _leg(self, start: Point, goal: Point) -> _Leg | str:
        first = self.keeper.nearest(start.x, start.y)
        last = self.keeper.nearest(goal.x, goal.y)
        if first is None or last is None:
            return NO_MAP
        route = places.shortest_route(self._store.graph, first[0].id, last[0].id)
        if route is None:
            return (
                f"No known route from {_named(start)} to {_named(goal)}: the robot has not "
                "travelled between them (its map is not connected there)."
            )
        if not route.xs:  # the same place
            route = Route(0.0, route.place_ids, [first[0].x], [first[0].y])
        return _Leg(start, goal, route, first[1], last[1])


def _named(point: Point) -> str:
    where = f"({point.x:.1f}, {point.y:.1f})"
    if point.label in ("here", "the given point"):
        return where
    return f"'{point.label}' {where}"


def _route_header(leg: _Leg) -> str:
    return (
        f"Route from {_named(leg.start)} to {_named(leg.goal)}: {leg.length:.1f} m through "
        f"{len(leg.route.place_ids)} places."
    )


def _compass(
    candidates: list[Candidate], origin: Point, direction: str, max_distance: float
) -> list[tuple[Candidate, str]]:
    found = []
    for candidate in candidates:
        dx, dy = candidate.x - origin.x, candidate.y - origin.y
        distance = math.hypot(dx, dy)
        if MIN_DIRECTION_DISTANCE <= distance <= max_distance and geometry.in_sector(
            dx, dy, direction
        ):
            found.append((distance, candidate))
    found.sort(key=lambda item: (item[0], item[1].record.id))
    return [
        (candidate, f"{format_record(candidate.record)} — {distance:.1f} m {direction}")
        for distance, candidate in found
    ]


def _sided(
    candidates: list[Candidate], leg: _Leg, side: str, max_distance: float
) -> list[tuple[Candidate, str]]:
    xs, ys = leg.polyline()
    found = []
    for candidate in candidates:
        projection = geometry.project(xs, ys, candidate.x, candidate.y)
        if abs(projection.lateral) < MIN_SIDE_OFFSET:
            continue  # on the path (a caption is where the robot stood): no side
        on_left = projection.lateral > 0
        if (side == "left") == on_left and abs(projection.lateral) <= max_distance:
            found.append((projection, candidate))
    found.sort(key=lambda item: (item[0].along, item[1].record.id))
    return [
        (
            candidate,
            f"{format_record(candidate.record)} — {p.along:.1f} m along the route, "
            f"{abs(p.lateral):.1f} m to the {side}",
        )
        for p, candidate in found
    ]
