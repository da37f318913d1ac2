"""The in-process ObservationIndex answers exactly what the graph answers, and follows it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.storage.observation_index import ObservationIndex

LAYERS = ("captions", "detections", "ocr")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _memory(path: Path, clock: Clock) -> SpatioTemporalMemory:
    config = MemoryConfig(
        db_path=str(path),
        maintenance_interval=None,
        entity_extract_flush_interval=10_000,
        entity_extract_time_interval=1e9,
        consolidation_window=50.0,
        archive_after_seconds=400.0,
    )
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=clock
    )


def _fill(memory: SpatioTemporalMemory, clock: Clock, rng: np.random.Generator) -> None:
    """Three episodes (consolidated: long_term), loose observations, body state, a note, a
    tie in time and in distance; then archival of the oldest long-term ones."""
    for episode in range(3):
        memory.start_episode(f"patrol {episode}")
        for _ in range(40):
            clock.now += float(rng.uniform(1.0, 5.0))
            x, y = (float(v) for v in rng.uniform(0.0, 20.0, 2))
            memory.add(f"a thing {rng.integers(1000)}", x, y, layer_name=str(rng.choice(LAYERS)))
            if rng.random() < 0.2:
                memory.add_body_state(f"battery {rng.integers(100)}%", "battery", x=x, y=y)
            if rng.random() < 0.1:
                memory.add_body_state(f"{rng.integers(60)} C", "temperature", x=x, y=y)
        memory.end_episode(wait=True)
    for _ in range(60):
        clock.now += float(rng.uniform(1.0, 5.0))
        x, y = (float(v) for v in rng.uniform(0.0, 20.0, 2))
        memory.add(f"loose {rng.integers(1000)}", x, y, layer_name=str(rng.choice(LAYERS)))
    memory.add("tie a", 5.0, 5.0, timestamp=clock.now, layer_name="captions")
    memory.add("tie b", 5.0, 5.0, timestamp=clock.now, layer_name="captions")
    memory.store_specific_memory("a note to self", x=19.0, y=19.0)
    memory.flush()
    clock.now += 10.0
    assert memory.maintenance() > 0  # the first episode is archived (raw text dropped)


def _cypher_near(memory: SpatioTemporalMemory, **params: Any) -> list[str]:
    rows = memory.store.graph.query("observations_nearest", params)
    return [row["id"] for row in rows]


def _cypher_window(memory: SpatioTemporalMemory, circle: Any, **params: Any) -> list[str]:
    area = (
        {"in_area": False, "x": 0.0, "y": 0.0, "radius": 0.0}
        if circle is None
        else {"in_area": True, "x": circle[0], "y": circle[1], "radius": circle[2]}
    )
    rows = memory.store.graph.query("observations_in_window", {**params, **area})
    return [row["id"] for row in rows]


@pytest.fixture(scope="module")
def remembered(tmp_path_factory: pytest.TempPathFactory) -> Any:
    clock = Clock()
    memory = _memory(tmp_path_factory.mktemp("index") / "mem", clock)
    _fill(memory, clock, np.random.default_rng(7))
    yield memory, clock
    memory.close()


def test_the_memory_holds_every_tier_the_index_must_tell_apart(remembered: Any) -> None:
    memory, _ = remembered
    tiers = {o.tier for o in memory.store.get_observations(memory.store.index.near(
        10.0, 10.0, 100.0, include_body_state=True, limit=10_000
    ))}  # fmt: skip
    assert {"short_term", "long_term"} <= tiers
    archived = memory.store.graph.query_text(
        "MATCH (o:Observation) WHERE o.tier = 'archived' RETURN count(o) AS n"
    )[0]["n"]
    assert archived > 0


def _random_area_read(rng: np.random.Generator, now: float) -> dict[str, Any]:
    """A circle over (and around) the filled floor with random layer, time and body-state
    filters, as near() / count_within() keywords."""
    x, y = (float(v) for v in rng.uniform(-2.0, 22.0, 2))
    return dict(
        x=x,
        y=y,
        radius=float(rng.choice([0.0, 1.0, 3.0, 8.0, 50.0])),
        time_after=None if rng.random() < 0.5 else float(rng.uniform(0, now)),
        time_before=None if rng.random() < 0.5 else float(rng.uniform(0, now)),
        layer=None if rng.random() < 0.5 else str(rng.choice([*LAYERS, "battery", "nope"])),
        include_body_state=bool(rng.random() < 0.5),
    )


@pytest.mark.parametrize("seed", range(6))
def test_area_reads_equal_the_cypher_query(remembered: Any, seed: int) -> None:
    memory, clock = remembered
    rng = np.random.default_rng(seed)
    for _ in range(25):
        read = _random_area_read(rng, clock.now)
        limit = int(rng.choice([1, 3, 10, 500]))
        expected = _cypher_near(memory, **read, limit=limit)
        got = memory.store.index.near(**read, limit=limit)
        assert got == expected


@pytest.mark.parametrize("seed", range(6))
def test_time_window_reads_equal_the_cypher_query(remembered: Any, seed: int) -> None:
    memory, clock = remembered
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        after = None if rng.random() < 0.3 else float(rng.uniform(0, clock.now))
        before = None if rng.random() < 0.3 else float(rng.uniform(0, clock.now))
        circle = None
        if rng.random() < 0.5:
            circle = (*(float(v) for v in rng.uniform(0.0, 20.0, 2)), float(rng.uniform(1, 10)))
        layer = None if rng.random() < 0.6 else str(rng.choice([*LAYERS, "battery"]))
        body = bool(rng.random() < 0.5)
        newest = bool(rng.random() < 0.5)
        limit = int(rng.choice([1, 5, 10, 1000]))
        expected = _cypher_window(
            memory, circle, time_after=after, time_before=before, layer=layer,
            include_body_state=body, newest_first=newest, limit=limit,
        )  # fmt: skip
        got = memory.store.index.in_window(
            time_after=after, time_before=before, layer=layer, circle=circle,
            include_body_state=body, newest_first=newest, limit=limit,
        )  # fmt: skip
        # Equal timestamps may come in either order from Kuzu: compare times, then the sets.
        times = {o.id: o.timestamp for o in memory.store.get_observations(expected + got)}
        assert [times[i] for i in got] == [times[i] for i in expected]
        if len(expected) < limit:
            assert set(got) == set(expected)


def test_latest_body_state_equals_the_cypher_query(remembered: Any) -> None:
    memory, _ = remembered
    for layers in ([], ["battery"], ["temperature", "battery"], ["nope"]):
        rows = memory.store.graph.query("latest_body_state", {"layers": layers})
        expected = [row["b"]["id"] for row in rows]
        assert memory.store.index.latest_body_state(layers) == expected


def test_records_from_the_index_equal_the_graph_records(remembered: Any) -> None:
    memory, _ = remembered
    store = memory.store
    ids = store.index.near(10.0, 10.0, 100.0, include_body_state=True, limit=10_000)
    archived = store.graph.query_text(
        "MATCH (o:Observation) WHERE o.tier = 'archived' RETURN o.id AS id"
    )
    ids += [row["id"] for row in archived]
    from_index = store.index.records(ids)
    from_graph = store._fetch("observation", ids)
    assert set(from_index) == set(from_graph) == set(ids)
    for node_id in ids:
        assert from_index[node_id].model_dump() == from_graph[node_id].model_dump()


def test_the_index_is_rebuilt_from_the_graph_on_reopen(tmp_path: Path) -> None:
    clock = Clock()
    memory = _memory(tmp_path / "mem", clock)
    _fill(memory, clock, np.random.default_rng(3))
    before = memory.store.index
    probe = dict(x=10.0, y=10.0, radius=6.0, include_body_state=True, limit=1000)
    near_before = before.near(**probe)  # type: ignore[arg-type]
    body_before = before.latest_body_state()
    position = memory.current_position
    count = len(before)
    memory.close()

    reopened = _memory(tmp_path / "mem", clock)
    try:
        index = reopened.store.index
        assert index is not before and len(index) == count
        assert index.near(**probe) == near_before  # type: ignore[arg-type]
        assert index.latest_body_state() == body_before
        assert np.allclose(reopened.current_position, position)
        # Loaded in time order whatever order the graph returns its rows in, so reads keep
        # their bisection and scan-from-the-end paths after a reopen.
        assert index._snapshot().sorted
    finally:
        reopened.close()


def _arrow_rows(observations: list[Any]) -> pa.Table:
    """The observations as the graph's index read returns them (load()'s input)."""
    return pa.table(
        {
            "id": [o.id for o in observations],
            "text": [o.text for o in observations],
            "x": [o.x for o in observations],
            "y": [o.y for o in observations],
            "z": [o.z for o in observations],
            "timestamp": [o.timestamp for o in observations],
            "layer": [o.layer_name for o in observations],
            "source_type": [o.source_type for o in observations],
            "confidence": [o.confidence for o in observations],
            "tier": ["short_term"] * len(observations),
            "episode_id": pa.array([o.episode_id for o in observations], pa.string()),
            "metadata": [json.dumps(o.metadata) for o in observations],
        }
    )


def test_load_sorts_rows_by_time() -> None:
    """The graph returns rows in storage order; load() puts them in time order."""

    rng = np.random.default_rng(5)
    observations = [_observation(i, 100.0 + i, rng) for i in range(300)]
    shuffled = [observations[i] for i in rng.permutation(len(observations))]
    table = _arrow_rows(shuffled)
    loaded, appended = ObservationIndex(), ObservationIndex()
    loaded.load(table)
    appended.append(observations)
    assert loaded._snapshot().sorted
    assert loaded.latest_body_state() == appended.latest_body_state() == ["o00290", "o00295"]
    window = dict(time_after=150.0, time_before=260.0, limit=40)
    assert loaded.in_window(**window) == appended.in_window(**window)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(4))
def test_an_index_loaded_from_arrow_holds_what_appends_hold(seed: int) -> None:
    """load() codes each column's distinct values once (layers, body state, tiers, pooled
    strings, grid cells in bulk); the index it builds equals one the same rows were appended
    to, column by column and cell by cell (layers, tiers and None values mixed, some rows
    sharing a cell, a second load on top of the first)."""
    rng = np.random.default_rng(seed)
    observations = [_observation(i, 10.0 + i, rng) for i in range(600)]
    for i, o in enumerate(observations):
        o.x, o.y = float(rng.integers(-3, 4)) + 0.5 * (i % 2), float(rng.integers(-3, 4))
        o.episode_id = None if i % 4 == 0 else f"e{i % 3}"
        o.layer_name = o.layer_name if i % 11 else f"layer {i % 4}"
    tiers = [["short_term", "long_term", "archived"][int(rng.integers(0, 3))] for _ in range(600)]
    table = _arrow_rows(observations).set_column(9, "tier", pa.array(tiers, pa.string()))
    loaded, appended = ObservationIndex(), ObservationIndex()
    loaded.load(table.slice(0, 250))
    loaded.load(table.slice(250))
    for o, tier in zip(observations, tiers, strict=True):
        appended.append([o], tier=tier)  # type: ignore[arg-type]
    n = len(observations)
    assert len(loaded) == len(appended) == n
    for name in ("_x", "_y", "_t", "_confidence", "_tier", "_body"):
        assert np.array_equal(getattr(loaded, name)[:n], getattr(appended, name)[:n]), name
    layer_names = [loaded._layer_names[c] for c in loaded._layer[:n]]
    assert layer_names == [appended._layer_names[c] for c in appended._layer[:n]]
    assert None not in loaded._layer_names
    for name in ("_ids", "_texts", "_sources", "_episodes", "_metadata"):
        assert getattr(loaded, name) == getattr(appended, name), name
    assert loaded._row == appended._row
    assert {loaded._layer_names[c] for c in loaded._body_codes} == {
        appended._layer_names[c] for c in appended._body_codes
    }
    cells = {key: rows.view().tolist() for key, rows in loaded._cells._cells.items()}
    assert cells == {key: rows.view().tolist() for key, rows in appended._cells._cells.items()}
    assert len(cells) < 60  # rows share cells: the bulk filing met cells already held


@pytest.mark.parametrize("seed", range(3))
def test_count_within_equals_a_count_of_the_area_read(remembered: Any, seed: int) -> None:
    """count_within() (the estimate that picks exact or indexed area searches) counts what
    near() would return without a limit."""
    memory, clock = remembered
    index = memory.store.index
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        read = _random_area_read(rng, clock.now)
        expected = len(index.near(**read, limit=100_000))
        assert index.count_within(**read) == expected


def test_an_empty_index_answers_nothing() -> None:
    index = ObservationIndex()
    assert index.near(0.0, 0.0, 10.0) == []
    assert index.in_window(time_after=None, time_before=None) == []
    assert index.latest_body_state() == []
    assert index.latest_perception_position() is None
    assert index.records(["nope"]) == {}


def _observation(i: int, t: float, rng: np.random.Generator) -> Any:
    from emem_graph.models import INTEROCEPTION, Observation

    body = i % 5 == 0
    return Observation(
        id=f"o{i:05d}",
        text=f"thing {i}",
        x=float(rng.uniform(0, 50)),
        y=float(rng.uniform(0, 50)),
        timestamp=t,
        layer_name=["battery", "temperature"][i % 2] if body else str(LAYERS[i % len(LAYERS)]),
        source_type=INTEROCEPTION if body else "perception",
    )


def test_rows_in_time_order_answer_like_a_full_pass() -> None:
    """While rows come in time order, windows are bisected and latest readings found from
    the end; one row out of order switches every read back to the full pass. Both give the
    same answers."""
    rng = np.random.default_rng(4)
    observations = [_observation(i, 1_000.0 + 2.0 * i, rng) for i in range(20_000)]
    ordered, shuffled = ObservationIndex(), ObservationIndex()
    for start in range(0, len(observations), 1_000):
        ordered.append(observations[start : start + 1_000])
    rest, late = observations[:-1], observations[-1:]
    shuffled.append(late)  # the newest first: not in time order
    shuffled.append(rest)
    assert ordered._snapshot().sorted and not shuffled._snapshot().sorted
    ordered.set_tier([observations[-5].id, observations[-10].id], "archived")
    shuffled.set_tier([observations[-5].id, observations[-10].id], "archived")
    for layers in ([], ["battery"], ["temperature", "battery"], ["nope"], ["captions"]):
        assert ordered.latest_body_state(layers) == shuffled.latest_body_state(layers)
    # o19995 (temperature) and o19990 (battery) are archived: the readings before them count.
    assert ordered.latest_body_state() == ["o19980", "o19985"]
    for _ in range(20):
        after = float(rng.uniform(900, 41_000))
        before = after + float(rng.uniform(0, 3_000))
        for newest_first in (True, False):
            window = dict(time_after=after, time_before=before, newest_first=newest_first)
            assert ordered.in_window(**window, limit=50) == shuffled.in_window(**window, limit=50)
        near = dict(time_after=after, time_before=before, include_body_state=True, limit=20)
        assert ordered.near(25.0, 25.0, 10.0, **near) == shuffled.near(25.0, 25.0, 10.0, **near)
    assert ordered.in_window(time_after=None, time_before=999.0) == []


def test_area_reads_through_the_grid_equal_a_scan_of_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """near() gathers its candidates from rings of grid cells around the point (stopping when
    nothing unvisited can come nearer) or from the cells the circle covers; with the grid off
    (every read scans all rows) the answers are the same, ties and edges included."""
    from emem_graph.storage import observation_index as module

    rng = np.random.default_rng(6)
    observations = [_observation(i, 5.0 * i, rng) for i in range(6_000)]
    for o in observations[:40]:  # on cell borders and tied in distance
        o.x, o.y = 8.0, 12.0
    index = ObservationIndex()
    index.append(observations)
    index.set_tier([o.id for o in observations[100:200]], "archived")
    probes = [(8.0, 12.0, 0.0), (8.0, 12.0, 4.0), (0.0, 0.0, 3.0), (25.0, 25.0, 60.0)]
    probes += [(7.99, 12.01, 5.0), (8.01, 11.99, 9.0), (23.9, 4.1, 2.0), (48.0, 47.99, 30.0)]
    probes += [
        (float(rng.uniform(-5, 55)), float(rng.uniform(-5, 55)), float(rng.uniform(0.5, 12)))
        for _ in range(30)
    ]
    options = [
        {},
        {"include_body_state": True, "limit": 50},
        {"layer": "battery", "include_body_state": True},
        {"time_after": 2_000.0, "time_before": 20_000.0, "limit": 25},
        {"limit": 1},
        {"layer": "captions", "limit": 3},
    ]
    grid = [[index.near(x, y, r, **o) for o in options] for x, y, r in probes]  # type: ignore[arg-type]
    monkeypatch.setattr(module, "_GRID_SHARE", 0.0)
    scan = [[index.near(x, y, r, **o) for o in options] for x, y, r in probes]  # type: ignore[arg-type]
    assert grid == scan
    assert sum(len(answer) for answers in grid for answer in answers) > 500


def test_area_filters_are_counted_from_the_index(remembered: Any) -> None:
    """MemoryStore.matching_rows() estimates the vector rows an area filter passes from the
    in-process indexes: its observations are exactly the vector store's observation rows in
    the circle; other filters get no estimate (the vector store counts them)."""
    from dataclasses import replace

    from emem_graph.filters import VectorFilter
    from emem_graph.models import INTEROCEPTION

    memory, _ = remembered
    store = memory.store
    for x, y, radius in ((10.0, 10.0, 5.0), (3.0, 17.0, 2.5), (30.0, 30.0, 1.0)):
        where = VectorFilter(
            center=(x, y),
            radius=radius,
            exclude_source_types=(INTEROCEPTION,),
            exclude_tiers=("archived",),
        )
        in_vectors = store.vectors.count(replace(where, kinds=("observation",)))
        assert store.matching_rows(where) == in_vectors + len(store.entities)
        with_body = replace(where, exclude_source_types=None)
        assert store.matching_rows(with_body) == store.vectors.count(
            replace(with_body, kinds=("observation",))
        ) + len(store.entities)
    assert store.matching_rows(None) is None
    assert store.matching_rows(VectorFilter(layers=("captions",))) is None
    assert store.matching_rows(replace(where, episode_id="e1")) is None
    assert store.matching_rows(replace(where, kinds=("gist",))) is None


def test_a_read_begun_before_a_tier_change_sees_the_tiers_it_began_with() -> None:
    """set_tier writes a new tier column (copy on write) instead of changing the one a reader
    took with its snapshot, so a snapshot is not copied at every read and stays consistent."""
    rng = np.random.default_rng(8)
    observations = [_observation(i, float(i), rng) for i in range(50)]
    index = ObservationIndex()
    index.append(observations)
    before = index._snapshot()
    index.set_tier([o.id for o in observations[:10]], "archived")
    after = index._snapshot()
    assert not (before.tier == 3).any()
    assert (after.tier[:10] == 3).all() and not (after.tier[10:] == 3).any()
    assert all(
        o.id not in index.near(o.x, o.y, 0.0, include_body_state=True) for o in observations[:10]
    )


def test_rows_far_beyond_int64_cells_are_found_where_reads_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Coordinates up to 1e308 are accepted; their grid cells do not fit int64 (casting them
    gave a RuntimeWarning and a wrong cell, so area reads through the grid missed the rows).
    They are filed under the cells reads compute, in a batch of their own or mixed with near
    rows, and the grid answers as a scan of every row does."""
    from emem_graph.storage import observation_index as module

    rng = np.random.default_rng(8)
    observations = [_observation(i, 10.0 * i, rng) for i in range(3_000)]
    far = [(1e308, 3.0), (-1e308, -1e308), (2.0**70, 5.0), (7.5, 1e300)]
    for o, (x, y) in zip(observations[350::700], far, strict=True):
        o.x, o.y = x, y
    index = ObservationIndex()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index.append(observations[:1_500])  # mixed with near rows
        index.append(observations[1_500:])
    probes = [(x, y, 2.0) for x, y in far] + [(25.0, 25.0, 5.0), (10.0, 40.0, 20.0)]
    options = {"include_body_state": True, "limit": 20}
    grid = [index.near(x, y, r, **options) for x, y, r in probes]  # type: ignore[arg-type]
    for (x, y), answer, o in zip(far, grid[:4], observations[350::700], strict=True):
        assert answer == [o.id], (x, y)
    monkeypatch.setattr(module, "_GRID_SHARE", 0.0)
    assert grid == [index.near(x, y, r, **options) for x, y, r in probes]  # type: ignore[arg-type]
    assert len(grid[-1]) == 20


