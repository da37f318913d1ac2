"""A generated campus with ground truth, for testing and evaluating the spatial tools.

Buildings on a grid, each with a corridor along it and a hallway to its door; streets south of
every row of buildings and between the columns. Named landmarks (one per building inside, one
per street block outside) and several instances of a few object kinds stand beside the
corridors and streets. The robot walks every corridor and street (an Euler tour of the doubled
walkable graph, so each is walked both ways), and reports what it sees within CAPTION_RANGE.

The ground truth is the walkable graph itself, densified to one node per metre: route lengths
between items are shortest paths there (SciPy Dijkstra), independent of the memory's map.
Questions are generated only where the answer is clear (a margin to the second-best instance),
so that a failure is the memory's, not an ambiguity of the question.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from emem_graph.spatial.geometry import COMPASS, angle_between, bearing, project, waypoints

CAPTION_RANGE = 2.5
"""Metres: the robot describes an item when it passes this close."""
INDOOR_RADIUS = 3.0
OUTDOOR_RADIUS = 15.0
"""Success radii: a returned position this close to the true one is right."""

KINDS = ("vending machine", "water cooler", "fire extinguisher", "printer", "bench")
"""Object kinds; benches stand outside, the rest inside."""
ENTITY_KINDS = frozenset({"vending machine", "fire extinguisher", "bench"})
"""Kinds a detector reports as entities (add_entity); the others are only in captions.
Outdoor landmarks are entities too; indoor ones are only in captions (found by locate)."""
INDOOR_LANDMARKS = (
    "chemistry lab",
    "library reading room",
    "cafeteria",
    "lecture hall",
    "server room",
    "robotics workshop",
    "music room",
    "gym locker room",
    "art studio",
    "mail room",
    "computer lab",
    "seminar room",
    "nurse office",
    "copy room",
    "staff kitchen",
)
OUTDOOR_LANDMARKS = (
    "basketball court",
    "football field",
    "main gate",
    "fountain",
    "parking lot",
    "bus stop",
    "flag pole",
    "greenhouse",
)
_SEEN = (
    "a {name} beside the corridor",
    "there is a {name} here",
    "I can see a {name} next to the wall",
    "a {name} on my side of the hallway",
)
_SEEN_OUTSIDE = ("a {name} beside the path", "there is a {name} here", "I pass a {name}")
_LANDMARK = ("the entrance of the {name}", "a sign that reads {name}", "I am at the {name}")
_LANDMARK_OUTSIDE = ("the {name}", "I am next to the {name}", "a view of the {name}")
_EMPTY_INSIDE = (
    "an empty corridor with closed doors",
    "a long hallway with white walls",
    "ceiling lights over a tiled floor",
    "a quiet corridor",
)
_EMPTY_OUTSIDE = (
    "a paved path between buildings",
    "grass and trees along the path",
    "an open square with lamp posts",
    "a road with parked bicycles",
)


@dataclass(frozen=True)
class Building:
    """A building: its box and the y of its corridor."""

    name: str
    xmin: float
    ymin: float
    xmax: float
    ymax: float

    @property
    def corridor_y(self) -> float:
        return (self.ymin + self.ymax) / 2.0

    @property
    def door(self) -> tuple[float, float]:
        return ((self.xmin + self.xmax) / 2.0, self.ymin)


@dataclass(frozen=True)
class Item:
    """A landmark (unique name) or an instance of an object kind, with its true position."""

    name: str
    kind: str | None
    """The object kind, None for a landmark."""
    x: float
    y: float
    indoor: bool
    anchor: int
    """Ground-truth node (densified walkable graph) the item is reached from."""
    offset: float
    """Metres from that node to the item."""

    @property
    def radius(self) -> float:
        """The success radius around this item."""
        return INDOOR_RADIUS if self.indoor else OUTDOOR_RADIUS


@dataclass(frozen=True)
class Sample:
    """One trajectory position with what the robot says about it (and the item it sees)."""

    x: float
    y: float
    timestamp: float
    text: str
    item: Item | None


@dataclass(frozen=True)
class Question:
    """A route or directional question with its ground-truth answer."""

    kind: str
    """'route', 'compass' or 'side'."""
    target: str
    anchor: str
    """The route's start (route) or the anchor (compass, side)."""
    goal: str | None
    """The route's goal (route) or the route_goal (side)."""
    direction: str | None
    answer: Item

    def describe(self) -> str:
        """The question in words."""
        if self.kind == "route":
            return f"the {self.target} on the way from the {self.anchor} to the {self.goal}"
        if self.kind == "compass":
            return f"the closest {self.target} {self.direction} of the {self.anchor}"
        return (
            f"the first {self.target} on the {self.direction} from the {self.anchor} to the "
            f"{self.goal}"
        )


