"""PlaceMap: the topological map of the places a robot occupied, kept in memory and grown
incrementally from its trajectory (no I/O here; places.py writes it to the graph).

A trajectory position closer than ``spacing`` to an existing place belongs to that place;
otherwise it founds a new place there. Places never move, so an edge's distance stays true.
Two places are CONNECTed when the robot went from one to the other in consecutive positions
(a "walk" edge, only when they are at most ``max_step`` apart: a larger jump is a gap in the
trajectory, not a walk), and a new place is also connected to every place within
``link_radius`` (a "closure" edge: places that close are mutually reachable). Every edge's
distance is the straight-line distance between its places, so no path through the map is
shorter than the straight line between its ends.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

WALK = "walk"
CLOSURE = "closure"


@dataclass(frozen=True)
class TrajectoryPoint:
    """One position of the robot's trajectory (a perception observation's position)."""

    observation_id: str
    x: float
    y: float
    z: float
    timestamp: float


@dataclass(frozen=True)
class Place:
    """A place of the map."""

    id: str
    x: float
    y: float
    z: float
    visits: int
    first_seen: float
    last_seen: float


@dataclass(frozen=True)
class Connection:
    """A CONNECTS edge (one per unordered pair)."""

    a: str
    b: str
    distance: float
    kind: str


@dataclass
class MapUpdate:
    """What one batch of trajectory points changed: new places, places visited again (their
    new visit count and last time), new connections, and each point's place."""

    new_places: list[Place] = field(default_factory=list)
    visited: dict[str, Place] = field(default_factory=dict)
    connections: list[Connection] = field(default_factory=list)
    links: list[tuple[str, str, float]] = field(default_factory=list)
    """(observation id, place id, distance from the place in metres)."""

    @property
    def empty(self) -> bool:
        return not (self.new_places or self.visited or self.connections or self.links)

    def merge(self, later: MapUpdate) -> None:
        """Fold a later batch's update into this one, so that both are written as one: a place
        founded here and visited later is written once, with its later counts."""
        founded = {place.id: i for i, place in enumerate(self.new_places)}
        self.new_places.extend(later.new_places)
        for place_id, place in later.visited.items():
            if place_id in founded:
                self.new_places[founded[place_id]] = place
            else:
                self.visited[place_id] = place
        self.connections.extend(later.connections)
        self.links.extend(later.links)


