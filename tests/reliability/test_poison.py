"""No input poisons another (ARCHITECTURE principle 11).

A value accepted at any write door (the facade's add, add_body_state, add_entity,
start_episode; store_specific_memory through dispatch_tool_call; the user profile; the ROS
ingest pipeline that bag replay and the live node feed) is written, read back exactly, and read
back again after a reopen; anything else is refused at the door with InvalidInputError. A row
that passes the door and still fails in the batch write is set aside (rejected.jsonl, a
warning, ``rejected_observations``) while every other row lands, and a failure of the storage
as a whole is never mistaken for bad rows.

Hostile values: lone surrogates ('\\ud800', which UTF-8 cannot encode: they used to pass the
door and fail in every later batch write, retried forever), NUL and control characters,
non-characters, str subclasses, metadata with non-string keys, deep nesting, huge integers,
NaN/inf, bytes, and timestamps at and past the dates a tool can print.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import ros_messages as rm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph import InvalidInputError, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import BackendUnavailableError, StorageError
from emem_graph.explore.stats import memory_stats
from emem_graph.ingest.rejected import REJECTED_FILE
from emem_graph.validation import MAX_TIMESTAMP, MIN_TIMESTAMP
from ros_bridge.config import BridgeConfig
from ros_bridge.converters import convert
from ros_bridge.pipeline import IngestPipeline


class Label(str):
    """A str subclass (what some message libraries hand over): stored as a plain str."""


SURROGATES = ("\ud800", "\udfff", "cup \udc80 on the table", "\ud83d", "ok\udbff")
ODD = ("\x00", "a\x00b", "\U0010ffff", "\ufffe\uffff", "\u2028", "\x7f", "e\u0301", "\u200b")
hostile_text = st.one_of(
    st.text(min_size=1, max_size=30),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=30),  # surrogates too
    st.sampled_from(SURROGATES + ODD),
    st.builds(
        lambda a, b, c: a + b + c,
        st.text(max_size=10),
        st.sampled_from(SURROGATES + ODD),
        st.text(max_size=10),
    ),
    st.builds(Label, st.text(min_size=1, max_size=20)),
)
hostile_keys = st.one_of(
    hostile_text, st.integers(), st.none(), st.tuples(st.integers()), st.booleans()
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
    st.just(b"bytes"),
)
metadata_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(hostile_keys, inner, max_size=3)
    ),
    max_leaves=8,
)


def nested(depth: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(depth - 1):
        value = [value]
    return {"deep": value}


hostile_metadata = st.one_of(
    st.none(),
    st.dictionaries(hostile_keys, metadata_values, max_size=4),
    st.sampled_from([nested(32), nested(33), nested(5000), {"n": 2**63}, {"n": 10**400}]),
)
hostile_times = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(
        [0.0, -1.0, MIN_TIMESTAMP, MAX_TIMESTAMP, MIN_TIMESTAMP - 1, MAX_TIMESTAMP + 1, 1e300]
    ),
    st.floats(min_value=0, max_value=2e9),
)


def json_form(metadata: Any) -> dict[str, Any]:
    """What accepted metadata reads back as (tuples become lists; None becomes {})."""
    return {} if metadata is None else json.loads(json.dumps(metadata))


def build(path: Path, minilm: Any, **fields: Any) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(path), maintenance_interval=None, **fields)
    return SpatioTemporalMemory(config=config, embedding_provider=minilm)


SCENE = {"name": "scene", "topic": "/scene", "type": "std_msgs/msg/String"}


def ros_pipeline(memory: SpatioTemporalMemory) -> IngestPipeline:
    config = BridgeConfig.build(
        {"memory_dir": "unused", "layers": [SCENE], "trigger": {"rate_hz": 1.0}}
    )
    return IngestPipeline(memory, config, clock=lambda: 1_000.0)


class Doors:
    """Every write door of one memory, with what each accepted value must read back as."""

    def __init__(self, memory: SpatioTemporalMemory) -> None:
        self.memory = memory
        self.pipeline = ros_pipeline(memory)
        self.observations: dict[str, dict[str, Any]] = {}
        self.entities: dict[str, dict[str, Any]] = {}
        self.episodes: dict[str, dict[str, Any]] = {}
        self.knowledge: dict[str, tuple[str, str]] = {}
        self.ros_texts: list[str] = []
        self.tried = 0
        self.refused = 0
        self.k = 0

    def call(self, door: str, values: dict[str, Any]) -> None:
        """One call through ``door``; refused (InvalidInputError) or remembered."""
        self.tried += 1
        self.k += 1
        try:
            getattr(self, door)(values)
        except InvalidInputError:
            self.refused += 1

    def add(self, v: dict[str, Any]) -> None:
        oid = self.memory.add(
            v["text"],
            1.0,
            2.0,
            timestamp=v["time"],
            layer_name=v["name"],
            metadata=v["metadata"],
        )
        self.observations[oid] = {
            "text": v["text"],
            "layer_name": v["name"].strip(),
            "metadata": json_form(v["metadata"]),
            **({} if v["time"] is None else {"timestamp": float(v["time"])}),
        }

    def add_body_state(self, v: dict[str, Any]) -> None:
        oid = self.memory.add_body_state(
            v["text"], v["name"], timestamp=v["time"], metadata=v["metadata"]
        )
        self.observations[oid] = {
            "text": v["text"],
            "layer_name": v["name"].strip(),
            "source_type": "interoception",
            "metadata": json_form(v["metadata"]),
        }

    def add_entity(self, v: dict[str, Any]) -> None:
        # Far apart, so that no two sightings merge into one entity.
        entity_id = self.memory.add_entity(
            v["text"],
            1000.0 * self.k,
            0.0,
            entity_type=v["name"],
            timestamp=v["time"],
            metadata=v["metadata"],
        )
        self.entities[entity_id] = {
            "name": " ".join(v["text"].split()),
            "entity_type": v["name"].strip(),
            "metadata": json_form(v["metadata"]),
        }

    def start_episode(self, v: dict[str, Any]) -> None:
        episode_id = self.memory.start_episode(v["text"], metadata=v["metadata"])
        self.memory.end_episode(consolidate=False)
        self.episodes[episode_id] = {
            "name": v["text"].strip(),
            "metadata": json_form(v["metadata"]),
        }

    def store_specific_memory(self, v: dict[str, Any]) -> None:
        answer = self.memory.dispatch_tool_call(
            "store_specific_memory", {"content": v["text"], "layer_name": v["name"]}
        )
        if answer.startswith("Error:"):
            raise InvalidInputError(answer)
        found = re.match(r"Stored memory ([0-9a-f]{32}) ", answer)
        assert found, answer
        self.observations[found.group(1)] = {
            "text": v["text"],
            "layer_name": v["name"].strip(),
            "source_type": "agent_note",
        }

    def profile(self, v: dict[str, Any]) -> None:
        user = f"{v['name']} {self.k}"
        update = self.memory.profile.add_object_semantics(user, v["text"], [v["other"]])
        self.knowledge[update.knowledge_id] = (user, " ".join(v["text"].split()))

    def ros(self, v: dict[str, Any]) -> None:
        message = rm.string(v["text"])
        stats = self.pipeline.stats
        before = (stats.stored, stats.dropped_error, stats.dropped_empty)
        self.pipeline.on_message("/scene", message, receive_time=1_000.0)
        self.pipeline.tick(1_000.0)
        if stats.stored > before[0]:
            expected = convert(self.pipeline.config.layers[0], message)
            assert expected is not None
            self.ros_texts.append(expected)
        else:
            assert (stats.dropped_error, stats.dropped_empty) != before[1:]
            raise InvalidInputError("the pipeline dropped it at the memory's door")

    def check(self, memory: SpatioTemporalMemory) -> int:
        """Every accepted value is in ``memory`` exactly; returns how many were checked."""
        store = memory.store  # flushes
        found = {o.id: o for o in store.get_observations(list(self.observations))}
        assert set(found) == set(self.observations), "an accepted observation is missing"
        for oid, expected in self.observations.items():
            got = found[oid].model_dump()
            assert {k: got[k] for k in expected} == expected, oid
        for entity_id, expected in self.entities.items():
            entity = store.get_entity(entity_id)
            assert entity is not None, "an accepted entity is missing"
            got = entity.model_dump()
            assert {k: got[k] for k in expected} == expected
        for episode_id, expected in self.episodes.items():
            episode = store.get_episode(episode_id)
            assert episode is not None, "an accepted episode is missing"
            got = episode.model_dump()
            assert {k: got[k] for k in expected} == expected
        for knowledge_id, (user, alias) in self.knowledge.items():
            nodes = {n.id: n for n in memory.profile.knowledge(user)}
            assert nodes[knowledge_id].alias == alias
        ros = store.observations_in_time(None, None, layer="scene", limit=10_000)
        assert sorted(o.text for o in ros) == sorted(self.ros_texts)
        # Every tool can print what was accepted (timestamps as dates, text as it is).
        calls = [
            ("temporal_query", {"n_results": 50}),
            ("temporal_query", {"n_results": 50, "order": "oldest"}),
            ("get_current_context", {}),
            ("body_status", {}),
            ("entity_query", {"n_results": 50}),
        ]
        for tool, arguments in calls:
            answer = memory.dispatch_tool_call(tool, arguments)
            assert not answer.startswith("Error:"), (tool, answer)
            answer.encode("utf-8")
        return (
            len(self.observations)
            + len(self.entities)
            + len(self.episodes)
            + len(self.knowledge)
            + len(self.ros_texts)
        )


DOORS = [
    "add",
    "add_body_state",
    "add_entity",
    "start_episode",
    "store_specific_memory",
    "profile",
    "ros",
]


def test_every_write_door_refuses_or_stores_exactly_and_reopens(
    tmp_path: Path, minilm: Any, scale: Any, summary: list[str]
) -> None:
    """(a) Each call refuses with InvalidInputError at the door, or its values are read back
    exactly after a flush and after close and reopen; nothing accepted is set aside."""
    path = tmp_path / "mem"
    memory = build(path, minilm)
    doors = Doors(memory)

    @settings(
        max_examples=scale.hostile_examples * 2,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        door=st.sampled_from(DOORS),
        text=hostile_text,
        name=hostile_text,
        other=hostile_text,
        metadata=hostile_metadata,
        time=hostile_times,
    )
    def run(door: str, text: str, name: str, other: str, metadata: Any, time: Any) -> None:
        values = {"text": text, "name": name, "other": other, "metadata": metadata, "time": time}
        doors.call(door, values)

    run()
    stored = doors.check(memory)
    memory.close()
    assert memory.rejected_observations == 0
    reopened = build(path, minilm)
    try:
        assert doors.check(reopened) == stored
        assert reopened.rejected_observations == 0
    finally:
        reopened.close()
    assert stored > 0 and doors.refused > 0
    line = (
        f"poison, doors ({scale.label()}): {doors.tried} calls over {len(DOORS)} write doors, "
        f"{doors.refused} refused with InvalidInputError, {stored} stored and read back "
        "exactly after flush and after reopen, 0 set aside, 0 lost"
    )
    print(line)
    summary.append(line)


POISONS: list[Callable[[SpatioTemporalMemory], Any]] = [
    lambda m: m.add("a cup \ud800 on the table", 1.0, 1.0),
    lambda m: m.add("ok", 1.0, 1.0, layer_name="cam\udfff"),
    lambda m: m.add("ok", 1.0, 1.0, metadata={"label": "\ud800"}),
    lambda m: m.add("ok", 1.0, 1.0, metadata={1: "one", "1": "also one"}),
    lambda m: m.add("ok", 1.0, 1.0, metadata=nested(5000)),
    lambda m: m.add("ok", 1.0, 1.0, timestamp=1e300),
    lambda m: m.add_body_state("battery \ud800", "battery"),
    lambda m: m.add_entity("red \ud800 chair", 1.0, 1.0),
    lambda m: m.add_entity("chair", 1.0, 1.0, entity_type="furniture\udc80"),
    lambda m: m.add_entity("chair", 1.0, 1.0, timestamp=-1e300),
    lambda m: m.start_episode("patrol \ud800"),
    lambda m: m.profile.add_object_semantics("anna", "my \ud800 cup", ["cup"]),
    lambda m: m.profile.add_object_semantics("an\x00na", "my cup", ["cup"]),
]


def test_hostile_values_between_good_ones_lose_no_good_one(
    tmp_path: Path, minilm: Any, summary: list[str]
) -> None:
    """(b) Good adds interleaved with every value class that used to pass the door and fail
    in the batch write; small batches flushed by the background thread too. Every good
    observation and entity sighting is there after close and reopen; close() does not raise."""
    path = tmp_path / "mem"
    memory = build(path, minilm, flush_batch_size=7)
    good: dict[str, str] = {}
    entities: list[str] = []
    refused = 0
    for round_ in range(6):
        for k, poison in enumerate(POISONS):
            text = f"good observation {round_}-{k}"
            good[memory.add(text, float(k), float(round_))] = text
            entities.append(memory.add_entity(f"box {round_}-{k}", 50.0 * k, 50.0 * round_))
            with pytest.raises(InvalidInputError):
                poison(memory)
            refused += 1
    memory.close()  # does not raise
    reopened = build(path, minilm)
    try:
        found = {o.id: o.text for o in reopened.store.get_observations(list(good))}
        assert found == good
        assert all(reopened.store.get_entity(e) is not None for e in entities)
        assert reopened.rejected_observations == 0
    finally:
        reopened.close()
    line = (
        f"poison, interleaved: {len(good)} good observations and {len(entities)} entity "
        f"sightings between {refused} hostile calls ({len(POISONS)} kinds): {refused} refused, "
        "0 good ones lost after reopen, close() clean"
    )
    print(line)
    summary.append(line)


def test_a_row_the_store_cannot_write_is_set_aside_and_the_others_land(
    tmp_path: Path,
    minilm: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    summary: list[str],
) -> None:
    """(c) A row that passes the door (its check switched off for one call) and fails in the
    write: set aside in rejected.jsonl with its error, logged, counted; every other row of the
    batch and every later one lands; close() does not raise; the memory reopens."""
    from emem_graph import validation

    path = tmp_path / "mem"
    memory = build(path, minilm, flush_batch_size=10_000)
    good = {memory.add(f"row {i} before", float(i), 0.0): f"row {i} before" for i in range(20)}
    text_check = validation.text
    monkeypatch.setattr(validation, "text", lambda name, value, limit: value)
    bad = memory.add("a cup \ud800 the door let through", 0.0, 0.0)
    monkeypatch.setattr(validation, "text", text_check)
    good.update({memory.add(f"row {i} after", float(i), 1.0): f"row {i} after" for i in range(20)})
    with caplog.at_level(logging.WARNING):
        written = memory.flush()
    assert written == 40
    assert memory.rejected_observations == 1
    assert bad in caplog.text and "set aside" in caplog.text
    lines = (path / REJECTED_FILE).read_text(encoding="ascii").splitlines()
    assert len(lines) == 1
    kept = json.loads(lines[0])
    assert kept["kind"] == "observation"
    assert kept["row"]["id"] == bad
    assert kept["row"]["text"] == "a cup \ud800 the door let through"
    assert kept["error"]  # the write's own error, e.g. the tokenizer refusing the text
    assert bad not in {o.id for o in memory.get_recent()}
    # Alone in its batch, at close: set aside too (the storage probe succeeds), close is clean.
    monkeypatch.setattr(validation, "text", lambda name, value, limit: value)
    last_bad = memory.add("\udfff alone", 0.0, 0.0)
    monkeypatch.setattr(validation, "text", text_check)
    memory.close()
    reopened = build(path, minilm)
    try:
        store = reopened.store
        assert {o.id: o.text for o in store.get_observations(list(good))} == good
        assert store.get_observations([bad, last_bad]) == []
        assert reopened.rejected_observations == 2
        later = reopened.add("written after the set-aside rows", 3.0, 3.0)
        assert reopened.store.get_observation(later) is not None
    finally:
        reopened.close()
    stats = memory_stats(path)
    assert stats.rejected_observations == 2
    assert stats.nodes["Observation"] == len(good) + 1
    line = (
        "poison, unwritable rows forced past the door: 2 set aside in rejected.jsonl "
        f"(logged, counted in stats), {len(good) + 1} other rows written, 0 lost, reopen clean"
    )
    print(line)
    summary.append(line)


def test_a_storage_failure_is_not_taken_for_bad_rows(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch, summary: list[str]
) -> None:
    """(d) The graph refusing every write, the embedder down, the set-aside file unwritable:
    flush raises, nothing is set aside or dropped, and everything lands once it works."""
    path = tmp_path / "mem"
    memory = build(path, minilm, flush_batch_size=10_000)
    graph = memory._store.graph
    texts: dict[str, str] = {}

    def add_some(label: str) -> None:
        for i in range(8):
            texts[memory.add(f"{label} {i}", float(i), 0.0)] = f"{label} {i}"

    def disk_full() -> Any:
        raise StorageError("graph commit failed: IO exception: No space left on device")

    add_some("graph down")
    monkeypatch.setattr(graph, "write", disk_full)
    with pytest.raises(StorageError, match="No space left"):
        memory.flush()
    assert len(memory._buffer) == 8
    monkeypatch.undo()

    add_some("embedder down")
    embed = memory.embedder.embed

    def unreachable(texts: list[str]) -> Any:
        raise BackendUnavailableError("the embedding server is unreachable")

    monkeypatch.setattr(memory.embedder, "embed", unreachable)
    memory._embedding_cache.clear()
    with pytest.raises(BackendUnavailableError):
        memory.flush()
    assert len(memory._buffer) == 16
    monkeypatch.setattr(memory.embedder, "embed", embed)

    # A row the store cannot write, and nowhere to set it aside: it stays queued.
    (path / REJECTED_FILE).mkdir()
    from emem_graph import validation

    text_check = validation.text
    monkeypatch.setattr(validation, "text", lambda name, value, limit: value)
    stuck = memory.add("\ud800 cannot be kept", 0.0, 0.0)
    monkeypatch.setattr(validation, "text", text_check)
    with pytest.raises(StorageError, match="cannot be set aside"):
        memory.flush()
    assert memory.rejected_observations == 0
    assert len(memory._buffer) == 1  # the 16 good rows were written around it
    assert {o.id for o in memory._store.get_observations(list(texts))} == set(texts)
    (path / REJECTED_FILE).rmdir()
    assert memory.flush() == 0  # now it can be set aside
    assert memory.rejected_observations == 1
    memory.close()
    reopened = build(path, minilm)
    try:
        found = {o.id: o.text for o in reopened.store.get_observations([*texts, stuck])}
        assert found == texts
    finally:
        reopened.close()
    line = (
        "poison, storage failures (graph refusing writes, embedder down, set-aside file "
        f"unwritable): 0 rows set aside or dropped while failing, {len(texts)} written after"
    )
    print(line)
    summary.append(line)


class UnstorableLLM:
    """An LLM client whose answers hold what no store can write (a lone surrogate, as a JSON
    '\\ud800' escape decodes to, and NUL)."""

    def summarize(self, texts: list[str]) -> str:
        return f"{texts[0]} \ud800"

    def synthesize(self, texts_by_layer: dict[str, list[str]]) -> str:
        return "across layers \x00"

    def extract_entities(self, texts: list[str]) -> list[dict[str, Any]]:
        return [{"name": "red chair\udfff", "index": 0}, {"name": "cup", "index": 0}]


def test_an_llm_answer_that_cannot_be_stored_falls_back_and_poisons_nothing(
    tmp_path: Path, minilm: Any, summary: list[str]
) -> None:
    """An LLM answer with a lone surrogate used to fail the episode's consolidation and stay
    staged in front of every later entity write (flush and close raised). It is a malformed
    answer now: the built-in fallback writes the gist, and every later write lands."""
    path = tmp_path / "mem"
    config = MemoryConfig(db_path=str(path), maintenance_interval=None, entity_extraction=True)
    memory = SpatioTemporalMemory(
        config=config, embedding_provider=minilm, llm_client=UnstorableLLM()
    )
    memory.start_episode("patrol")
    ids = [memory.add(f"a red chair by door {i}", float(i), 0.0) for i in range(4)]
    episode_id = memory.end_episode(wait=True)
    memory.extract_entities()
    lamp = memory.add_entity("lamp", 5.0, 5.0)
    memory.flush()
    assert memory.consolidation.stats()["llm_failures"] >= 2
    memory.close()  # does not raise
    reopened = build(path, minilm)
    try:
        episode = reopened.store.get_episode(str(episode_id))
        assert episode is not None and episode.status == "completed" and episode.gist
        assert len(reopened.store.get_observations(ids)) == 4
        assert reopened.store.get_entity(lamp) is not None
    finally:
        reopened.close()
    line = (
        "poison, LLM answers holding a lone surrogate or NUL: taken as malformed, fallback "
        "gist written, later entity writes land, close() clean"
    )
    print(line)
    summary.append(line)


def test_setting_a_row_aside_on_the_flush_thread_does_not_block_end_episode(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flush thread sets a row aside while end_episode() (which holds the memory's state
    lock and flushes) runs: neither waits for the other."""
    import threading

    from emem_graph import validation

    memory = build(tmp_path / "mem", minilm, flush_batch_size=3, flush_interval=0.05)
    text_check = validation.text
    for round_ in range(5):
        memory.start_episode(f"lap {round_}")
        memory.add(f"lap {round_} start", 0.0, float(round_))
        monkeypatch.setattr(validation, "text", lambda name, value, limit: value)
        memory.add(f"lap {round_} \ud800", 0.0, float(round_))
        monkeypatch.setattr(validation, "text", text_check)
        memory.add(f"lap {round_} end", 1.0, float(round_))  # a full batch: the thread flushes
        ended = threading.Thread(target=memory.end_episode, daemon=True)  # flushes, locked
        ended.start()
        ended.join(timeout=30)
        # Deadlocked, the memory could not close either: left to the daemon threads.
        assert not ended.is_alive(), "end_episode and the flush thread deadlocked"
    memory.flush()
    assert memory.rejected_observations == 5
    assert all("\ud800" not in o.text for o in memory.get_recent())
    memory.close()


