"""SpatioTemporalMemory(..., read_only=True): a real read-only open. The graph engine itself
refuses a write that gets past the facade's and the store's own refusals; every write method of
the facade is refused; every read tool answers exactly as on a read-write open of the same
memory; a read-only session changes no byte (nor time) of any file in the memory's directory;
a directory holding no memory, or a memory needing a read-write open first, is refused with one
line; several read-only processes share a memory, a writer holding it keeps them out."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sim_clock import SimClock

from emem_graph import SpatioTemporalMemory
from emem_graph.errors import (
    DatabaseLockedError,
    InvalidInputError,
    ReadOnlyMemoryError,
    RecoveryNeededError,
)
from emem_graph.storage.graph import GraphDB, GraphTransaction

START = 1_750_000_000.0
"""The memory's simulated time: observations from START on, the clock at START + 3 h."""
HOUR = 3600.0
CONFIG: dict[str, Any] = {"maintenance_interval": None}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

READ_CALLS: dict[str, list[dict[str, Any]]] = {
    "semantic_search": [
        {"query": "red cup", "n_results": 5},
        {"query": "where is the cup", "scope": "global"},
        {"query": "battery", "include_body_state": True},
    ],
    "spatial_query": [{"x": 1.0, "y": 1.0, "radius": 3.0}, {"x": 12.0, "y": 9.0}],
    "temporal_query": [{"time_after": START - 1, "order": "oldest"}, {"last_n_minutes": 600}],
    "episode_summary": [{}, {"last_n": 3}, {"task_name": "morning patrol"}],
    "get_current_context": [{"radius": 5.0}],
    "search_gists": [{"query": "patrol of the kitchen"}],
    "entity_query": [{"name": "cup"}, {"near_x": 12.0, "near_y": 9.0, "spatial_radius": 3.0}],
    "locate": [{"concept": "red cup"}, {"concept": "red cup", "at_time": START + 120}],
    "recall": [{"query": "where is the red cup"}],
    "body_status": [{}],
    "route_query": [{"target": "red cup", "goal": "bathroom sink"}],
    "directional_query": [{"target": "red cup", "anchor": "bathroom sink", "direction": "west"}],
    "navigate_to": [{"concept": "bathroom sink"}],
    "describe_area": [{}, {"concept": "kitchen"}, {"near_x": 1.0, "near_y": 1.0}],
    "global_search": [{"query": "where can I wash my hands"}],
    "user_profile": [{"query": "my favorite cup", "user": "alice"}, {"query": "coffee"}],
}
"""Calls of every read tool (a new tool must be added here: checked below)."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Path:
    """A memory with observations, body state, entities that moved, consolidated episodes with
    their gists, a profile alias, the place map and the area forest, closed cleanly."""
    directory = tmp_path_factory.mktemp("read-only") / "template"
    clock = SimClock(START)
    with SpatioTemporalMemory(
        str(directory), config=CONFIG, embedding_provider=minilm, get_current_time=clock
    ) as memory:
        memory.add_entity("kitchen table", 1.5, 1.5, timestamp=START, entity_type="furniture")
        memory.add_entity("bathroom sink", 12.5, 9.5, timestamp=START, entity_type="fixture")
        memory.start_episode("morning patrol")
        memory.add("a kitchen table with chairs", 1.5, 1.5, timestamp=START + 10)
        for i in range(5):
            when = START + 60 * i
            memory.add("a red cup on the kitchen table", 1.0 + 0.05 * i, 1.0, timestamp=when)
            memory.add_entity("red cup", 1.0 + 0.05 * i, 1.0, timestamp=when)
        clock.advance(HOUR)
        memory.end_episode(wait=True)
        memory.start_episode("evening patrol")
        memory.add("a bathroom sink with a mirror", 12.5, 9.5, timestamp=START + 2 * HOUR)
        for i in range(3):
            when = START + 2 * HOUR + 60 * i
            memory.add("a red cup in the bathroom sink", 12.0, 9.0, timestamp=when)
            memory.add_entity("red cup", 12.0, 9.0, timestamp=when)
        memory.add("the hallway is clear", 6.0, 5.0, timestamp=START + 2 * HOUR + 300)
        clock.advance(2 * HOUR)
        memory.end_episode(wait=True)
        memory.add_body_state("battery at 80 percent", "battery", timestamp=START + 2.5 * HOUR)
        memory.profile.add_object_semantics("alice", "my favorite cup", ["red cup"])
        memory.catch_up()  # the writer brings the map and the area forest up to date
    return directory


@pytest.fixture
def memory_dir(template: Path, tmp_path: Path) -> Path:
    """A copy of the template for one test."""
    copy = tmp_path / "memory"
    shutil.copytree(template, copy)
    return copy


@pytest.fixture
def open_memory(minilm: Any) -> Iterator[Callable[..., SpatioTemporalMemory]]:
    """Open a memory at START + 3 h (read-only with read_only=True); closed at teardown."""
    opened: list[SpatioTemporalMemory] = []

    def build(directory: Path, *, read_only: bool) -> SpatioTemporalMemory:
        memory = SpatioTemporalMemory(
            str(directory),
            config=CONFIG,
            embedding_provider=minilm,
            get_current_time=SimClock(START + 3 * HOUR),
            read_only=read_only,
        )
        opened.append(memory)
        return memory

    yield build
    for memory in opened:
        memory.close()


def fingerprint(directory: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and directory under ``directory``: (size, mtime in ns, content hash)."""
    prints: dict[str, tuple[int, int, str]] = {}
    for path in sorted(directory.rglob("*")):
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        prints[path.relative_to(directory).as_posix()] = (
            stat.st_size if path.is_file() else 0,
            stat.st_mtime_ns,
            digest,
        )
    return prints


