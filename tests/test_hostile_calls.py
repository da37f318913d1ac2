"""Calls the doors must refuse or survive: a clock that gives no time, a
tool call naming ``self``, a count or a text list of the wrong type, a name with spaces, a
close whose last write fails as a whole, embedding functions that give no vectors and a path
with a NUL. Real Kuzu and LanceDB files, the hashing embedder."""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from emem_graph import HashingEmbedder, InvalidInputError, SpatioTemporalMemory, StorageError
from emem_graph.compat.emem_api import CallableEmbeddingProvider
from emem_graph.errors import (
    BackendUnavailableError,
    ConfigError,
    EmbeddingDimensionError,
    MemoryClosedError,
)
from emem_graph.ingest.unwritten import UNWRITTEN_FILE

T0 = 1_700_000_000.0


class Clock:
    """A clock the test sets: any value, a real time or not."""

    def __init__(self, now: object = T0) -> None:
        self.now = now

    def __call__(self) -> object:
        return self.now


class FlakyEmbedder(HashingEmbedder):
    """The hashing embedder, failing while ``down`` (an Ollama server that went away)."""

    def __init__(self) -> None:
        super().__init__(384)
        self.down = False

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.down:
            raise ConnectionError("the embedding server is unreachable")
        return super().embed(texts)


class SlowEmbedder(HashingEmbedder):
    """The hashing embedder at 20 ms a batch: a close has a last write that takes a while."""

    def __init__(self) -> None:
        super().__init__(384)

    def embed(self, texts: list[str]) -> np.ndarray:
        time.sleep(0.02)
        return super().embed(texts)


def open_memory(path: Path, clock: Clock | None = None, embedder=None) -> SpatioTemporalMemory:
    return SpatioTemporalMemory(
        str(path),
        embedding_provider=embedder or HashingEmbedder(384),
        get_current_time=clock,
    )


@pytest.mark.parametrize(
    "reading",
    [math.nan, math.inf, 1.7e18, -1e12, None, "1700000000", True],
    ids=["nan", "inf", "nanoseconds", "before-year-2", "none", "string", "bool"],
)
def test_a_clock_reading_that_is_no_time_fails_the_call_and_writes_nothing(tmp_path, reading):
    clock = Clock()
    with open_memory(tmp_path / "m", clock) as memory:
        kept = memory.add("a red cup on the table", 1.0, 2.0)
        clock.now = reading
        with pytest.raises(InvalidInputError, match=r"get_current_time\(\)"):
            memory.add("a blue chair by the door", 1.0, 2.0)
        with pytest.raises(InvalidInputError, match=r"get_current_time\(\)"):
            memory.start_episode("patrol")
        # A time given with the row does not read the clock.
        given = memory.add("a green plant", 3.0, 4.0, timestamp=T0 + 5)
        clock.now = T0 + 60
    with open_memory(tmp_path / "m", Clock(T0 + 120)) as memory:
        stored = {o.id: o for o in memory.get_recent(10)} | {
            o.id: o for o in memory.store.get_observations([kept, given])
        }
        assert sorted(stored) == sorted([kept, given])
        assert all(math.isfinite(o.timestamp) for o in stored.values())
        for tool, arguments in [
            ("temporal_query", {"last_n_minutes": 60}),
            ("semantic_search", {"query": "red cup"}),
            ("spatial_query", {"x": 1.0, "y": 2.0}),
            ("locate", {"concept": "red cup"}),
        ]:
            assert not memory.dispatch_tool_call(tool, arguments).startswith("Error")


def test_a_memory_opened_with_a_clock_giving_nanoseconds_is_refused_in_one_line(tmp_path):
    with pytest.raises(InvalidInputError, match=r"got 1\.7e\+18"):
        open_memory(tmp_path / "m", Clock(1.7e18))
    with open_memory(tmp_path / "m", Clock()) as memory:  # nothing of it holds the directory
        memory.add("a red cup", 0.0, 0.0)
    with pytest.raises(InvalidInputError, match="must be a function"):
        SpatioTemporalMemory(str(tmp_path / "n"), get_current_time=T0)  # type: ignore[arg-type]


def test_a_tool_call_with_a_null_self_or_unknown_null_argument_is_answered(tmp_path):
    with open_memory(tmp_path / "m") as memory:
        memory.add("a red cup on the table", 1.0, 2.0)
        for tool, arguments in [
            ("semantic_search", {"query": "red cup", "self": None}),
            ("temporal_query", {"self": None, "last_n_minutes": None}),
            ("body_status", {"self": None}),
        ]:
            answer = memory.dispatch_tool_call(tool, arguments)
            assert not answer.startswith("Error"), answer
        assert "red cup" in memory.dispatch_tool_call(
            "semantic_search", json.dumps({"query": "red cup", "self": None})
        )


