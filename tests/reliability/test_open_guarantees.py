"""Opening a memory: a stored value never makes it unopenable, one directory has one writer in
this process, and an explicit db_path is never silently replaced.

Coordinates: every position within validation.MAX_COORDINATE is taken at every write door and
read back exactly; every finite position beyond it is refused there with InvalidInputError,
writing nothing. A memory an older version filled with positions up to 1e308 (written here
with the bound lifted, as that version did) still opens, catches up, answers every tool and
opens again.

Double open: a second open of a directory this process holds (spelled four ways, through a
symlink, from threads at once, read-only) is refused with DatabaseInUseError, the first
instance's acknowledged writes all survive, and the directory opens again after close() or
after a construction that failed half-way.

db_path: an explicit argument wins over a config left at the default path; two explicit paths
that differ are a ConfigError naming both, and nothing is created at either.
"""

from __future__ import annotations

import inspect
import math
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph import (
    HashingEmbedder,
    InvalidInputError,
    MemoryConfig,
    SpatioTemporalMemory,
    validation,
)
from emem_graph.errors import (
    ConfigError,
    DatabaseInUseError,
    DatabaseLockedError,
    EmbeddingDimensionError,
)
from emem_graph.explore.mapping import render_map
from emem_graph.explore.readonly import ReadOnlyMemory
from emem_graph.retrieval.schemas import ALL_SCHEMAS
from emem_graph.storage import open_registry

BOUND = validation.MAX_COORDINATE
LEGACY_VALUES = (1e308, -1e308, 1e200, -1e200, 1e20, 1e10, 5e-324, 3.0)
"""Positions an older version accepted (any finite number) mixed with ordinary ones."""


def _open(
    path: Path | str, clock: list[float] | None = None, **fields: Any
) -> SpatioTemporalMemory:
    clock = clock if clock is not None else [1_000_000.0]

    def now() -> float:
        clock[0] += 1.0
        return clock[0]

    return SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(path), maintenance_interval=None, **fields),
        embedding_provider=HashingEmbedder(384),
        get_current_time=now,
    )


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpatioTemporalMemory]:
    mem = _open(tmp_path_factory.mktemp("bounded") / "mem")
    yield mem
    mem.close()


# --- coordinates -------------------------------------------------------------------------------

bounded = st.floats(min_value=-BOUND, max_value=BOUND, allow_nan=False)
beyond = st.floats(min_value=BOUND, max_value=1.7e308, exclude_min=True).flatmap(
    lambda v: st.sampled_from([v, -v])
)