@dataclass
class Campus:
    """The generated campus: buildings, items, trajectory and the ground-truth graph."""

    buildings: list[Building]
    items: list[Item]
    samples: list[Sample]
    nodes: np.ndarray
    """(n, 2) positions of the densified walkable graph."""
    edges: tuple[np.ndarray, np.ndarray, np.ndarray]
    _distances: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def landmarks(self) -> list[Item]:
        return [i for i in self.items if i.kind is None]

    def instances(self, kind: str) -> list[Item]:
        """The instances of one object kind."""
        return [i for i in self.items if i.kind == kind]

    def item(self, name: str) -> Item:
        """The landmark of that name."""
        return next(i for i in self.items if i.kind is None and i.name == name)

    def walk_distance(self, a: Item, b: Item) -> float:
        """Ground-truth route length between two items along the walkable graph."""
        if a is b:
            return 0.0
        return float(self._from(a.anchor)[b.anchor]) + a.offset + b.offset

    def route_path(self, a: Item, b: Item) -> tuple[list[float], list[float]]:
        """Ground-truth route polyline from item a to item b."""
        n = len(self.nodes)
        graph = coo_matrix((self.edges[2], (self.edges[0], self.edges[1])), shape=(n, n)).tocsr()
        _, predecessors = dijkstra(
            graph, directed=False, indices=a.anchor, return_predecessors=True
        )
        chain = [b.anchor]
        while chain[-1] != a.anchor and predecessors[chain[-1]] >= 0:
            chain.append(int(predecessors[chain[-1]]))
        chain.reverse()
        xs = [a.x, *self.nodes[chain, 0].tolist(), b.x]
        ys = [a.y, *self.nodes[chain, 1].tolist(), b.y]
        return xs, ys

    def unique_route(self, a: Item, b: Item, slack: float = 5.0) -> bool:
        """Whether the shortest route from a to b is the only one within ``slack`` metres:
        every node on a route at most that much longer lies within 3 m of the shortest."""
        base = float(self._from(a.anchor)[b.anchor])
        near = self._from(a.anchor) + self._from(b.anchor) <= base + slack
        xs, ys = self.route_path(a, b)
        path = np.column_stack([xs, ys])
        for x, y in self.nodes[near]:
            if np.hypot(path[:, 0] - x, path[:, 1] - y).min() > 3.0:
                return False
        return True

    def _from(self, node: int) -> np.ndarray:
        if node not in self._distances:
            n = len(self.nodes)
            graph = coo_matrix(
                (self.edges[2], (self.edges[0], self.edges[1])), shape=(n, n)
            ).tocsr()
            self._distances[node] = dijkstra(graph, directed=False, indices=node)
        return self._distances[node]