@pytest.mark.parametrize("n", ["5", 2.5, True, -1, None.__class__])
def test_get_recent_refuses_a_count_that_is_no_whole_number(tmp_path, n):
    with open_memory(tmp_path / "m") as memory:
        memory.add("a red cup", 0.0, 0.0)
        with pytest.raises(InvalidInputError, match="n must be a whole number"):
            memory.get_recent(n)
        assert [o.text for o in memory.get_recent(np.int64(1))] == ["a red cup"]


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (None, "list of strings"),
        ("a red cup", "list of strings"),
        (b"a red cup", "list of strings"),
        ([5], r"texts\[0\] must be a string"),
        (["ok", None], r"texts\[1\] must be a string"),
        (["\ud800"], "lone surrogate"),
    ],
)
def test_embed_refuses_what_is_not_a_list_of_texts(tmp_path, texts, message):
    with open_memory(tmp_path / "m") as memory:
        with pytest.raises(InvalidInputError, match=message):
            memory.embed(texts)
        assert memory.embed(("a", "b")).shape == (2, 384)


def test_entity_query_reads_a_name_as_it_is_stored_without_outer_spaces(tmp_path):
    with open_memory(tmp_path / "m") as memory:
        memory.add_entity(" office chair ", 1.0, 1.0)
        memory.flush()
        for asked in ("office chair", "office chair ", "  office chair\t"):
            assert "office chair" in memory.entity_query(name=asked), asked
        assert memory.entity_query(name="   ") == memory.entity_query()


def test_rows_a_failed_close_could_not_write_are_kept_and_written_at_the_next_open(tmp_path):
    embedder = FlakyEmbedder()
    memory = open_memory(tmp_path / "m", Clock(), embedder)
    written = memory.add("the keys are in the blue bowl", 1.0, 1.0)
    memory.flush()
    given = np.linspace(-1.0, 1.0, 384, dtype=np.float32)
    waiting = [
        memory.add("the charger is behind the sofa", 2.0, 3.0, metadata={"room": "living"}),
        memory.add("a note with its own vector", 4.0, 5.0, embedding=given),
    ]
    embedder.down = True
    with pytest.raises(
        StorageError, match=f"2 observations could not be written.*{UNWRITTEN_FILE}"
    ):
        memory.close()
    assert (tmp_path / "m" / UNWRITTEN_FILE).is_file()

    # Still down at the next open: the memory opens, the rows stay in the file.
    with open_memory(tmp_path / "m", Clock(), embedder) as again:
        assert again.store.get_observations(waiting) == []
    assert (tmp_path / "m" / UNWRITTEN_FILE).is_file()

    embedder.down = False
    with open_memory(tmp_path / "m", Clock(), embedder) as again:
        stored = {o.id: o for o in again.store.get_observations([written, *waiting])}
        assert sorted(stored) == sorted([written, *waiting])
        assert stored[waiting[0]].metadata == {"room": "living"}
        assert "charger" in again.semantic_search("charger behind the sofa")
        vector = again.store.vectors.vectors_of([waiting[1]])[waiting[1]]
        np.testing.assert_allclose(vector, given / np.linalg.norm(given), atol=1e-3)
    assert not (tmp_path / "m" / UNWRITTEN_FILE).exists()
    with open_memory(tmp_path / "m", Clock(), embedder) as again:  # written once, not twice
        assert len(again.store.get_observations([written, *waiting])) == 3
        assert again.rejected_observations == 0


@pytest.mark.parametrize(
    ("embed_fn", "dim", "error"),
    [
        (lambda texts: [[1.0] * 4 for _ in texts], 0, InvalidInputError),
        (lambda texts: [[1.0] * 4 for _ in texts], -3, InvalidInputError),
        (lambda texts: ["not a vector"], None, BackendUnavailableError),
        (lambda texts: None, None, BackendUnavailableError),
        (5, None, InvalidInputError),
    ],
    ids=["dim-0", "dim-negative", "strings", "none", "not-callable"],
)
def test_an_embedding_function_that_gives_no_vectors_is_refused_in_one_line(embed_fn, dim, error):
    with pytest.raises(error):
        CallableEmbeddingProvider(embed_fn, dim)


def test_an_embedding_function_answering_text_fails_its_batch_as_an_embedding_error():
    provider = CallableEmbeddingProvider(lambda texts: [["a"] * 4 for _ in texts], 4)
    with pytest.raises(EmbeddingDimensionError, match="not rows of numbers"):
        provider.embed(["a red cup"])


