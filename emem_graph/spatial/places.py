"""The topological map in the graph: Place nodes, CONNECTS and AT_PLACE edges (named queries
spatial_*.cypher), loaded into a PlaceMap, grown batch by batch, rebuilt, and routed over with
Kuzu's weighted shortest paths.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from emem_graph import validation
from emem_graph.spatial.topology import (
    Connection,
    MapUpdate,
    Place,
    PlaceMap,
    TrajectoryPoint,
)
from emem_graph.storage.changes import GraphChange

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

LINK_EACH_MAX = 64
"""Up to this many observation links are written one primary-key lookup each (~1 ms a row at
any table size); more go through one UNWIND statement, which Kuzu plans as a scan of the
Observation table plus a join (38-64 ms at 100k observations whatever the batch size:
STORAGE-FACTS.md). The flush batches of a running robot are small; a rebuild's are large."""
REBUILD_BATCH = 20_000
"""Trajectory points per transaction when the map is rebuilt."""
MAX_ROUTE_HOPS = 100_000
"""The hop limit written in spatial_route*.cypher (and raised on the connection)."""

log = logging.getLogger(__name__)


class _Reader(Protocol):
    """What the route reads need: named queries (a GraphDB, read-write or read-only)."""

    def query(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Route:
    """A route between two places: its length over CONNECTS and its places in order."""

    length: float
    place_ids: list[str]
    xs: list[float]
    ys: list[float]


@dataclass(frozen=True)
class MapCounts:
    """Sizes of the map in the graph."""

    places: int
    connections: int
    linked_observations: int
    trajectory_observations: int


def new_map(config: MemoryConfig) -> PlaceMap:
    """An empty PlaceMap with the config's spacing, link radius and step limit."""
    return PlaceMap(config.place_spacing, config.place_link_radius, config.place_max_step)


def load_map(store: MemoryStore, config: MemoryConfig) -> PlaceMap:
    """The map stored in the graph (empty when none was built)."""
    place_map = new_map(config)
    places = [_place(row) for row in store.graph.query("spatial_places")]
    connections = [
        Connection(row["a"], row["b"], float(row["distance"]), row["kind"])
        for row in store.graph.query("spatial_connections")
    ]
    # Places are kept in founding order, so the map grows the same way after a reopen.
    places.sort(key=lambda p: (p.first_seen, p.id))
    last = max(places, key=lambda p: (p.last_seen, p.id)).id if places else None
    place_map.load(places, connections, last)
    return place_map


def trajectory_points(rows: Iterable[dict[str, Any]]) -> list[TrajectoryPoint]:
    """Rows of spatial_trajectory / spatial_unplaced_trajectory as trajectory points.

    A position an older version stored beyond validation.MAX_COORDINATE is clamped to it (with
    a warning): the point is still placed, so the map's counts stay whole, and no distance
    overflows (a memory holding one failed to open)."""
    points = [
        TrajectoryPoint(
            observation_id=row["id"],
            x=float(row["x"]),
            y=float(row["y"]),
            z=float(row["z"] or 0.0),
            timestamp=float(row["timestamp"]),
        )
        for row in rows
    ]
    outside = sum(not validation.in_bounds(p.x, p.y, p.z) for p in points)
    if not outside:
        return points
    log.warning(
        "%d trajectory positions lie beyond +-%g m (stored by an older version); the place map "
        "puts them at the bound",
        outside,
        validation.MAX_COORDINATE,
    )
    clamp = validation.clamp_coordinate
    return [
        TrajectoryPoint(p.observation_id, clamp(p.x), clamp(p.y), clamp(p.z), p.timestamp)
        for p in points
    ]


def write_update(store: MemoryStore, update: MapUpdate) -> None:
    """Write one MapUpdate to the graph in one transaction (places, edges, links)."""
    if update.empty:
        return
    change = GraphChange()
    if update.new_places:
        change.run("spatial_create_places", {"rows": [_place_row(p) for p in update.new_places]})
    if update.visited:
        rows = [
            {"id": p.id, "visits": p.visits, "first_seen": p.first_seen, "last_seen": p.last_seen}
            for p in update.visited.values()
        ]
        change.run("spatial_update_places", {"rows": rows})
    if update.connections:
        rows = [
            {"a": c.a, "b": c.b, "distance": c.distance, "kind": c.kind} for c in update.connections
        ]
        change.run("spatial_connect_places", {"rows": rows})
    links = [{"observation_id": o, "place_id": p, "distance": float(d)} for o, p, d in update.links]
    if len(links) <= LINK_EACH_MAX:
        change.run_each("spatial_link_observation", links)
    else:
        # A COPY, last in the transaction: UNWIND ... MATCH scans the Observation table per
        # batch (ingest slowed to ~300 obs/s at 100k observations).
        edges = pa.table(
            {
                "from": [r["observation_id"] for r in links],
                "to": [r["place_id"] for r in links],
                "distance": pa.array([r["distance"] for r in links], type=pa.float64()),
            }
        )
        change.copy_edges_last("AT_PLACE", edges, from_table="Observation", to_table="Place")
    store.apply(change)


def link_entities(store: MemoryStore, place_map: PlaceMap) -> int:
    """Link every entity whose nearest place changed (new or moved entities, new places) to
    its nearest place; returns how many links were rewritten."""
    if not len(place_map):
        return 0
    rows: list[dict[str, Any]] = []
    for row in store.graph.query("spatial_entity_positions"):
        found = place_map.nearest(
            validation.clamp_coordinate(float(row["x"])),
            validation.clamp_coordinate(float(row["y"])),
        )
        if found is None:
            continue
        place, distance = found
        if row["place_id"] != place.id:
            rows.append({"entity_id": row["id"], "place_id": place.id, "distance": distance})
    if rows:
        change = GraphChange()
        change.run("spatial_unlink_entities", {"ids": [r["entity_id"] for r in rows]})
        change.run("spatial_link_entities", {"rows": rows})
        store.apply(change)
    return len(rows)


def entity_signature(store: MemoryStore) -> tuple[Any, ...]:
    """A fingerprint of the entities' positions (changes when one is added or moves)."""
    rows = store.graph.query("spatial_entity_signature")
    row = rows[0] if rows else {}
    return (row.get("n"), row.get("sx"), row.get("sy"), row.get("last"))


def rebuild(
    store: MemoryStore,
    config: MemoryConfig,
    progress: Callable[[int], None] | None = None,
) -> PlaceMap:
    """Delete the stored map and build it again from every perception observation, oldest
    first, in transactions of REBUILD_BATCH points; then link the entities.

    Args:
        store: the memory's store (its single writer).
        config: spacing, link radius and step limit.
        progress: called with the number of points done after each transaction.
    """
    store.apply(GraphChange().run("spatial_clear"))
    place_map = new_map(config)
    points = trajectory_points(store.graph.query("spatial_trajectory"))
    for start in range(0, len(points), REBUILD_BATCH):
        chunk = points[start : start + REBUILD_BATCH]
        write_update(store, place_map.extend(chunk))
        if progress is not None:
            progress(len(chunk))
    link_entities(store, place_map)
    return place_map


def catch_up(
    store: MemoryStore, place_map: PlaceMap, limit: int, *, write: bool = True
) -> int | None:
    """Place the perception observations written while no map was kept (a memory made before
    the map existed, or a crash between a batch and its places), when at most ``limit`` are
    missing. Returns how many were placed, or None when more are missing (rebuild instead).
    ``write`` False: in ``place_map`` only (a read-only memory)."""
    counts = map_counts(store)
    missing = counts.trajectory_observations - counts.linked_observations
    if missing <= 0:
        return 0
    if missing > limit:
        return None
    points = trajectory_points(store.graph.query("spatial_unplaced_trajectory"))
    for start in range(0, len(points), REBUILD_BATCH):
        update = place_map.extend(points[start : start + REBUILD_BATCH])
        if write:
            write_update(store, update)
    return len(points)


def map_counts(graph: _Reader | MemoryStore) -> MapCounts:
    """Places, connections, linked and trajectory observations stored in the graph."""
    reader = graph.graph if hasattr(graph, "graph") else graph
    rows = reader.query("spatial_counts")
    if not rows:
        places = reader.query("spatial_places")
        return MapCounts(len(places), 0, 0, 0)
    row = rows[0]
    return MapCounts(
        places=int(row["places"]),
        connections=int(row["connections"]),
        linked_observations=int(row["linked"]),
        trajectory_observations=int(row["trajectory"]),
    )


# --- routes (Kuzu weighted shortest paths) -----------------------------------------------------


def shortest_route(graph: _Reader, start: str, goal: str) -> Route | None:
    """The shortest route between two places (queries/spatial_route.cypher), or None when they
    are not connected. The same place gives a route of length 0."""
    if start == goal:
        return Route(0.0, [start], [], [])
    graph.query("spatial_path_depth")
    rows = graph.query("spatial_route", {"start": start, "goal": goal})
    if not rows:
        return None
    row = rows[0]
    return Route(
        length=float(row["length"]),
        place_ids=list(row["ids"]),
        xs=[float(x) for x in row["xs"]],
        ys=[float(y) for y in row["ys"]],
    )


def route_lengths(graph: _Reader, start: str, ids: Sequence[str]) -> dict[str, float]:
    """Route lengths from one place to each of ``ids`` (queries/spatial_route_costs.cypher);
    unreachable places are left out, the start itself has length 0."""
    others = sorted({i for i in ids if i != start})
    lengths = {start: 0.0} if start in ids else {}
    if others:
        graph.query("spatial_path_depth")
        for row in graph.query("spatial_route_costs", {"start": start, "ids": others}):
            lengths[row["id"]] = float(row["length"])
    return lengths


def _place(row: dict[str, Any]) -> Place:
    return Place(
        id=row["id"],
        x=validation.clamp_coordinate(float(row["x"])),
        y=validation.clamp_coordinate(float(row["y"])),
        z=validation.clamp_coordinate(float(row["z"] or 0.0)),
        visits=int(row["visits"] or 0),
        first_seen=float(row["first_seen"] if row["first_seen"] is not None else -math.inf),
        last_seen=float(row["last_seen"] if row["last_seen"] is not None else -math.inf),
    )


def _place_row(place: Place) -> dict[str, Any]:
    return {
        "id": place.id,
        "x": place.x,
        "y": place.y,
        "z": place.z,
        "visits": place.visits,
        "first_seen": place.first_seen,
        "last_seen": place.last_seen,
    }