def test_a_bag_with_bad_messages_replays_every_good_one(
    tmp_path: Path, minilm: Any, summary: list[str]
) -> None:
    """Bag replay (ROS 2 sqlite3, written with rosbags): a message whose string is not UTF-8
    is counted undecodable, one with a NUL is refused at the memory's door (dropped_error),
    and every good message before and after them is stored and there after a reopen."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    from ros_bridge.bag import replay_bag

    store = get_typestore(Stores.ROS2_HUMBLE)
    kind = "std_msgs/msg/String"
    bag = tmp_path / "bag"
    good: list[str] = []
    bad_utf8 = bad_nul = 0
    with Writer(bag, version=9) as writer:
        connection = writer.add_connection("/scene", kind, typestore=store)
        for i in range(60):
            t_ns = round((1_000.0 + i) * 1e9)
            if i % 10 == 3:  # a string whose bytes are not UTF-8
                raw = bytearray(store.serialize_cdr(store.types[kind](data="ab cd"), kind))
                raw[raw.index(b"ab cd") + 1] = 0xFF
                writer.write(connection, t_ns, bytes(raw))
                bad_utf8 += 1
                continue
            text = f"scene {i} \x00 hidden" if i % 10 == 7 else f"a kitchen scene number {i}"
            bad_nul += "\x00" in text
            if "\x00" not in text:
                good.append(text)
            writer.write(connection, t_ns, store.serialize_cdr(store.types[kind](data=text), kind))
    config = BridgeConfig.build(
        {
            "memory_dir": str(tmp_path / "mem"),
            "layers": [SCENE],
            "trigger": {"topic": "/scene"},
        }
    )
    memory = build(tmp_path / "mem", minilm)
    replayed = replay_bag(bag, config, memory, progress=False)
    memory.close()
    assert replayed.undecodable == bad_utf8
    assert replayed.stats.dropped_error == bad_nul
    reopened = build(tmp_path / "mem", minilm)
    try:
        found = reopened.store.observations_in_time(None, None, layer="scene", limit=1000)
        assert sorted(o.text for o in found) == sorted(good)
        assert reopened.rejected_observations == 0
    finally:
        reopened.close()
    line = (
        f"poison, bag replay: {len(good) + bad_utf8 + bad_nul} messages, {bad_utf8} not UTF-8 "
        f"(undecodable), {bad_nul} with NUL (refused at the door), {len(good)} good ones all "
        "stored after reopen"
    )
    print(line)
    summary.append(line)


def test_an_entity_the_graph_cannot_write_is_set_aside_and_the_others_land(
    tmp_path: Path, minilm: Any, monkeypatch: pytest.MonkeyPatch, summary: list[str]
) -> None:
    """An entity change the graph refuses (the store's write made to fail for that one
    entity) used to stay staged in front of every later entity write, flush and close
    raising; now the others are written, it is set aside in rejected.jsonl, and later
    sightings still merge and land."""
    path = tmp_path / "mem"
    memory = build(path, minilm)
    store = memory._store
    apply = store.apply

    def refusing(change: Any) -> None:
        for step in change.steps:
            # One statement per row (each), or a batch of rows as one Arrow table.
            batch = (step.params or {}).get("rows")
            if isinstance(batch, pa.Table):
                batch = batch.to_pylist()
            rows = list(step.each or ()) + list(batch or ())
            if any(row.get("name") == "cursed chair" for row in rows):
                raise StorageError("graph query create_entity failed: refused for the test")
        apply(change)

    monkeypatch.setattr(store, "apply", refusing)
    good = [memory.add_entity(f"box {i}", 10.0 * i, 0.0) for i in range(6)]
    bad = memory.add_entity("cursed chair", 100.0, 100.0)
    good += [memory.add_entity(f"lamp {i}", 10.0 * i, 50.0) for i in range(6)]
    memory.flush()  # does not raise
    assert memory.rejected_observations == 1
    kept = json.loads((path / REJECTED_FILE).read_text(encoding="ascii"))
    assert (kept["kind"], kept["row"]["id"]) == ("entity", bad)
    again = memory.add_entity("box 0", 0.5, 0.0)  # merges with the stored box 0
    assert again == good[0]
    memory.close()
    reopened = build(path, minilm)
    try:
        assert all(reopened.store.get_entity(e) is not None for e in good)
        assert reopened.store.get_entity(bad) is None
        assert reopened.store.get_entity(good[0]).observation_count == 2  # type: ignore[union-attr]
    finally:
        reopened.close()
    line = (
        f"poison, an entity the graph refuses: set aside, {len(good)} other entities written, "
        "later sightings merge, reopen clean"
    )
    print(line)
    summary.append(line)