def build_campus(
    columns: int = 3,
    rows: int = 2,
    instances_per_kind: int = 4,
    seed: int = 0,
    step: float = 1.0,
    building_size: tuple[float, float] = (50.0, 24.0),
) -> Campus:
    """Generate a campus of ``columns x rows`` buildings (at least 5 for the acceptance test).

    Args:
        columns, rows: the grid of buildings.
        instances_per_kind: instances of every object kind (>= 3).
        seed: random seed (layout of items, captions, trajectory noise).
        step: metres between trajectory samples.
        building_size: width and depth of a building in metres.
    """
    rng = random.Random(seed)
    width, depth = building_size
    gap_x, gap_y = 30.0, 30.0
    buildings = [
        Building(
            f"building {chr(65 + r * columns + c)}",
            c * (width + gap_x),
            r * (depth + gap_y),
            c * (width + gap_x) + width,
            r * (depth + gap_y) + depth,
        )
        for r in range(rows)
        for c in range(columns)
    ]
    walk = nx.Graph()

    def segment(a: tuple[float, float], b: tuple[float, float], indoor: bool) -> None:
        walk.add_edge(a, b, indoor=indoor, weight=math.dist(a, b))

    street_x = [c * (width + gap_x) - gap_x / 2 for c in range(columns + 1)]
    for r in range(rows):
        y = r * (depth + gap_y) - gap_y / 2
        for c in range(columns):  # street south of the row, split at every door and crossing
            stops = sorted({street_x[c], street_x[c + 1], buildings[r * columns + c].door[0]})
            for a, b in itertools.pairwise(stops):
                segment((a, y), (b, y), False)
    for c in range(columns + 1):  # streets between the columns, joining the rows
        for r in range(rows - 1):
            y0 = r * (depth + gap_y) - gap_y / 2
            segment((street_x[c], y0), (street_x[c], y0 + depth + gap_y), False)
    for building in buildings:
        door_x, door_y = building.door
        street_y = door_y - gap_y / 2
        corridor = building.corridor_y
        segment((door_x, street_y), (door_x, door_y), False)
        segment((door_x, door_y), (door_x, corridor), True)
        segment((building.xmin + 3.0, corridor), (door_x, corridor), True)
        segment((door_x, corridor), (building.xmax - 3.0, corridor), True)

    nodes, edges, edge_of = _densify(walk, step)
    items = _place_items(rng, walk, buildings, nodes, edge_of, instances_per_kind)
    samples = _trajectory(rng, walk, nodes, items, step)
    return Campus(buildings, items, samples, nodes, edges)


def _densify(
    walk: nx.Graph, step: float
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], list[tuple[int, bool]]]:
    """Nodes every ``step`` metres along every walkable segment, consecutive ones joined."""
    index: dict[tuple[float, float], int] = {}
    points: list[tuple[float, float]] = []
    edge_of: list[tuple[int, bool]] = []  # for each node: (segment number, indoor)

    def node(p: tuple[float, float], segment_number: int, indoor: bool) -> int:
        key = (round(p[0], 6), round(p[1], 6))
        if key not in index:
            index[key] = len(points)
            points.append(key)
            edge_of.append((segment_number, indoor))
        return index[key]

    a_list, b_list, d_list = [], [], []
    for number, (a, b, data) in enumerate(sorted(walk.edges(data=True))):
        pieces = max(1, math.ceil(math.dist(a, b) / step))
        chain = [
            node(
                (a[0] + (b[0] - a[0]) * k / pieces, a[1] + (b[1] - a[1]) * k / pieces),
                number,
                data["indoor"],
            )
            for k in range(pieces + 1)
        ]
        for i, j in itertools.pairwise(chain):
            a_list.append(i)
            b_list.append(j)
            d_list.append(math.dist(points[i], points[j]))
    arrays = (np.array(a_list), np.array(b_list), np.array(d_list, dtype=np.float64))
    return np.array(points, dtype=np.float64), arrays, edge_of


def _place_items(
    rng: random.Random,
    walk: nx.Graph,
    buildings: list[Building],
    nodes: np.ndarray,
    edge_of: list[tuple[int, bool]],
    per_kind: int,
) -> list[Item]:
    """Landmarks and instances beside the corridors (inside) and streets (outside), at least
    12 m from any other item and 20 m from another instance of their kind."""
    indoor_nodes = [i for i, (_, indoor) in enumerate(edge_of) if indoor]
    outdoor_nodes = [i for i, (_, indoor) in enumerate(edge_of) if not indoor]
    items: list[Item] = []

    def put(name: str, kind: str | None, indoor: bool, pool: list[int]) -> None:
        for _ in range(5000):
            anchor = rng.choice(pool)
            x0, y0 = nodes[anchor]
            side = rng.choice((-1.0, 1.0))
            offset = 1.5 if indoor else 2.0
            # Beside the segment: perpendicular to the corridor (corridors run along x inside,
            # streets along x or y outside).
            horizontal = _runs_along_x(nodes, anchor)
            x, y = (x0, y0 + side * offset) if horizontal else (x0 + side * offset, y0)
            if any(math.dist((x, y), (o.x, o.y)) < 12.0 for o in items):
                continue
            if kind is not None and any(
                o.kind == kind and math.dist((x, y), (o.x, o.y)) < 20.0 for o in items
            ):
                continue
            if not indoor and any(_inside(b, x, y, 1.0) for b in buildings):
                continue
            items.append(Item(name, kind, x, y, indoor, anchor, offset))
            return
        raise ValueError(f"no room on the campus for {name}; make it larger")

    if len(buildings) > len(INDOOR_LANDMARKS):
        raise ValueError(f"at most {len(INDOOR_LANDMARKS)} buildings (one landmark name each)")
    for number in range(len(buildings)):
        put(INDOOR_LANDMARKS[number], None, True, indoor_nodes)
    for number in range(min(len(OUTDOOR_LANDMARKS), max(3, len(buildings)))):
        put(OUTDOOR_LANDMARKS[number], None, False, outdoor_nodes)
    for kind in KINDS:
        indoor = kind != "bench"
        for _ in range(per_kind):
            put(kind, kind, indoor, indoor_nodes if indoor else outdoor_nodes)
    return items


