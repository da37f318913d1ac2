"""The facade over real Kuzu + LanceDB files with the real MiniLM embedder."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
from sim_clock import SimClock

from emem_graph import (
    EmbeddingDimensionError,
    HashingEmbedder,
    InvalidInputError,
    MemoryClosedError,
    MemoryConfig,
    SchemaVersionError,
    SpatioTemporalMemory,
    StorageError,
    VectorFilter,
)
from emem_graph.storage.graph_schema import schema_version


def wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_add_returns_id_and_reads_back_every_field(make_memory):
    mem = make_memory()
    oid = mem.add(
        "a red chair by the door",
        1.5,
        -2.25,
        z=0.5,
        timestamp=1000.0,
        layer_name="camera",
        source_type="detection",
        confidence=0.8,
        metadata={"frame": "map", "n": 2},
    )
    obs = mem.store.get_observation(oid)
    assert obs is not None
    assert obs.text == "a red chair by the door"
    assert obs.coordinates.tolist() == [1.5, -2.25, 0.5]
    assert (obs.timestamp, obs.layer_name, obs.source_type) == (1000.0, "camera", "detection")
    assert obs.confidence == 0.8
    assert obs.metadata == {"frame": "map", "n": 2}
    assert obs.tier == "short_term"
    assert obs.episode_id is None


def test_timestamp_zero_is_kept_not_replaced_by_now(make_memory):
    clock = SimClock(start=500.0)
    mem = make_memory(clock=clock)
    oid = mem.add("simulation starts", 0.0, 0.0, timestamp=0.0)
    now_id = mem.add("no timestamp given", 0.0, 0.0)
    assert mem.store.get_observation(oid).timestamp == 0.0
    assert mem.store.get_observation(now_id).timestamp == 500.0


def test_batch_flushes_by_count_without_a_query(make_memory):
    clock = SimClock()
    mem = make_memory(clock=clock, flush_batch_size=5, flush_interval=1e6)
    ids = [mem.add(f"box {i}", float(i), 0.0) for i in range(4)]
    time.sleep(0.5)
    assert mem._store.get_observations(ids) == []  # below the batch size: still buffered
    ids.append(mem.add("box 4", 4.0, 0.0))
    assert wait_until(lambda: len(mem._store.get_observations(ids)) == 5)
    # Graph first, vectors second: the LanceDB rows follow the graph commit.
    assert wait_until(lambda: mem._store.vectors.existing_ids(ids) == set(ids))


def test_entity_sightings_and_observations_are_counted_apart_towards_a_batch(make_memory):
    """A flush by count comes when flush_batch_size observations wait, or flush_batch_size
    entity sightings: sightings among the observations do not cut a batch of observations
    short (a short batch cost a second write and a second model call of a few texts)."""
    clock = SimClock()
    mem = make_memory(clock=clock, flush_batch_size=4, flush_interval=1e6)
    ids = []
    for i in range(3):
        ids.append(mem.add(f"box {i}", float(i), 0.0))
        mem.add_entity(f"box {i}", 20.0 * i, 10.0)
    time.sleep(0.5)  # six items, three of each kind: no batch is full
    assert mem._store.get_observations(ids) == []
    assert mem.consolidation.resolver.staged == 3
    ids.append(mem.add("box 3", 3.0, 0.0))  # the fourth observation: one batch, all of it
    buffer = mem._ingest()
    # The flush counts itself after its write returns: waited for, not read at once.
    assert wait_until(lambda: buffer.flushes == 1 and mem.consolidation.resolver.staged == 0)
    assert len(mem._store.get_observations(ids)) == 4
    assert len(buffer) == 0 and buffer.flushes == 1  # one batch took all seven
    for i in range(4):  # sightings alone keep their own count bound
        mem.add_entity(f"crate {i}", 50.0 + 10 * i, 0.0)
    assert wait_until(lambda: buffer.flushes == 2 and mem.consolidation.resolver.staged == 0)


def test_timer_flushes_on_the_injected_clock(make_memory):
    clock = SimClock()
    mem = make_memory(clock=clock, flush_batch_size=1000, flush_interval=2.0)
    oid = mem.add("a lone observation", 0.0, 0.0)
    time.sleep(0.6)  # wall time passes, simulated time does not: no flush yet
    assert mem._store.get_observation(oid) is None
    clock.advance(2.5)
    assert wait_until(lambda: mem._store.get_observation(oid) is not None)


def test_every_query_through_store_flushes_first(make_memory):
    mem = make_memory(flush_batch_size=1000, flush_interval=1e6)
    oid = mem.add("just added", 0.0, 0.0)
    assert mem.store.get_observation(oid) is not None


def test_episodes_write_belongs_to_follows_and_subtask_edges(make_memory):
    clock = SimClock()
    mem = make_memory(clock=clock)
    first = mem.start_episode("explore kitchen")
    in_first = mem.add("fridge", 1.0, 1.0)
    clock.advance(10)
    assert mem.end_episode() == first
    second = mem.start_episode("patrol hallway")
    child = mem.start_episode("check door", parent_episode_id=second)
    in_child = mem.add("door closed", 5.0, 0.0)
    assert mem.active_episode_id == child
    clock.advance(5)
    assert mem.end_episode() == child
    assert mem.active_episode_id == second
    # A new top-level episode while one is active ends it explicitly.
    third = mem.start_episode("dock")
    assert mem.active_episode_id == third
    store = mem.store
    assert store.get_episode(second).status == "completed"
    assert [o.id for o in store.get_episode_observations(first)] == [in_first]
    assert [o.id for o in store.get_episode_observations(child)] == [in_child]
    edges = store.graph.query_text(
        "MATCH (a:Episode)-[r]->(b:Episode) RETURN label(r) AS rel, a.id AS a, b.id AS b"
    )
    pairs = {(e["rel"], e["a"], e["b"]) for e in edges}
    assert ("FOLLOWS", second, first) in pairs
    assert ("SUBTASK_OF", child, second) in pairs
    assert ("FOLLOWS", third, second) in pairs
    child_episode = store.get_episode(child)
    assert child_episode.parent_episode_id == second
    assert child_episode.end_time == 15.0
    assert mem.end_episode() == third
    assert mem.end_episode() is None


def test_reopen_after_close_keeps_everything(tmp_path: Path, minilm):
    config = MemoryConfig(db_path=str(tmp_path / "mem"))
    with SpatioTemporalMemory(config=config, embedding_provider=minilm) as mem:
        episode = mem.start_episode("patrol")
        ids = [mem.add(f"shelf number {i}", float(i), 2.0, timestamp=float(i)) for i in range(7)]
        mem.add_body_state("battery 80%", "battery", x=99.0, y=99.0)
        entity = mem.add_entity("red chair", 3.0, 4.0, entity_type="furniture")
        mem.end_episode()
    with SpatioTemporalMemory(config=config, embedding_provider=minilm) as mem:
        store = mem.store
        texts = [o.text for o in store.get_observations(ids)]
        assert texts == [f"shelf number {i}" for i in range(7)]
        assert store.get_episode(episode).status == "completed"
        assert store.get_entity(entity).name == "red chair"
        assert store.counts()["observations"] == 8
        assert store.counts()["pending_vectors"] == 0
        # Body state does not move the robot: the last perception position is restored.
        assert mem.current_position.tolist() == [6.0, 2.0, 0.0]
        hits = store.nearest(mem.embed(["shelf number 3"])[0], 1)
        assert hits[0][1].id == ids[3]


def test_selective_prefilter_still_returns_n_results(make_memory, minilm):
    mem = make_memory(flush_batch_size=500)
    rng = np.random.default_rng(7)
    texts = ["a red cup on the table", "a blue box on the floor", "an open door", "a plant"]
    # 2,000 observations spread over a 100 m square, 12 of them in a 1 m patch.
    for i in range(2000):
        mem.add(texts[i % 4], float(rng.uniform(0, 100)), float(rng.uniform(0, 100)))
    for i in range(12):
        mem.add(texts[(i + 1) % 4], 50.0 + i * 0.05, 50.0, layer_name="patch")
    query = mem.embed(["a red cup"])[0]
    store = mem.store
    hits = store.nearest(query, 10, VectorFilter(center=(50.3, 50.0), radius=0.5))
    assert len(hits) == 10
    assert all(math.dist((r.x, r.y), (50.3, 50.0)) <= 0.5 for _, r in hits)
    layer_hits = store.nearest(query, 10, VectorFilter(layers=("patch",)))
    assert len(layer_hits) == 10 and all(r.layer_name == "patch" for _, r in layer_hits)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x": float("nan")}, "x must be finite"),
        ({"y": float("inf")}, "y must be finite"),
        ({"z": float("-inf")}, "z must be finite"),
        ({"text": ""}, "text must not be empty"),
        ({"text": "   "}, "text must not be empty"),
        ({"text": 42}, "text must be a string"),
        ({"text": "x" * 1_000_000}, "characters; the limit is"),
        ({"timestamp": float("nan")}, "timestamp must be finite"),
        ({"confidence": 1.5}, "confidence must be between 0 and 1"),
        ({"metadata": {"bad": float("nan")}}, "metadata must be JSON"),
        ({"embedding": [0.1] * 7}, "embedding has 7 dimensions"),
        ({"x": "3"}, "x must be a number"),
    ],
)
def test_bad_input_raises_value_error_and_writes_nothing(make_memory, kwargs, message):
    mem = make_memory()
    args = {"text": "valid text", "x": 1.0, "y": 2.0, **kwargs}
    with pytest.raises(ValueError, match=message) as raised:
        mem.add(**args)
    assert isinstance(raised.value, InvalidInputError)
    assert mem.store.counts()["observations"] == 0
    assert mem.store.vectors.count() == 0


def test_wrong_embedding_dimension_is_a_value_error(make_memory):
    mem = make_memory()
    with pytest.raises(EmbeddingDimensionError):
        mem.add("text", 0.0, 0.0, embedding=np.ones(128))
    oid = mem.add("text with its own vector", 0.0, 0.0, embedding=np.ones(384))
    assert mem.store.get_observation(oid) is not None


def test_body_state_does_not_move_current_position_and_recent_keeps_order(make_memory):
    mem = make_memory()
    assert mem.current_position is None
    mem.add("a chair", 1.0, 2.0)
    mem.add_body_state("battery 50%", "battery", x=40.0, y=40.0)
    assert mem.current_position.tolist() == [1.0, 2.0, 0.0]
    recent = mem.get_recent()
    assert [o.text for o in recent] == ["a chair", "battery 50%"]
    assert recent[1].source_type == "interoception"
    assert [o.text for o in mem.get_recent(1)] == ["battery 50%"]


def test_closed_memory_refuses_work(make_memory):
    mem = make_memory()
    mem.close()
    mem.close()  # idempotent
    with pytest.raises(MemoryClosedError):
        mem.add("late", 0.0, 0.0)
    with pytest.raises(MemoryClosedError), mem:  # a closed memory is not entered again
        pass


def test_other_schema_version_or_dimension_is_refused(tmp_path: Path, minilm):
    path = str(tmp_path / "mem")
    with SpatioTemporalMemory(path, embedding_provider=minilm) as mem:
        mem.add("something", 0.0, 0.0)
    with pytest.raises(SchemaVersionError, match="embedding_dim=384"):
        SpatioTemporalMemory(path, embedding_provider=HashingEmbedder(128))
    with (
        SpatioTemporalMemory(path, embedding_provider=minilm) as mem,
        mem._store.graph.write() as tx,
    ):
        tx.run("set_memory_info", {"key": "schema_version", "value": "999"})
    with pytest.raises(SchemaVersionError, match="schema version 999"):
        SpatioTemporalMemory(path, embedding_provider=minilm)


def test_db_path_that_is_a_file_is_a_clear_error(tmp_path: Path, hashing):
    path = tmp_path / "memory.db"
    path.write_text("an eMEM sqlite file")
    with pytest.raises(StorageError, match="is a file"):
        SpatioTemporalMemory(str(path), embedding_provider=hashing)


def test_episode_with_unknown_parent_is_refused(make_memory):
    mem = make_memory()
    with pytest.raises(InvalidInputError, match="does not exist"):
        mem.start_episode("child", parent_episode_id="nope")
    assert mem.active_episode_id is None


VERSION_1_TABLES = {
    "Observation", "Episode", "Gist", "Entity", "MemoryInfo", "VectorSync",
    "BELONGS_TO", "FOLLOWS", "SUBTASK_OF", "SUMMARIZES", "OBSERVED_IN", "COOCCURS_WITH",
}  # fmt: skip


def test_a_version_1_memory_is_upgraded_by_adding_the_new_tables(tmp_path: Path, minilm):
    path = str(tmp_path / "mem")
    with SpatioTemporalMemory(path, embedding_provider=minilm) as mem:
        mem.add("red chair by the door", 1.0, 2.0, timestamp=10.0)
        graph = mem._store.graph
        tables = {r["name"]: r["type"] for r in graph.query_text("CALL show_tables() RETURN *")}
        newer = [t for t in tables if t not in VERSION_1_TABLES]
        with graph.write() as tx:  # turn it into a version-1 memory
            for table in sorted(newer, key=lambda t: tables[t] != "REL"):  # edges first
                tx.run_text(f"DROP TABLE {table}")
            tx.run("set_memory_info", {"key": "schema_version", "value": "1"})
    with SpatioTemporalMemory(path, embedding_provider=minilm) as mem:
        graph = mem._store.graph
        info = {r["key"]: r["value"] for r in graph.query("get_memory_info")}
        assert info["schema_version"] == str(schema_version())
        upgraded = {r["name"] for r in graph.query_text("CALL show_tables() RETURN *")}
        assert upgraded == set(tables)
        assert "red chair" in mem.semantic_search("chair")


def test_a_commit_whose_checkpoint_waits_on_a_long_read_is_a_committed_write(
    tmp_path: Path,
) -> None:
    """Kuzu raises at COMMIT when the checkpoint after it times out waiting for an open read
    transaction (a long query in another thread), though the transaction is committed: the
    write must not be reported failed (a retry would write it twice)."""
    from emem_graph.storage.graph import GraphDB

    graph = GraphDB(tmp_path / "g.kuzu")
    try:
        with graph.write() as tx:
            tx.run_text("CREATE NODE TABLE T(id INT64, PRIMARY KEY(id))")
        with graph.write() as tx:
            tx.run_text("CALL checkpoint_threshold=1")  # every commit wants a checkpoint
        reader = graph._new_connection()
        reader.execute("BEGIN TRANSACTION READ ONLY")
        reader.execute("MATCH (t:T) RETURN count(t)")
        with graph.write() as tx:  # its checkpoint times out behind the open read
            tx.run_text("CREATE (:T {id: 1})")
        reader.execute("COMMIT")
        with graph.write() as tx:
            tx.run_text("CREATE (:T {id: 2})")
        assert graph.query_text("MATCH (t:T) RETURN t.id AS id ORDER BY id") == [
            {"id": 1},
            {"id": 2},
        ]
    finally:
        graph.close()