def test_a_db_path_holding_a_nul_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="NUL"):
        SpatioTemporalMemory(f"{tmp_path}/a\x00b", embedding_provider=HashingEmbedder(384))


@pytest.mark.parametrize(
    ("check", "value", "shown"),
    [
        ("coordinate", 1e9 + 1, "got 1000000001.0"),
        ("coordinate", -1000000000.5, "got -1000000000.5"),
        ("timestamp", 253_402_300_800.25, "got 253402300800.25"),
    ],
)
def test_a_value_just_past_a_bound_is_shown_as_given_not_rounded_to_the_bound(check, value, shown):
    # "x must be within +-1e+09 m ..., got 1e+09": %g rounded 1e9+1 to the bound itself.
    from emem_graph import validation

    with pytest.raises(InvalidInputError) as caught:
        getattr(validation, check)("x", value)
    assert shown in str(caught.value)
    assert float(str(caught.value).split("got ")[1].split(";")[0]) == value


def test_a_coordinate_past_the_bound_names_it_at_the_memory_door(tmp_path):
    memory = SpatioTemporalMemory(str(tmp_path / "m"), embedding_provider=HashingEmbedder(384))
    with memory, pytest.raises(InvalidInputError, match=r"got 1000000001\.0;"):
        memory.add("too far", 1e9 + 1, 0.0)


def test_a_close_racing_another_returns_only_once_the_memory_is_closed(tmp_path):
    """Two threads close one memory: the second close() used to return at once, while the
    first was still writing, and a reopen then found the memory held."""
    memory = open_memory(tmp_path / "m", Clock(), SlowEmbedder())
    ids = [memory.add(f"note {i}", float(i), 0.0) for i in range(50)]
    first = threading.Thread(target=memory.close)
    first.start()
    while not memory._closed:  # the first close has begun
        time.sleep(0.001)
    memory.close()
    assert not first.is_alive()  # the second close returned after the first ended
    with open_memory(tmp_path / "m", Clock()) as again:
        assert len(again.store.get_observations(ids)) == 50
    first.join()


def test_a_forked_child_is_refused_the_memory_its_parent_opened(tmp_path):
    memory = open_memory(tmp_path / "m", Clock())
    memory.add("parent row", 0.0, 0.0)
    memory.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: must not hang in the engine nor write the parent's files
        os.close(read)
        try:
            memory.add("child row", 1.0, 1.0)
            answer = b"accepted"
        except MemoryClosedError as exc:
            answer = b"refused: " + str(exc).encode()
        except BaseException as exc:  # reported to the parent
            answer = f"raw {type(exc).__name__}".encode()
        memory.close()  # a no-op in the child
        os.write(write, answer[:300])
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if done == (0, 0):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    answer = os.read(read, 400).decode()
    assert answer.startswith("refused: this memory was opened in process"), answer
    memory.add("parent goes on", 2.0, 2.0)
    memory.close()
    with open_memory(tmp_path / "m", Clock()) as again:
        texts = again.store.graph.query_text("MATCH (o:Observation) RETURN o.text AS t", {})
    assert sorted(row["t"] for row in texts) == ["parent goes on", "parent row"]


def test_episodes_ended_at_one_clock_time_follow_one_another(tmp_path):
    """A paused simulation clock: every episode starts and ends at one time; each still
    FOLLOWS the one before it (they all followed the first)."""
    with open_memory(tmp_path / "m", Clock(T0)) as memory:
        ids = []
        for i in range(5):
            ids.append(memory.start_episode(f"lap {i}"))
            memory.add(f"lap {i}", float(i), 0.0)
            memory.end_episode(consolidate=False)
        rows = memory.store.graph.query_text(
            "MATCH (a:Episode)-[:FOLLOWS]->(b:Episode) RETURN a.id AS a, b.id AS b", {}
        )
    follows = {row["a"]: row["b"] for row in rows}
    assert follows == {ids[i]: ids[i - 1] for i in range(1, 5)}


@pytest.mark.parametrize("read", ["get_observation", "get_episode", "get_gist"])
def test_an_id_that_is_no_valid_text_is_bad_input_not_a_storage_failure(tmp_path, read):
    # A lone surrogate reached the engine's binding, which refused to cast it: StorageError
    # "graph query failed: Unable to cast Python instance of type <class 'str'> ...".
    with SpatioTemporalMemory(str(tmp_path / "m"), embedding_provider=HashingEmbedder(384)) as m:
        m.add("a cup", 0.0, 0.0)
        with pytest.raises(InvalidInputError, match="not valid Unicode") as refused:
            getattr(m.store, read)("\ud800")
        assert not isinstance(refused.value, StorageError)
        assert len(str(refused.value).splitlines()) == 1
        assert m.store.counts()["observations"] == 1