@pytest.mark.parametrize("in_time_order", [True, False])
def test_latest_look_through_the_grid_equals_a_scan_and_a_brute_force(
    monkeypatch: pytest.MonkeyPatch, in_time_order: bool
) -> None:
    """latest_within() (entity_query's absence check) reads the grid cells' rows straight from
    the columns; with the grid off it scans every row. Both equal a brute force over the
    observations, with layers, time windows, body states, archived rows, rows on cell
    borders and rows out of time order."""
    from emem_graph.storage import observation_index as module

    rng = np.random.default_rng(11)
    observations = [_observation(i, 5.0 * i, rng) for i in range(4_000)]
    for o in observations[:30]:
        o.x, o.y = 8.0, 12.0  # on a cell corner
    index = ObservationIndex()
    if in_time_order:
        index.append(observations)
    else:
        index.append(observations[2_000:])
        index.append(observations[:2_000])
    archived = {o.id for o in observations[100:300]}
    index.set_tier(sorted(archived), "archived")

    def brute(x: float, y: float, r: float, **o: Any) -> float | None:
        times = [
            ob.timestamp
            for ob in observations
            if ob.id not in archived
            and not ob.is_body_state
            and (o.get("layer") is None or ob.layer_name == o["layer"])
            and (o.get("time_after") is None or ob.timestamp >= o["time_after"])
            and (o.get("time_before") is None or ob.timestamp <= o["time_before"])
            and (ob.x - x) ** 2 + (ob.y - y) ** 2 <= r * r
        ]
        return max(times) if times else None

    probes = [(8.0, 12.0, 0.0), (8.0, 12.0, 2.0), (7.99, 12.01, 2.0), (0.0, 0.0, 2.0)]
    probes += [
        (float(rng.uniform(-5, 55)), float(rng.uniform(-5, 55)), float(rng.uniform(0.5, 4)))
        for _ in range(40)
    ]
    options: list[dict[str, Any]] = [
        {},
        {"layer": "captions"},
        {"layer": "nope"},
        {"time_after": 1_000.0},
        {"time_after": 5_000.0, "time_before": 12_000.0},
        {"time_before": 400.0, "layer": "ocr"},
        {"time_before": 1_400.0},  # the archived rows are the latest here
    ]
    grid = [[index.latest_within(x, y, r, **o) for o in options] for x, y, r in probes]
    expected = [[brute(x, y, r, **o) for o in options] for x, y, r in probes]
    assert grid == expected
    monkeypatch.setattr(module, "_GRID_SHARE", 0.0)
    assert [[index.latest_within(x, y, r, **o) for o in options] for x, y, r in probes] == grid
    assert sum(t is not None for answers in grid for t in answers) > 60