def every_answer(memory: SpatioTemporalMemory) -> dict[str, str]:
    """Each read tool's answer to each of its READ_CALLS, plus the facade's read helpers."""
    answers = {
        f"{name} {arguments}": memory.dispatch_tool_call(name, arguments)
        for name, calls in READ_CALLS.items()
        for arguments in calls
    }
    answers["locate()"] = memory.locate("red cup")
    answers["current_position"] = repr(memory.current_position)
    answers["definitions"] = repr(memory.get_tool_definitions(include_actions=True))
    answers["profile"] = repr([k.alias for k in memory.profile.knowledge()])
    answers["counts"] = repr(memory.store.counts())
    return answers


def test_read_tools_answer_as_on_a_read_write_open(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    reader = open_memory(memory_dir, read_only=True)
    tools = {d["function"]["name"] for d in reader.get_tool_definitions()}
    assert tools == set(READ_CALLS), "add a call of each new read tool to READ_CALLS"
    read_only = every_answer(reader)
    reader.close()
    writer = open_memory(memory_dir, read_only=False)
    read_write = every_answer(writer)
    for key, answer in read_write.items():
        assert read_only[key] == answer, key
    # The memory holds what the calls are about (no answer equal only by being empty).
    assert read_only["locate {'concept': 'red cup'}"].startswith("Location: (12.0, 9.0")
    assert "[morning patrol] (completed)" in read_only["episode_summary {'last_n': 3}"]
    assert read_only["search_gists {'query': 'patrol of the kitchen'}"].startswith("1. ")
    assert "favorite cup" in read_only["profile"]
    assert "red cup" in read_only["user_profile {'query': 'my favorite cup', 'user': 'alice'}"]
    assert read_only["describe_area {}"].startswith("Overview:")


def test_a_read_only_session_changes_no_file(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    before = fingerprint(memory_dir)
    reader = open_memory(memory_dir, read_only=True)
    every_answer(reader)
    actions = {"store_specific_memory": {"content": "x"}, "start_episode": {"name": "x"}}
    for name in ("store_specific_memory", "start_episode", "end_episode"):
        answer = reader.dispatch_tool_call(name, actions.get(name, {}))
        assert answer.startswith("Error:") and "read-only" in answer, answer
    assert reader.flush() == 0
    reader.save()
    reader.close()
    assert fingerprint(memory_dir) == before
    # A read-write session of the same calls does change files (the check can fail).
    writer = open_memory(memory_dir, read_only=False)
    every_answer(writer)
    writer.close()
    assert fingerprint(memory_dir) != before


def test_the_graph_engine_refuses_a_write_that_bypasses_the_facade_and_the_store(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    reader = open_memory(memory_dir, read_only=True)
    graph = reader._store.graph
    before = reader.episode_summary(last_n=5)
    # The store's own named write, on a connection of the graph, past every check above it.
    transaction = GraphTransaction(graph, graph._reader())
    episode = {
        "id": "sneaked",
        "name": "sneaked in",
        "start_time": START,
        "status": "active",
        "parent_episode_id": None,
        "metadata": "{}",
    }
    with pytest.raises(ReadOnlyMemoryError, match="graph engine refused a write"):
        transaction.run("create_episode", episode)
    with pytest.raises(ReadOnlyMemoryError, match="graph engine refused a write"):
        graph.query_text("MATCH (e:Episode) SET e.name = 'renamed'")
    # And the engine's own words, with no emem_graph code between (the engine module this run
    # loaded: kuzu or ladybug, whose words are the same).
    engine = graph._engine

    with pytest.raises(RuntimeError, match="read-only database"):
        engine.Connection(graph._db).execute("MATCH (e:Entity) DELETE e")
    assert reader.episode_summary(last_n=5) == before
    # The store's refusal comes first when its check is not bypassed.
    with pytest.raises(ReadOnlyMemoryError, match="create_episode: refused"):
        reader._store.create_episode(_episode(), follows=None, parent=None)
    with pytest.raises(ReadOnlyMemoryError), graph.write():
        pass


def _episode() -> Any:
    from emem_graph.models import Episode

    return Episode(id="e1", name="x", start_time=START, status="active")


WRITES: dict[str, Callable[[SpatioTemporalMemory], object]] = {
    "add": lambda m: m.add("a note", 1.0, 1.0),
    "add_body_state": lambda m: m.add_body_state("battery at 10 percent", "battery"),
    "add_entity": lambda m: m.add_entity("green chair", 2.0, 2.0),
    "start_episode": lambda m: m.start_episode("patrol"),
    "end_episode": lambda m: m.end_episode(),
    "store_specific_memory": lambda m: m.store_specific_memory("keys in the bowl"),
    "consolidate_time_window": lambda m: m.consolidate_time_window(),
    "maintenance": lambda m: m.maintenance(),
    "extract_entities": lambda m: m.extract_entities(),
    "catch_up": lambda m: m.catch_up(),
    "rebuild_places": lambda m: m.rebuild_places(),
    "places.rebuild": lambda m: m.places.rebuild(),
    "areas.build": lambda m: m.areas.build(),
    "profile.add_object_semantics": lambda m: m.profile.add_object_semantics(
        "bob", "my mug", ["blue mug"]
    ),
    "profile.update_from_instruction": lambda m: m.profile.update_from_instruction(
        "my favourite mug is the blue mug", "bob"
    ),
    "profile.remove": lambda m: m.profile.remove("alice", "my favorite cup"),
    "store.reconcile": lambda m: m._store.reconcile(),
    "store.check_writable": lambda m: m._store.check_writable(),
}


def _flush_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "emem-flush"]


def test_every_write_is_refused_and_nothing_changes(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    before = fingerprint(memory_dir)
    flushers = set(_flush_threads())  # other tests' memories may still have theirs
    reader = open_memory(memory_dir, read_only=True)
    assert reader.read_only
    for name, write in WRITES.items():
        with pytest.raises(ReadOnlyMemoryError, match="read-only") as refused:
            write(reader)
        assert "\n" not in str(refused.value), name
    assert reader.get_recent() == []
    assert reader.active_episode_id is None
    # Nothing runs in the background that could write: no flush thread, nothing scheduled.
    assert set(_flush_threads()) <= flushers
    assert not reader.consolidation.worker._scheduled
    reader.close()
    assert fingerprint(memory_dir) == before


def test_a_directory_without_a_memory_is_refused_and_none_is_made(
    tmp_path: Path, minilm: Any
) -> None:
    for directory in (tmp_path / "typo", tmp_path):
        with pytest.raises(InvalidInputError, match="holds no emem_graph memory"):
            SpatioTemporalMemory(str(directory), embedding_provider=minilm, read_only=True)
    assert not (tmp_path / "typo").exists()
    assert list(tmp_path.iterdir()) == []


WRITER_DIES_IN_AN_EPISODE = """
import os, sys
from emem_graph import HashingEmbedder, SpatioTemporalMemory
from emem_graph.ingest.embeddings import SentenceTransformerEmbedder
memory = SpatioTemporalMemory(sys.argv[1], embedding_provider=SentenceTransformerEmbedder(
    "all-MiniLM-L6-v2"), config={"maintenance_interval": None})
memory.start_episode("interrupted patrol")
memory.add("a half-seen corridor", 3.0, 3.0)
memory.flush()
os._exit(0)
"""


def test_a_memory_needing_recovery_is_refused_until_opened_read_write_once(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    subprocess.run(
        [sys.executable, "-c", WRITER_DIES_IN_AN_EPISODE, str(memory_dir)],
        env=ENV,
        check=True,
        timeout=120,
    )
    before = fingerprint(memory_dir)
    with pytest.raises(RecoveryNeededError, match="open it read-write once") as refused:
        open_memory(memory_dir, read_only=True)
    assert "left active" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert fingerprint(memory_dir) == before
    open_memory(memory_dir, read_only=False).close()  # closes the episode, consolidates it
    reader = open_memory(memory_dir, read_only=True)
    assert "interrupted" in reader.episode_summary(task_name="interrupted patrol")


def test_a_memory_of_an_older_schema_is_refused_with_the_upgrade_to_do(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    graph = GraphDB(memory_dir / "graph.kuzu")
    with graph.write() as tx:
        tx.run("set_memory_info", {"key": "schema_version", "value": "2"})
    graph.close()
    before = fingerprint(memory_dir)
    with pytest.raises(RecoveryNeededError, match="schema version 2 and needs an upgrade"):
        open_memory(memory_dir, read_only=True)
    assert fingerprint(memory_dir) == before


def test_a_memory_with_vector_work_left_is_refused(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    # A journal entry left by a writer whose LanceDB write failed or never ran.
    graph = GraphDB(memory_dir / "graph.kuzu")
    with graph.write() as tx:
        tx.run_text("CREATE (:VectorSync {id: 'left', kind: 'observation', op: 'delete'})")
    graph.close()
    with pytest.raises(RecoveryNeededError, match="1 unfinished vector write"):
        open_memory(memory_dir, read_only=True)
    open_memory(memory_dir, read_only=False).close()  # replays it
    assert open_memory(memory_dir, read_only=True).read_only


def test_a_memory_missing_vectors_is_refused(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    import lancedb

    table = lancedb.connect(str(memory_dir / "vectors")).open_table("memory_vectors")
    table.delete("kind = 'entity'")
    with pytest.raises(RecoveryNeededError, match="vectors its nodes need"):
        open_memory(memory_dir, read_only=True)


def test_a_memory_missing_its_vector_table_is_refused(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    shutil.rmtree(memory_dir / "vectors")
    with pytest.raises(RecoveryNeededError, match="no vector table"):
        open_memory(memory_dir, read_only=True)
    assert not (memory_dir / "vectors").exists()


READER = """
import sys
from emem_graph import SpatioTemporalMemory
from emem_graph.ingest.embeddings import SentenceTransformerEmbedder
with SpatioTemporalMemory(sys.argv[1], embedding_provider=SentenceTransformerEmbedder(
        "all-MiniLM-L6-v2"), read_only=True) as memory:
    print(memory.locate("red cup").splitlines()[0])
"""

HOLDER = """
import sys
from emem_graph import HashingEmbedder, SpatioTemporalMemory
from emem_graph.ingest.embeddings import SentenceTransformerEmbedder
memory = SpatioTemporalMemory(sys.argv[1], embedding_provider=SentenceTransformerEmbedder(
    "all-MiniLM-L6-v2"), read_only=sys.argv[2] == "1")
print("open", flush=True)
sys.stdin.readline()
memory.close()
"""


def test_several_read_only_processes_share_a_memory(
    memory_dir: Path, open_memory: Callable[..., SpatioTemporalMemory]
) -> None:
    reader = open_memory(memory_dir, read_only=True)
    other = subprocess.run(
        [sys.executable, "-c", READER, str(memory_dir)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.startswith("Location: (12.0, 9.0"), other.stdout
    assert reader.locate("red cup").splitlines()[0] == other.stdout.strip()


@pytest.mark.parametrize("holder_read_only", [False, True])
def test_a_writer_keeps_readers_out_and_a_reader_keeps_writers_out(
    holder_read_only: bool, memory_dir: Path, minilm: Any
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(memory_dir), str(int(holder_read_only))],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        if holder_read_only:
            with pytest.raises(DatabaseLockedError):
                SpatioTemporalMemory(str(memory_dir), config=CONFIG, embedding_provider=minilm)
            with SpatioTemporalMemory(
                str(memory_dir), embedding_provider=minilm, read_only=True
            ) as reader:
                assert reader.locate("red cup").startswith("Location:")
        else:
            with pytest.raises(DatabaseLockedError, match="open read-write in another process"):
                SpatioTemporalMemory(str(memory_dir), embedding_provider=minilm, read_only=True)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(60) == 0