def _runs_along_x(nodes: np.ndarray, anchor: int) -> bool:
    near = np.linalg.norm(nodes - nodes[anchor], axis=1)
    close = nodes[(near > 0) & (near < 1.5)]
    if not len(close):
        return True
    return bool(np.abs(close[:, 1] - nodes[anchor][1]).max() < 1e-6)


def _inside(building: Building, x: float, y: float, margin: float) -> bool:
    return (
        building.xmin - margin <= x <= building.xmax + margin
        and building.ymin - margin <= y <= building.ymax + margin
    )


def _trajectory(
    rng: random.Random, walk: nx.Graph, nodes: np.ndarray, items: list[Item], step: float
) -> list[Sample]:
    """Walk every segment twice (Euler circuit of the doubled graph), a sample every ``step``
    metres with 0.1 m of position noise, one caption per sample."""
    doubled = nx.MultiGraph()
    for a, b, data in walk.edges(data=True):
        doubled.add_edge(a, b, **data)
        doubled.add_edge(a, b, **data)
    start = min(walk.nodes)
    samples: list[Sample] = []
    t = 0.0
    positions = np.array([[i.x, i.y] for i in items])
    for a, b in nx.eulerian_circuit(doubled, source=start):
        indoor = walk.edges[a, b]["indoor"]
        pieces = max(1, math.ceil(math.dist(a, b) / step))
        for k in range(pieces):
            x = a[0] + (b[0] - a[0]) * k / pieces + rng.gauss(0.0, 0.1)
            y = a[1] + (b[1] - a[1]) * k / pieces + rng.gauss(0.0, 0.1)
            distances = np.hypot(positions[:, 0] - x, positions[:, 1] - y)
            nearest = int(np.argmin(distances))
            seen = items[nearest] if distances[nearest] <= CAPTION_RANGE else None
            samples.append(Sample(x, y, t, _caption(rng, seen, indoor), seen))
            t += step
    return samples


def _caption(rng: random.Random, item: Item | None, indoor: bool) -> str:
    if item is None:
        return rng.choice(_EMPTY_INSIDE if indoor else _EMPTY_OUTSIDE)
    if item.kind is None:
        return rng.choice(_LANDMARK if item.indoor else _LANDMARK_OUTSIDE).format(name=item.name)
    return rng.choice(_SEEN if item.indoor else _SEEN_OUTSIDE).format(name=item.name)


# --- questions ---------------------------------------------------------------------------------

ROUTE_MARGIN = 10.0
"""Metres: a route question is asked only when the best instance's detour beats the second's
by this much."""
DIRECTION_MARGIN = 5.0
"""Metres: a compass or side question only when the nearest instance leads by this much..."""
EDGE_MARGIN = 10.0
"""...and no instance lies within this many degrees of the sector's edges."""