def test_records_built_without_validation_equal_validated_ones() -> None:
    """records() builds its observations with models.trusted() (no per-field walk): each
    equals, dumps and copies like the same observation validated field by field."""
    from emem_graph.models import Observation

    rng = np.random.default_rng(12)
    observations = [_observation(i, float(i), rng) for i in range(40)]
    observations[3].metadata = {"robot": "r1", "n": 2}
    observations[4].episode_id = "e1"
    index = ObservationIndex()
    index.append(observations)
    built = index.records([o.id for o in observations])
    for o in observations:
        validated = Observation(**o.model_dump())
        record = built[o.id]
        assert record == validated
        assert record.model_dump() == validated.model_dump()
        assert record.model_fields_set == validated.model_fields_set
        copied = record.model_copy(update={"text": "changed"})
        assert copied.text == "changed" and record.text == o.text
        assert Observation.model_validate(record.model_dump()) == record


def test_repeated_strings_are_held_once_and_read_back_alike() -> None:
    """Texts, source types, episode ids and metadata that repeat are one Python object per
    distinct value, whether loaded from the graph's Arrow rows (a dictionary encoding) or
    appended (the pool): the records read back equal the observations, None kept."""
    from emem_graph.storage import observation_columns as module

    rng = np.random.default_rng(13)
    observations = [_observation(i, float(i), rng) for i in range(300)]
    for i, o in enumerate(observations):
        o.text = f"a cup {i % 7}"
        o.episode_id = None if i % 3 == 0 else f"e{i % 2}"
        o.metadata = {} if i % 4 else {"k": i % 2}
    appended = ObservationIndex()
    appended.append(observations[:150])
    appended.append(observations[150:])
    table = _arrow_rows(observations)
    loaded = ObservationIndex()
    loaded.load(table)
    for index in (appended, loaded):
        assert len({id(t) for t in index._texts}) == 7
        assert len({id(e) for e in index._episodes if e is not None}) == 2
        assert len({id(s) for s in index._sources}) == 2
        records = index.records([o.id for o in observations])
        assert [records[o.id] for o in observations] == observations
    values, at = module._encoded(pa.chunked_array([pa.array([None, "a", "a", None], pa.string())]))
    assert module._expanded(values, at) == [None, "a", "a", None]
    values, at = module._encoded(pa.chunked_array([pa.array(["b", "a"]), pa.array(["a", "c"])]))
    assert module._expanded(values, at) == ["b", "a", "a", "c"] and None not in values


