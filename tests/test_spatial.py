"""Spatial reasoning: the topological map, its routes, and the spatial tools, on real
Kuzu/LanceDB memories; the campus acceptance test uses the real MiniLM embedder."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from emem_graph import (
    HashingEmbedder,
    MemoryConfig,
    SentenceTransformerEmbedder,
    SpatioTemporalMemory,
)
from emem_graph.cli import main
from emem_graph.evals.campus import Campus, build_campus, questions
from emem_graph.evals.spatial import ask, memory_factory, populate
from emem_graph.spatial import keeper as keeper_module
from emem_graph.spatial import places
from emem_graph.spatial.geometry import in_sector, project
from emem_graph.spatial.topology import CLOSURE, WALK, PlaceMap, TrajectoryPoint
from emem_graph.storage.changes import GraphChange

POSITION = r"\(-?\d+\.\d,-?\d+\.\d\)"
POINT = r"\(-?\d+\.\d, -?\d+\.\d\)"


def _points(xy: list[tuple[float, float]], start: float = 0.0) -> list[TrajectoryPoint]:
    return [TrajectoryPoint(f"o{i}", x, y, 0.0, start + i) for i, (x, y) in enumerate(xy)]


def _memory(path: Path, **fields: object) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(path), maintenance_interval=None, **fields)
    return SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))


def _walk(
    memory: SpatioTemporalMemory, xy: list[tuple[float, float]], text: str, t0: float
) -> None:
    for i, (x, y) in enumerate(xy):
        memory.add(f"{text} {i % 3}", x, y, timestamp=t0 + i)
    memory.catch_up()  # the observations, and the map's growth from them, in the graph


# --- the map itself (no I/O) -------------------------------------------------------------------


def test_positions_closer_than_the_spacing_share_a_place_and_walks_connect_in_order() -> None:
    place_map = PlaceMap(spacing=2.0, link_radius=3.0, max_step=15.0)
    update = place_map.extend(_points([(float(x), 0.0) for x in range(11)]))
    assert [p.x for p in place_map.places] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert len(update.links) == 11
    assert {p.visits for p in place_map.places} == {1, 2}
    pairs = {tuple(sorted((c.a, c.b))) for c in place_map.connections}
    ids = [p.id for p in place_map.places]
    assert pairs == {tuple(sorted((ids[i], ids[i + 1]))) for i in range(5)}
    for connection in place_map.connections:
        a, b = place_map.place(connection.a), place_map.place(connection.b)
        assert connection.distance == pytest.approx(math.dist((a.x, a.y), (b.x, b.y)))


def test_a_new_place_closes_loops_within_the_link_radius_only() -> None:
    place_map = PlaceMap(spacing=2.0, link_radius=3.0, max_step=15.0)
    place_map.extend(_points([(0.0, 0.0), (10.0, 0.0)]))
    update = place_map.extend(_points([(10.0, 2.5), (0.0, 2.5), (0.0, 6.0)], start=10))
    ends = sorted(
        (place_map.place(c.a).x, place_map.place(c.a).y, place_map.place(c.b).y, c.kind)
        for c in update.connections
    )
    # (10, 2.5) is walked to from (10, 0); (0, 2.5) closes a loop with (0, 0); (0, 6) is 3.5 m
    # from (0, 0): no loop, only the walk from (0, 2.5).
    assert ends == [
        (0.0, 0.0, 2.5, CLOSURE),
        (0.0, 2.5, 6.0, WALK),
        (10.0, 0.0, 2.5, WALK),
        (10.0, 2.5, 2.5, WALK),
    ]


def test_a_jump_longer_than_max_step_is_not_a_walk() -> None:
    place_map = PlaceMap(spacing=2.0, link_radius=3.0, max_step=15.0)
    place_map.extend(_points([(0.0, 0.0), (2.0, 0.0), (40.0, 0.0), (42.0, 0.0)]))
    edges = sorted((place_map.place(c.a).x, place_map.place(c.b).x) for c in place_map.connections)
    assert edges == [(0.0, 2.0), (40.0, 42.0)]
    assert {c.kind for c in place_map.connections} == {WALK}


# --- the map in the graph ----------------------------------------------------------------------


def test_the_stored_map_matches_the_built_one_and_grows_on_after_a_reopen(tmp_path: Path) -> None:
    corridor = [(float(x), 0.0) for x in range(30)]
    with _memory(tmp_path / "m") as memory:
        _walk(memory, corridor, "corridor", 0.0)
        memory.add_body_state("battery 80%", "battery", x=100.0, y=100.0, timestamp=50.0)
        memory.catch_up()
        counts = places.map_counts(memory.store)
        assert counts == places.MapCounts(15, 14, 30, 30)
        far = memory.places.keeper.nearest(100.0, 100.0)
        assert far is not None and far[1] > 50  # body state is not where the robot went
    with _memory(tmp_path / "m") as memory:
        _walk(memory, [(29.0, float(y)) for y in range(1, 11)], "side", 100.0)
        counts = places.map_counts(memory.store)
        assert counts.linked_observations == counts.trajectory_observations == 40
        route = places.shortest_route(memory.store.graph, *_ends(memory, (0.0, 0.0), (29, 10)))
        assert route is not None
        assert route.length == pytest.approx(28.0 + 1.0 + 10.0, abs=2.5)
        rebuilt = memory.rebuild_places()
        assert rebuilt == places.map_counts(memory.store).places == counts.places


def test_the_maps_growth_is_written_in_batches_of_write_links_before_a_tool_and_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flushed batch grows the map in process; the graph gets it once WRITE_LINKS links
    wait, before a spatial tool reads, and at close, never a link twice."""
    monkeypatch.setattr(keeper_module, "WRITE_LINKS", 25)
    with _memory(tmp_path / "m", flush_batch_size=1000, flush_interval=1e9) as memory:
        for i in range(20):
            memory.add(f"corridor {i}", float(i), 0.0, timestamp=float(i))
        memory.flush()
        assert memory.places.keeper.size() == 10  # grown in process at once
        assert places.map_counts(memory.store).linked_observations == 0  # 20 < 25 waiting
        for i in range(20, 30):
            memory.add(f"corridor {i}", float(i), 0.0, timestamp=float(i))
        memory.flush()
        assert places.map_counts(memory.store) == places.MapCounts(15, 14, 30, 30)
        for i in range(30, 34):
            memory.add(f"corridor {i}", float(i), 0.0, timestamp=float(i))
        memory.flush()
        assert places.map_counts(memory.store).linked_observations == 30
        assert isinstance(memory.route_query("corridor 1", "corridor 32"), str)  # writes first
        assert places.map_counts(memory.store) == places.MapCounts(17, 16, 34, 34)
        for i in range(34, 40):
            memory.add(f"corridor {i}", float(i), 0.0, timestamp=float(i))
    with _memory(tmp_path / "m") as memory:  # close wrote the last 6, not placed again
        assert places.map_counts(memory.store) == places.MapCounts(20, 19, 40, 40)