class PlaceMap:
    """Places and connections, with a grid for the neighbour searches of the incremental build.

    Args:
        spacing: metres; a position closer than this to a place belongs to it.
        link_radius: metres; a new place connects to every place this close.
        max_step: metres; consecutive places farther apart are not connected.
    """

    def __init__(self, spacing: float, link_radius: float, max_step: float) -> None:
        self.spacing = float(spacing)
        self.link_radius = float(link_radius)
        self.max_step = float(max_step)
        self._cell = max(self.spacing, self.link_radius)
        self._places: list[Place] = []
        self._index: dict[str, int] = {}
        self._xy_store = np.zeros((64, 2), dtype=np.float64)
        self._xy = self._xy_store[:0]
        self._grid: dict[tuple[int, int], list[int]] = {}
        self._edges: dict[tuple[int, int], Connection] = {}
        self._neighbours: dict[int, set[int]] = {}
        self._last: int | None = None
        self._last_time = -math.inf

    # --- loading -------------------------------------------------------------------------------

    def load(
        self, places: Iterable[Place], connections: Iterable[Connection], last_place: str | None
    ) -> None:
        """Fill an empty map with stored places and connections; ``last_place`` is where the
        trajectory stopped (the next position walks on from there)."""
        for place in places:
            self._add_place(place)
        for connection in connections:
            if connection.a in self._index and connection.b in self._index:
                self._add_edge(self._index[connection.a], self._index[connection.b], connection)
        if last_place is not None and last_place in self._index:
            self._last = self._index[last_place]
            self._last_time = self._places[self._last].last_seen

    # --- the incremental build -----------------------------------------------------------------

    def extend(self, points: Iterable[TrajectoryPoint]) -> MapUpdate:
        """Add trajectory points (in time order) to the map; returns what changed."""
        update = MapUpdate()
        for point in points:
            index, distance = self._nearest_within(point.x, point.y, self.spacing)
            previous = self._last
            if index is None:
                index = self._found(point, update, previous)
                distance = 0.0
            else:
                self._visit(index, point.timestamp, update)
            if previous is not None and previous != index:
                gap = self._distance(previous, index)
                if gap <= self.max_step:
                    self._connect(previous, index, gap, WALK, update)
            update.links.append((point.observation_id, self._places[index].id, distance))
            if point.timestamp >= self._last_time:
                self._last, self._last_time = index, point.timestamp
        # A place founded in this batch and visited again is written once, with its counts.
        update.new_places = [self.place(p.id) for p in update.new_places]
        founded = {p.id for p in update.new_places}
        update.visited = {i: p for i, p in update.visited.items() if i not in founded}
        return update

    # --- reads ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._places)

    @property
    def places(self) -> list[Place]:
        """Every place, in the order founded."""
        return list(self._places)

    @property
    def connections(self) -> list[Connection]:
        """Every connection."""
        return list(self._edges.values())

    @property
    def last_place(self) -> Place | None:
        """The place of the latest trajectory point."""
        return None if self._last is None else self._places[self._last]

    def place(self, place_id: str) -> Place:
        """The place of that id (KeyError when unknown)."""
        return self._places[self._index[place_id]]

    def nearest(self, x: float, y: float) -> tuple[Place, float] | None:
        """The place nearest (x, y) and its distance, or None on an empty map."""
        if not self._places:
            return None
        index, distance = self._nearest_within(x, y, self._cell)
        if index is None:
            d2 = ((self._xy - (x, y)) ** 2).sum(axis=1)
            index = int(np.argmin(d2))
            distance = math.sqrt(float(d2[index]))
        return self._places[index], distance

    def positions(self) -> np.ndarray:
        """(n, 2) array of the places' x, y in founding order (a copy)."""
        return self._xy.copy()

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The connections as index arrays (a, b) into positions() and their distances."""
        pairs = list(self._edges)
        a = np.array([p[0] for p in pairs], dtype=np.int64)
        b = np.array([p[1] for p in pairs], dtype=np.int64)
        d = np.array([self._edges[p].distance for p in pairs], dtype=np.float64)
        return a, b, d

    def index_of(self, place_id: str) -> int:
        """Position of a place in positions() (KeyError when unknown)."""
        return self._index[place_id]

    # --- internals -----------------------------------------------------------------------------

    def _found(self, point: TrajectoryPoint, update: MapUpdate, previous: int | None) -> int:
        place = Place(
            id=uuid.uuid4().hex,
            x=point.x,
            y=point.y,
            z=point.z,
            visits=1,
            first_seen=point.timestamp,
            last_seen=point.timestamp,
        )
        index = self._add_place(place)
        update.new_places.append(place)
        for other in self._within(point.x, point.y, self.link_radius):
            # The place just left gets its walk edge (extend), not a closure.
            if other not in (index, previous):
                self._connect(other, index, self._distance(other, index), CLOSURE, update)
        return index

    def _visit(self, index: int, timestamp: float, update: MapUpdate) -> None:
        old = self._places[index]
        place = Place(
            id=old.id,
            x=old.x,
            y=old.y,
            z=old.z,
            visits=old.visits + 1,
            first_seen=min(old.first_seen, timestamp),
            last_seen=max(old.last_seen, timestamp),
        )
        self._places[index] = place
        update.visited[place.id] = place

    def _connect(self, i: int, j: int, distance: float, kind: str, update: MapUpdate) -> None:
        key = (min(i, j), max(i, j))
        if key in self._edges:
            return
        # Stored from the older place to the newer one; paths read CONNECTS undirected.
        connection = Connection(self._places[key[0]].id, self._places[key[1]].id, distance, kind)
        self._add_edge(key[0], key[1], connection)
        update.connections.append(connection)

    def _add_place(self, place: Place) -> int:
        index = len(self._places)
        self._places.append(place)
        self._index[place.id] = index
        if index >= len(self._xy_store):
            grown = np.zeros((2 * len(self._xy_store), 2), dtype=np.float64)
            grown[:index] = self._xy_store[:index]
            self._xy_store = grown
        self._xy_store[index] = (place.x, place.y)
        self._xy = self._xy_store[: index + 1]
        self._grid.setdefault(self._cell_of(place.x, place.y), []).append(index)
        return index

    def _add_edge(self, i: int, j: int, connection: Connection) -> None:
        key = (min(i, j), max(i, j))
        self._edges[key] = connection
        self._neighbours.setdefault(i, set()).add(j)
        self._neighbours.setdefault(j, set()).add(i)

    def _cell_of(self, x: float, y: float) -> tuple[int, int]:
        return (math.floor(x / self._cell), math.floor(y / self._cell))

    def _within(self, x: float, y: float, radius: float) -> list[int]:
        cx, cy = self._cell_of(x, y)
        reach = max(1, math.ceil(radius / self._cell))
        found = []
        for gx in range(cx - reach, cx + reach + 1):
            for gy in range(cy - reach, cy + reach + 1):
                for index in self._grid.get((gx, gy), ()):
                    px, py = self._xy[index]
                    if (px - x) ** 2 + (py - y) ** 2 <= radius * radius:
                        found.append(index)
        return found

    def _nearest_within(self, x: float, y: float, radius: float) -> tuple[int | None, float]:
        best: int | None = None
        best_d2 = radius * radius
        for index in self._within(x, y, radius):
            px, py = self._xy[index]
            d2 = (px - x) ** 2 + (py - y) ** 2
            if d2 < best_d2:  # strictly closer: a place exactly `spacing` away is not it
                best, best_d2 = index, d2
        if best is None:
            return None, math.inf
        return best, math.sqrt(best_d2)

    def _distance(self, i: int, j: int) -> float:
        a, b = self._places[i], self._places[j]
        # math.dist: inf for positions beyond float range apart, never an OverflowError.
        return math.dist((a.x, a.y, a.z), (b.x, b.y, b.z))