def test_the_keyword_index_caught_up_in_slices_equals_one_built_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """keywords() catches up in slices of KEYWORD_BUILD_ROWS rows (bounded memory at 1M) and
    gives the allocators' free pages back after a large catch-up: the same postings, lengths
    and scores as an index given every text at once, also across appends between catch-ups."""
    from emem_graph.storage import observation_index as module
    from emem_graph.storage.keyword_index import KeywordIndex, Matches, bm25, terms

    released: list[int] = []
    monkeypatch.setattr(module, "KEYWORD_BUILD_ROWS", 7)
    monkeypatch.setattr(module, "KEYWORD_RELEASE_ROWS", 45)
    monkeypatch.setattr(module, "release_free_memory", lambda: released.append(1))
    rng = np.random.default_rng(5)
    observations = [_observation(i, float(i), rng) for i in range(90)]
    words = ["red cup", "blue kettle on the shelf", "two cups", "a kettle boiling", "shelf"]
    for i, o in enumerate(observations):
        o.text = f"{words[i % 5]} {words[(i * 7) % 5]}" if i % 11 else ""
    index = ObservationIndex()
    index.append(observations[:50])
    first = index.keywords()
    assert released == [1]  # 50 rows caught up: at least KEYWORD_RELEASE_ROWS (45)
    index.append(observations[50:])
    caught_up = index.keywords()
    assert first is caught_up and released == [1]  # 40 rows: fewer, nothing given back
    whole = KeywordIndex()
    whole.add(range(90), [o.text for o in observations])
    for query in ("red cup", "kettle shelf", "two boiling cups", "nothing here"):
        (by_text,) = bm25([caught_up], terms(query), by_text=[True])  # the index's one search
        rows, owner = caught_up.rows_of_texts(by_text.rows.tolist())
        order = np.argsort(rows)
        got = Matches(rows[order], by_text.scores[owner][order], by_text.coverage[owner][order])
        (want,) = bm25([whole], terms(query))
        assert got.rows.tolist() == want.rows.tolist(), query
        assert np.array_equal(got.scores, want.scores), query
        assert np.array_equal(got.coverage, want.coverage), query
    assert caught_up.docs == whole.docs and caught_up.total_length == whole.total_length