def test_observations_written_without_a_map_are_placed_on_open(tmp_path: Path) -> None:
    with _memory(tmp_path / "m") as memory:
        _walk(memory, [(float(x), 0.0) for x in range(20)], "corridor", 0.0)
        memory.store.apply(GraphChange().run("spatial_clear"))
        assert places.map_counts(memory.store).places == 0
    with _memory(tmp_path / "m") as memory:
        counts = places.map_counts(memory.store)
        assert counts.places == 10
        assert counts.linked_observations == counts.trajectory_observations == 20


def test_entities_are_linked_to_their_nearest_place(tmp_path: Path) -> None:
    with _memory(tmp_path / "m") as memory:
        _walk(memory, [(float(x), 0.0) for x in range(20)], "corridor", 0.0)
        memory.add_entity("red chair", 7.2, 1.0, timestamp=30.0)
        memory.route_query("chair", goal="0, 0", start="18, 0")  # a spatial tool links first
        rows = memory.store.graph.query_text(
            "MATCH (e:Entity)-[l:AT_PLACE]->(p:Place) RETURN e.name AS name, p.x AS x, "
            "l.distance AS d"
        )
        assert [(r["name"], r["x"]) for r in rows] == [("red chair", 8.0)]
        assert rows[0]["d"] == pytest.approx(math.hypot(0.8, 1.0))


# --- routes: never a shortcut -----------------------------------------------------------------


@pytest.fixture(scope="module")
def campus() -> Campus:
    return build_campus(columns=3, rows=2, instances_per_kind=4, seed=0)


@pytest.fixture(scope="module")
def campus_memory(
    tmp_path_factory: pytest.TempPathFactory, minilm: SentenceTransformerEmbedder, campus: Campus
) -> Iterator[SpatioTemporalMemory]:
    memory = memory_factory(tmp_path_factory.mktemp("campus") / "m", minilm)()
    populate(memory, campus)
    yield memory
    memory.close()


def _ends(
    memory: SpatioTemporalMemory, a: tuple[float, float], b: tuple[float, float]
) -> tuple[str, str]:
    first, last = memory.places.keeper.nearest(*a), memory.places.keeper.nearest(*b)
    assert first is not None and last is not None
    return first[0].id, last[0].id