def test_bounded_coordinates_are_taken_at_every_door_and_read_back_exactly(
    memory: SpatioTemporalMemory, scale, summary
) -> None:
    """add, add_body_state, add_entity and store_specific_memory take every position within
    +-MAX_COORDINATE, and the store gives back exactly the numbers given."""
    taken: dict[str, tuple[float, float, float]] = {}
    entities: dict[str, tuple[float, float, float]] = {}
    count = [0]

    @settings(
        max_examples=max(20, scale.hostile_examples // 3),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(x=bounded, y=bounded, z=bounded)
    def run(x: float, y: float, z: float) -> None:
        count[0] += 1
        taken[memory.add("a red chair", x, y, z)] = (x, y, z)
        taken[memory.add_body_state("battery 80%", "battery", x, y, z)] = (x, y, z)
        # A distinct name each time: a sighting merged into an entity moves its running
        # estimate, and only a first sighting is read back as given.
        entities[memory.add_entity(f"beacon-{uuid.uuid4().hex}", x, y, z)] = (x, y, z)
        answer = memory.dispatch_tool_call(
            "store_specific_memory", {"content": "a note", "x": x, "y": y, "z": z}
        )
        assert answer.startswith("Stored memory "), answer
        taken[answer.split()[2]] = (x, y, z)

    run()
    store = memory.store  # flushes
    for observation in store.get_observations(list(taken)):
        assert (observation.x, observation.y, observation.z) == taken[observation.id]
    assert len(store.get_observations(list(taken))) == len(taken)
    for entity_id, position in entities.items():
        entity = store.get_entity(entity_id)
        assert entity is not None and entity.observation_count == 1
        assert (entity.x, entity.y, entity.z) == position
    memory.catch_up()
    line = (
        f"coordinates ({scale.label()}): {len(taken) + len(entities)} positions within "
        f"+-{BOUND:g} m taken at 4 doors, all read back exactly"
    )
    print(line)
    summary.append(line)


def test_coordinates_beyond_the_bound_are_refused_at_every_door(
    memory: SpatioTemporalMemory, scale, summary
) -> None:
    """Every finite position beyond +-MAX_COORDINATE is refused with InvalidInputError naming
    the bound (or one Error: line from the tool), and nothing is written."""
    before = memory.store.counts()
    refused = [0]

    @settings(
        max_examples=max(20, scale.hostile_examples // 3),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(bad=beyond, axis=st.sampled_from("xyz"), ok=bounded)
    def run(bad: float, axis: str, ok: float) -> None:
        position = {"x": ok, "y": ok, "z": ok, axis: bad}
        doors = (
            lambda: memory.add("a red chair", **position),
            lambda: memory.add_body_state("battery 80%", "battery", **position),
            lambda: memory.add_entity("far thing", **position),
        )
        for door in doors:
            with pytest.raises(InvalidInputError, match="MAX_COORDINATE"):
                door()
            refused[0] += 1
        answer = memory.dispatch_tool_call(
            "store_specific_memory", {"content": "a note", **position}
        )
        # Refused by the tool's argument bounds or by add(): one Error: line naming the axis.
        assert answer.startswith("Error: ") and f"{axis}" in answer, answer
        assert "\n" not in answer
        refused[0] += 1

    run()
    assert memory.store.counts() == before
    line = (
        f"coordinates ({scale.label()}): {refused[0]} writes beyond +-{BOUND:g} m (up to "
        "1.7e308) refused at 4 doors, 0 written"
    )
    print(line)
    summary.append(line)


TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "semantic_search": {"query": "red chair"},
    "spatial_query": {"x": 3.0, "y": 1.5, "radius": 5.0},
    "temporal_query": {},
    "episode_summary": {},
    "get_current_context": {},
    "search_gists": {"query": "door"},
    "entity_query": {"name": "chair"},
    "locate": {"concept": "red chair"},
    "recall": {"query": "red chair"},
    "body_status": {},
    "store_specific_memory": {"content": "a note", "x": 1.0, "y": 1.0},
    "start_episode": {"name": "after"},
    "end_episode": {},
    "route_query": {"target": "chair", "goal": "table"},
    "directional_query": {"target": "chair", "anchor": "table", "direction": "north"},
    "navigate_to": {"concept": "red chair"},
    "describe_area": {},
    "global_search": {"query": "red chair"},
    "user_profile": {"query": "my cup"},
}


def _every_tool_answers(mem: SpatioTemporalMemory) -> int:
    """Run every tool; each must answer text, none may fail inside (an 'Error: <tool> failed:'
    line is an exception the tool did not expect)."""
    names = [d["function"]["name"] for d in mem.get_tool_definitions(include_actions=True)]
    assert set(ALL_SCHEMAS) <= set(names)
    for name in names:
        answer = mem.dispatch_tool_call(name, TOOL_ARGUMENTS.get(name, {}))
        assert isinstance(answer, str) and answer
        assert f"{name} failed" not in answer, answer
        assert not answer.startswith("Error:"), f"{name}: {answer}"
    return len(names)


def _fill_like_an_older_version(path: Path, clock: list[float]) -> int:
    """A memory holding positions up to 1e308, written with the bound lifted (what an older
    version accepted), with an episode left for consolidation on the next open."""
    lifted = validation.MAX_COORDINATE
    validation.MAX_COORDINATE = math.inf
    try:
        mem = _open(path, clock)
        try:
            for i, v in enumerate(LEGACY_VALUES):
                mem.add(f"red chair {i}", v, v / 2, 0.0, layer_name="camera")
                mem.add(f"kitchen table {i}", 1.0 + i, 2.0, layer_name="camera")
                mem.add_entity(f"chair {i}", v, -v)
                mem.add_body_state(f"battery {i}", "battery", v, v)
            mem.start_episode("patrol")
            for i, v in enumerate(LEGACY_VALUES):
                mem.add(f"door {i}", v, 1.0)
            mem.end_episode(consolidate=False)
            mem.flush()
        finally:
            mem.close()
    finally:
        validation.MAX_COORDINATE = lifted
    return 4 * len(LEGACY_VALUES)


def test_a_memory_holding_huge_stored_positions_opens_and_answers_every_tool(
    tmp_path: Path, summary
) -> None:
    """Positions up to 1e308 an older version stored: the memory opens, catches up (place map,
    area forest), answers every tool, consolidates, and opens again; the derived structures put
    such rows at the bound."""
    clock = [1_000_000.0]
    path = tmp_path / "legacy"
    _fill_like_an_older_version(path, clock)
    tools = 0
    for _ in range(2):
        mem = _open(path, clock)
        try:
            mem.catch_up()
            tools = _every_tool_answers(mem)
            clock[0] += 7200.0  # the legacy rows are past consolidation_window: HDBSCAN runs
            assert mem.consolidate_time_window() is not None
            assert mem.maintenance() >= 0
            assert mem.rebuild_places() > 0
            mem.add("a new red chair", 2.0, 2.0)
            mem.add_entity("chair 0", 2.0, 2.0)  # merges against the legacy entities
            mem.extract_entities()
            mem.catch_up()
        finally:
            mem.close()
    with ReadOnlyMemory(path) as reader:
        assert reader.info["embedding_dim"] == "384"
    render_map(path, tmp_path / "map.png", progress=False, places=True)  # drawn at the bound
    assert (tmp_path / "map.png").stat().st_size > 0
    line = (
        f"coordinates: a memory holding {len(LEGACY_VALUES)} positions up to 1e308 (older "
        f"version) opened twice, caught up, {tools} tools answered, 0 exceptions"
    )
    print(line)
    summary.append(line)


# --- one writer per directory in this process ----------------------------------------------------


def _spellings(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / name)
    return [name, f"./{name}", f"{name}/", str(tmp_path / name), "link", f"link/../{name}"]


def test_a_second_open_in_this_process_is_refused_and_no_acknowledged_write_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, summary
) -> None:
    (tmp_path / "mem").mkdir()
    spellings = _spellings(tmp_path, "mem", monkeypatch)
    held = open_registry.held_count()  # other tests' memories may be open
    first = _open("mem")
    acknowledged = [first.add(f"chair {i}", float(i), 0.0) for i in range(20)]
    first.flush()
    refused = 0
    for spelling in spellings:
        with pytest.raises(DatabaseInUseError, match="already open read-write in this process"):
            _open(spelling)
        refused += 1
        acknowledged.append(first.add(f"after {spelling}", 1.0, 1.0))
    with pytest.raises(DatabaseInUseError):
        ReadOnlyMemory("link")  # a read-only open here would lose writes too
    refused += 1
    assert issubclass(DatabaseInUseError, DatabaseLockedError)
    first.close()
    again = _open(spellings[-1])
    try:
        stored = again.store.get_observations(acknowledged)
        assert len(stored) == len(acknowledged)
    finally:
        again.close()
    assert open_registry.held_count() == held
    line = (
        f"double open: {refused} second opens in one process ({len(spellings)} spellings, "
        f"symlink, read-only) refused, {len(acknowledged)} acknowledged writes, 0 lost"
    )
    print(line)
    summary.append(line)


def test_threads_opening_one_directory_at_once_get_one_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mem").mkdir()
    spellings = _spellings(tmp_path, "mem", monkeypatch)
    barrier = threading.Barrier(len(spellings))
    opened: list[SpatioTemporalMemory] = []
    refused: list[BaseException] = []
    lock = threading.Lock()

    def race(spelling: str) -> None:
        barrier.wait()
        try:
            mem = _open(spelling)
        except DatabaseInUseError as exc:
            with lock:
                refused.append(exc)
            return
        with lock:
            opened.append(mem)

    threads = [threading.Thread(target=race, args=(s,)) for s in spellings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(opened) == 1, f"{len(opened)} writers on one directory"
        assert len(refused) == len(spellings) - 1
        opened[0].add("the one writer", 0.0, 0.0)
    finally:
        for mem in opened:
            mem.close()
    _open("mem").close()


def test_read_only_opens_share_and_keep_the_writer_out(tmp_path: Path) -> None:
    _open(tmp_path / "mem").close()
    with ReadOnlyMemory(tmp_path / "mem") as a, ReadOnlyMemory(tmp_path / "mem/") as b:
        assert a.info == b.info
        with pytest.raises(DatabaseInUseError, match="already open read-only"):
            _open(tmp_path / "mem")
    _open(tmp_path / "mem").close()


def test_a_construction_that_fails_half_way_frees_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after the stores are open (here the area capability's) closes them: the retry
    opens the directory."""
    from emem_graph import memory as facade  # the name the facade builds the capability by

    real = facade.AreaMemory

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the area capability failed to load")

    held = open_registry.held_count()
    monkeypatch.setattr(facade, "AreaMemory", failing)
    with pytest.raises(RuntimeError, match="area capability"):
        _open(tmp_path / "mem")
    assert open_registry.held_count() == held
    monkeypatch.setattr(facade, "AreaMemory", real)
    mem = _open(tmp_path / "mem")
    mem.add("works", 0.0, 0.0)
    mem.close()


# --- db_path and config --------------------------------------------------------------------------


def test_the_visible_default_db_path_is_unchanged() -> None:
    parameter = inspect.signature(SpatioTemporalMemory).parameters["db_path"]
    assert parameter.default == "memory.db"


@pytest.mark.parametrize("as_dict", [False, True])
def test_an_explicit_db_path_wins_over_a_default_config_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_dict: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    config: Any = {"flush_batch_size": 3} if as_dict else MemoryConfig(flush_batch_size=3)
    with SpatioTemporalMemory(
        str(tmp_path / "a"), config=config, embedding_provider=HashingEmbedder(384)
    ) as mem:
        assert mem.config.db_path == str(tmp_path / "a")
        assert mem.config.flush_batch_size == 3
    assert (tmp_path / "a").is_dir()
    assert not (tmp_path / "memory.db").exists()


@pytest.mark.parametrize("as_dict", [False, True])
def test_two_different_explicit_paths_are_a_config_error(tmp_path: Path, as_dict: bool) -> None:
    b = str(tmp_path / "b")
    config: Any = {"db_path": b} if as_dict else MemoryConfig(db_path=b)
    with pytest.raises(ConfigError, match=r"db_path=.*a'.*config.db_path=.*b'"):
        SpatioTemporalMemory(
            str(tmp_path / "a"), config=config, embedding_provider=HashingEmbedder(384)
        )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    with pytest.raises(ConfigError, match="two different memories"):
        SpatioTemporalMemory("memory.db", config=config, embedding_provider=HashingEmbedder(384))


def test_the_same_path_spelled_twice_and_a_config_alone_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SpatioTemporalMemory(
        "./a/",
        config=MemoryConfig(db_path=str(tmp_path / "a")),
        embedding_provider=HashingEmbedder(384),
    ) as mem:
        assert os.path.realpath(mem.config.db_path) == str(tmp_path / "a")
    with SpatioTemporalMemory(
        config=MemoryConfig(db_path="b"), embedding_provider=HashingEmbedder(384)
    ) as mem:
        assert mem.config.db_path == "b"
    with pytest.raises(ConfigError, match="db_path must be a path"):
        SpatioTemporalMemory(None, embedding_provider=HashingEmbedder(384))  # type: ignore[arg-type]


def test_the_embedding_provider_sets_the_dimension_unless_the_config_does(tmp_path: Path) -> None:
    with SpatioTemporalMemory(
        config={"db_path": str(tmp_path / "a")}, embedding_provider=HashingEmbedder(64)
    ) as mem:
        assert mem.config.embedding_dim == 64
    with pytest.raises(EmbeddingDimensionError, match="64-dimensional"):
        SpatioTemporalMemory(
            config=MemoryConfig(db_path=str(tmp_path / "b"), embedding_dim=384),
            embedding_provider=HashingEmbedder(64),
        )


def test_a_sandboxed_reader_of_a_memory_this_process_holds_is_told_so(tmp_path: Path) -> None:
    from emem_graph.explore.cypher import run_cypher

    directory = tmp_path / "held"
    memory = SpatioTemporalMemory(str(directory), config={"embedding_provider": "hashing"})
    try:
        memory.add("a red cup", 1.0, 1.0)
        memory.flush()
        with pytest.raises(DatabaseInUseError, match="in this process"):
            run_cypher(directory, "MATCH (o:Observation) RETURN count(o)")
    finally:
        memory.close()
    assert run_cypher(directory, "MATCH (o:Observation) RETURN count(o)").rows == [[1]]