@pytest.mark.parametrize("seed", range(4))
def test_a_window_cut_inside_a_tie_group_answers_like_a_full_pass(seed: int) -> None:
    """A robot stamps many observations with one time. In time order the window's newest
    (oldest) rows are taken from its end (start) with the rest of the tie group at the cut;
    the times answered are those of the full pass, newest (oldest) first, every id once."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.integers(0, 40, size=600)).astype(float)  # ~15 rows per time
    observations = [_observation(i, 1_000.0 + t, rng) for i, t in enumerate(times)]
    ordered, shuffled = ObservationIndex(), ObservationIndex()
    ordered.append(observations)
    shuffled.append(observations[-1:])
    shuffled.append(observations[:-1])
    assert ordered._snapshot().sorted and not shuffled._snapshot().sorted
    by_id = {o.id: o.timestamp for o in observations}
    for _ in range(40):
        after = None if rng.random() < 0.3 else 1_000.0 + float(rng.integers(0, 40))
        before = None if rng.random() < 0.3 else 1_000.0 + float(rng.integers(0, 40))
        for newest_first in (True, False):
            window = dict(
                time_after=after,
                time_before=before,
                newest_first=newest_first,
                include_body_state=True,
                limit=int(rng.choice([1, 7, 16, 100])),
            )
            got = ordered.in_window(**window)  # type: ignore[arg-type]
            full = shuffled.in_window(**window)  # type: ignore[arg-type]
            assert [by_id[i] for i in got] == [by_id[i] for i in full], window
            assert len(set(got)) == len(got)