def test_routes_follow_connects_edges_and_are_never_shorter_than_the_straight_line(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    positions, a, b, d, ids = campus_memory.places.keeper.snapshot()
    edges = {frozenset((ids[i], ids[j])): dist for i, j, dist in zip(a, b, d, strict=True)}
    graph = coo_matrix((d, (a, b)), shape=(len(ids), len(ids))).tocsr()
    walkable = campus.nodes
    rng = random.Random(1)
    for _ in range(12):
        i, j = rng.sample(range(len(ids)), 2)
        route = places.shortest_route(campus_memory.store.graph, ids[i], ids[j])
        assert route is not None
        hops = list(itertools.pairwise(route.place_ids))
        assert all(frozenset(hop) in edges for hop in hops)
        assert route.length == pytest.approx(sum(edges[frozenset(h)] for h in hops))
        assert route.length >= math.dist(positions[i], positions[j]) - 1e-9
        assert route.length == pytest.approx(float(dijkstra(graph, False, i)[j]))
        # Through visited space only: every waypoint lies on the campus's corridors and streets.
        for x, y in zip(route.xs, route.ys, strict=True):
            assert np.hypot(walkable[:, 0] - x, walkable[:, 1] - y).min() < 1.0


def test_a_route_between_buildings_goes_out_through_the_doors(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    left, right = campus.buildings[0], campus.buildings[1]
    start = (left.xmax - 4.0, left.corridor_y)
    goal = (right.xmin + 4.0, right.corridor_y)
    route = places.shortest_route(campus_memory.store.graph, *_ends(campus_memory, start, goal))
    assert route is not None
    straight = math.dist(start, goal)
    # The buildings' facing walls are 30 m apart, but the corridors are reached by the doors.
    assert route.length > straight + 2 * (left.corridor_y - left.ymin)
    assert min(route.ys) < left.ymin  # it left the building


# --- the campus acceptance test ------------------------------------------------------------------


def test_campus_questions_rank_the_right_instance_first(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    assert len(campus.buildings) >= 5
    kinds = {i.kind for i in campus.items if i.kind}
    assert all(len(campus.instances(k)) >= 3 for k in kinds)
    asked = questions(campus, 36, seed=0)
    assert len(asked) >= 30
    assert {q.kind for q in asked} == {"route", "compass", "side"}
    outcomes = [ask(campus_memory, campus, q) for q in asked]
    right = [o for o in outcomes if o.right]
    assert len(right) / len(outcomes) >= 0.9
    assert all(o.error <= o.question.answer.radius for o in right)


# --- the tools' text ----------------------------------------------------------------------------


def test_route_query_lists_candidates_by_detour_with_positions_and_distances(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    text = campus_memory.route_query(
        "vending machine", goal="football field", start="basketball court", max_detour=300.0
    )
    lines = text.splitlines()
    assert re.fullmatch(
        rf"Route from 'basketball court' {POINT} to 'football field' {POINT}: "
        r"\d+\.\d m through \d+ places\.",
        lines[0],
    )
    detours = []
    for number, line in enumerate(lines[1:], 1):
        match = re.fullmatch(
            rf"{number}\. \[entity/object\] {POSITION} \[seen \d+x\] vending machine — "
            r"(\d+\.\d) m along the route, detour (\d+\.\d) m",
            line,
        )
        assert match, line
        detours.append(float(match.group(2)))
    assert detours == sorted(detours) and len(detours) >= 2
    # Indoor instances cost a walk into a building and out again: 127-183 m by the ground truth.
    assert detours[0] == pytest.approx(127.0, abs=8.0)
    tight = campus_memory.route_query(
        "vending machine", goal="football field", start="basketball court", max_detour=140.0
    )
    assert len(tight.splitlines()) == 2 and tight.splitlines()[1] == lines[1]
    none = campus_memory.route_query(
        "vending machine", goal="football field", start="basketball court"
    )
    assert none.splitlines()[1] == "No vending machine found within 30.0 m of the route."


def test_route_query_starts_at_the_current_position_by_default(
    campus_memory: SpatioTemporalMemory,
) -> None:
    here = campus_memory.current_position
    assert here is not None
    text = campus_memory.route_query("printer", goal="main gate", max_detour=300.0)
    assert text.startswith(f"Route from ({here[0]:.1f}, {here[1]:.1f}) to 'main gate'")
    assert re.search(rf"^1\. \[camera\] {POSITION} \[[\d :-]+\] .*printer", text, re.MULTILINE)


def test_directional_query_keeps_its_sector_nearest_first(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    anchor = campus.item("fountain")
    text = campus_memory.directional_query("bench", "fountain", "west", max_distance=500.0)
    lines = text.splitlines()
    assert re.fullmatch(rf"West of 'fountain' {POINT}:", lines[0])
    distances = []
    for line in lines[1:]:
        match = re.search(rf"({POSITION[:-2]}.*?)— (\d+\.\d) m west$", line)
        assert match, line
        x, y = (float(v) for v in re.findall(r"-?\d+\.\d", line)[:2])
        assert in_sector(x - anchor.x, y - anchor.y, "west")
        distances.append(float(match.group(2)))
    assert distances == sorted(distances)
    east = campus_memory.directional_query("bench", "fountain", "east", max_distance=500.0)
    assert east.splitlines()[1:] == ["No bench found east within 500.0 m."]
    assert len(lines) == 1 + len(campus.instances("bench"))  # every bench is west of it


def test_directional_query_left_and_right_of_a_route(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    sides = {}
    for side in ("left", "right"):
        text = campus_memory.directional_query(
            "bench", "main gate", side, max_distance=20.0, route_goal="football field"
        )
        lines = text.splitlines()
        assert lines[1] == f"On its {side}:"
        sides[side] = [] if lines[2].startswith("No ") else lines[2:]
        for line in sides[side]:
            assert re.search(rf"m along the route, \d+\.\d m to the {side}$", line), line
    assert sides["left"] or sides["right"]
    assert not {s.split(". ", 1)[-1] for s in sides["left"]} & {
        s.split(". ", 1)[-1] for s in sides["right"]
    }


def test_navigate_to_gives_waypoints_from_here_along_the_map(
    campus_memory: SpatioTemporalMemory, campus: Campus
) -> None:
    text = campus_memory.navigate_to("chemistry lab")
    lines = text.splitlines()
    header = re.fullmatch(
        rf"Route to 'chemistry lab' at {POINT}: (\d+\.\d) m, (\d+) waypoints from {POINT}:",
        lines[0],
    )
    assert header, lines[0]
    points = [
        tuple(float(v) for v in re.findall(r"-?\d+\.\d", line.split(". ", 1)[1]))
        for line in lines[1:]
    ]
    assert len(points) == int(header.group(2)) >= 2
    walked = sum(math.dist(p, q) for p, q in itertools.pairwise(points))
    assert walked <= float(header.group(1)) + 0.1
    lab = campus.item("chemistry lab")
    assert math.dist(points[-1], (lab.x, lab.y)) <= 3.0
    for x, y in points[1:-1]:  # corners of the path lie on corridors and streets
        assert np.hypot(campus.nodes[:, 0] - x, campus.nodes[:, 1] - y).min() < 1.0


def test_spatial_tools_are_offered_and_dispatched(campus_memory: SpatioTemporalMemory) -> None:
    names = [d["function"]["name"] for d in campus_memory.get_tool_definitions()]
    assert {"route_query", "directional_query", "navigate_to"} <= set(names)
    text = campus_memory.dispatch_tool_call(
        "route_query", '{"target": "water cooler", "goal": "10, -15", "start": "0, -15"}'
    )
    assert text.startswith("Route from (0.0, -15.0) to (10.0, -15.0):")


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("route_query", {"target": "x"}, "missing required argument 'goal'"),
        ("route_query", {"target": " ", "goal": "a"}, "'target'"),
        ("route_query", {"target": "x", "goal": "nan, 2"}, "coordinates must be finite"),
        ("route_query", {"target": "x", "goal": "1, 2", "max_detour": -1}, "'max_detour'"),
        ("directional_query", {"target": "x", "anchor": "1,2", "direction": "up"}, "'direction'"),
        ("directional_query", {"target": "x", "anchor": "1,2", "direction": "left"}, "route_goal"),
        (
            "directional_query",
            {"target": "x", "anchor": "1,2", "direction": "north", "route_goal": "3, 4"},
            "goes with direction 'left' or 'right'",
        ),
        ("navigate_to", {"concept": "x", "speed": 2}, "unknown argument 'speed'"),
    ],
)
def test_bad_spatial_arguments_give_one_error_line(
    campus_memory: SpatioTemporalMemory, tool: str, arguments: dict[str, object], message: str
) -> None:
    text = campus_memory.dispatch_tool_call(tool, arguments)
    assert text.startswith("Error: ") and message in text and "\n" not in text


def test_no_map_and_no_route_are_said_plainly(tmp_path: Path) -> None:
    with _memory(tmp_path / "m") as memory:
        assert memory.navigate_to("3, 4") == (
            "No current position: the robot has not perceived anything yet."
        )
        assert memory.route_query("cup", goal="1, 1", start="0, 0").startswith("No map yet")
        _walk(memory, [(float(x), 0.0) for x in range(6)], "room one", 0.0)
        _walk(memory, [(100.0 + x, 0.0) for x in range(6)], "room two", 100.0)  # carried over
        text = memory.route_query("cup", goal="104, 0", start="0, 0")
        assert text.startswith("No known route from (0.0, 0.0) to (104.0, 0.0)")


def test_places_command_counts_and_rebuilds_the_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _memory(tmp_path / "m") as memory:
        _walk(memory, [(float(x), 0.0) for x in range(10)], "corridor", 0.0)
    assert main(["places", str(tmp_path / "m")]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("5 places, 4 CONNECTS edges; 10 of 10 perception observations")
    assert main(["-q", "places", str(tmp_path / "m"), "--rebuild", "--embedder", "hashing"]) == 0
    assert capsys.readouterr().out == shown


def test_the_named_route_query_runs_from_the_explore_surface_past_30_hops(tmp_path: Path) -> None:
    from emem_graph.explore.cypher import run_named_query

    with _memory(tmp_path / "m") as memory:
        _walk(memory, [(float(x), 0.0) for x in range(0, 81, 2)], "corridor", 0.0)
        start, goal = _ends(memory, (0, 0), (80, 0))
        route = places.shortest_route(memory.store.graph, start, goal)
        assert route is not None and len(route.place_ids) > 31  # Kuzu's default limit: 30 hops
    result = run_named_query(tmp_path / "m", "spatial_route", {"start": start, "goal": goal})
    assert len(result.rows) == 1
    assert result.rows[0][0] == pytest.approx(route.length)
    assert list(result.rows[0][1]) == route.place_ids


def test_geometry_projection_sides_and_sectors() -> None:
    xs, ys = [0.0, 10.0, 10.0], [0.0, 0.0, 10.0]  # east, then north
    assert project(xs, ys, 5.0, 1.0).along == pytest.approx(5.0)
    assert project(xs, ys, 5.0, 1.0).lateral == pytest.approx(1.0)  # left of going east
    assert project(xs, ys, 11.0, 5.0).lateral == pytest.approx(-1.0)  # right of going north
    assert project(xs, ys, 11.0, 5.0).along == pytest.approx(15.0)
    assert in_sector(-10.0, 9.0, "west") and not in_sector(-10.0, 11.0, "west")
    assert in_sector(-1.0, 1.0, "northwest") and in_sector(0.0, -5.0, "south")


def test_candidates_with_equal_similarity_rank_by_position_not_by_id() -> None:
    from emem_graph.models import Observation
    from emem_graph.spatial.resolve import _relevant

    def seen(id_: str, x: float) -> Observation:
        return Observation(id=id_, text="a vending machine", x=x, y=0.0, timestamp=0.0)

    # The same caption seen at three spots; the index returns float-noise-level differences.
    hits = [(seen("a", 30.0), 0.8 + 1e-9), (seen("b", 10.0), 0.8), (seen("c", 20.0), 0.8 - 1e-9)]
    ranked = [record.x for record, _ in _relevant(hits, [], 0.0)]
    assert ranked == [10.0, 20.0, 30.0]
    assert [r.x for r, _ in _relevant(list(reversed(hits)), [], 0.0)] == ranked
    # A real difference in similarity still comes first.
    hits.append((seen("d", 40.0), 0.85))
    assert [record.x for record, _ in _relevant(hits, [], 0.0)] == [40.0, 10.0, 20.0, 30.0]


def test_the_map_picture_draws_places_and_a_route(tmp_path: Path) -> None:
    from emem_graph.explore.mapping import render_map

    with _memory(tmp_path / "m") as memory:
        _walk(memory, [(float(x), 0.0) for x in range(21)], "corridor", 0.0)
        _walk(memory, [(20.0, float(y)) for y in range(1, 21)], "hall", 100.0)
        route = places.shortest_route(memory.store.graph, *_ends(memory, (0, 0), (20, 20)))
        assert route is not None
    summary = render_map(
        tmp_path / "m", tmp_path / "map.png", places=True, route=(0, 0, 20, 20), progress=False
    )
    assert summary.places == 21
    assert summary.route_length == pytest.approx(route.length)
    assert summary.describe().endswith(f"21 places, a route of {route.length:.1f} m")
    assert (tmp_path / "map.png").stat().st_size > 10_000
    plain = render_map(tmp_path / "m", tmp_path / "plain.png", progress=False)
    assert plain.places == 0 and plain.route_length is None