def questions(campus: Campus, count: int = 40, seed: int = 0) -> list[Question]:
    """Route, compass and side questions with clear ground-truth answers: about half route
    questions, a third compass, the rest left/right of a route."""
    rng = random.Random(seed)
    landmarks = campus.landmarks
    found: list[Question] = []
    wanted = {"route": count // 2, "compass": count // 3}
    wanted["side"] = count - wanted["route"] - wanted["compass"]
    seen: set[tuple[str, ...]] = set()
    for _ in range(20_000):
        if all(sum(q.kind == k for q in found) >= n for k, n in wanted.items()):
            break
        kind = rng.choice([k for k, n in wanted.items() if sum(q.kind == k for q in found) < n])
        target = rng.choice(KINDS)
        a, b = rng.sample(landmarks, 2)
        direction = (
            rng.choice(list(COMPASS)) if kind == "compass" else rng.choice(["left", "right"])
        )
        key = (kind, target, a.name, b.name if kind != "compass" else direction)
        if key in seen:
            continue
        seen.add(key)
        answer = {
            "route": _route_answer,
            "compass": _compass_answer,
            "side": _side_answer,
        }[kind](campus, target, a, b, direction)
        if answer is not None:
            found.append(
                Question(
                    kind,
                    target,
                    a.name,
                    None if kind == "compass" else b.name,
                    None if kind == "route" else direction,
                    answer,
                )
            )
    return found


def _route_answer(campus: Campus, target: str, a: Item, b: Item, _: str) -> Item | None:
    base = campus.walk_distance(a, b)
    detours = sorted(
        (campus.walk_distance(a, i) + campus.walk_distance(i, b) - base, n)
        for n, i in enumerate(campus.instances(target))
    )
    best, second = detours[0], detours[1]
    if second[0] - best[0] < ROUTE_MARGIN or best[0] > 60.0:
        return None
    return campus.instances(target)[best[1]]


def _compass_answer(campus: Campus, target: str, a: Item, _: Item, direction: str) -> Item | None:
    inside = []
    for instance in campus.instances(target):
        dx, dy = instance.x - a.x, instance.y - a.y
        off = angle_between(bearing(dx, dy), COMPASS[direction])
        if abs(off - 45.0) < EDGE_MARGIN:
            return None  # too close to the sector's edge to be clear
        if off < 45.0:
            inside.append((math.hypot(dx, dy), instance))
    inside.sort(key=lambda pair: pair[0])
    if not inside or inside[0][0] > 150.0:
        return None
    if len(inside) > 1 and inside[1][0] - inside[0][0] < DIRECTION_MARGIN:
        return None
    return inside[0][1]


def _side_answer(campus: Campus, target: str, a: Item, b: Item, side: str) -> Item | None:
    if target not in ENTITY_KINDS:
        return None  # a caption is at the robot's position, on the path: its side is unknown
    if not campus.unique_route(a, b):
        return None  # two ways of about the same length: which side is meant is ambiguous
    xs, ys = campus.route_path(a, b)
    corners = waypoints(xs, ys, 0.5)
    cx, cy = [p[0] for p in corners], [p[1] for p in corners]
    on_side = []
    for instance in campus.instances(target):
        p = project(cx, cy, instance.x, instance.y)
        if abs(p.lateral) > SIDE_DISTANCE:
            continue
        if abs(p.lateral) < 0.75 or not _beside_a_leg(cx, cy, p.along):
            return None  # on the line, at its ends or at a corner: no clear side
        if (p.lateral > 0) == (side == "left"):
            on_side.append((p.along, instance))
    on_side.sort(key=lambda pair: pair[0])
    if not on_side:
        return None
    if len(on_side) > 1 and on_side[1][0] - on_side[0][0] < DIRECTION_MARGIN:
        return None
    return on_side[0][1]


SIDE_DISTANCE = 6.0
"""Metres from the route within which side questions look (their max_distance)."""


def _beside_a_leg(xs: list[float], ys: list[float], along: float) -> bool:
    """Whether the point ``along`` the polyline is at least CORNER_CLEARANCE from its corners
    and ends (beside a straight leg, where left and right are clear)."""
    walked = 0.0
    for i in range(len(xs) - 1):
        length = math.hypot(xs[i + 1] - xs[i], ys[i + 1] - ys[i])
        if walked - 1e-9 <= along <= walked + length + 1e-9:
            return CORNER_CLEARANCE <= along - walked <= length - CORNER_CLEARANCE
        walked += length
    return False


CORNER_CLEARANCE = 3.0
"""Metres: side questions are asked about items beside a straight leg of the route only."""
