"""What a large memory's open gives back (a 1M memory stays under 1.5 GB): the graph engine's
buffer pool after the open's read of every observation (GraphDB.drop_page_cache: the database
closed and opened again), and the allocators' free pages (storage/release.py). A memory opened
that way must answer and write exactly as one opened without it, read-write and read-only, on
the engine under test."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sim_clock import SimClock

from emem_graph import SpatioTemporalMemory
from emem_graph.config import MemoryConfig
from emem_graph.errors import StorageError
from emem_graph.ingest.embeddings import HashingEmbedder
from emem_graph.storage import release, store
from emem_graph.storage.graph import GraphDB

START = 1_750_000_000.0
CONFIG: dict[str, Any] = {"maintenance_interval": None}
THINGS = ("red cup", "blue kettle", "green chair", "silver toaster", "yellow umbrella")
CALLS: dict[str, dict[str, Any]] = {
    "semantic_search": {"query": "a red cup on the table", "n_results": 8},
    "spatial_query": {"x": 4.0, "y": 2.0, "radius": 3.0},
    "temporal_query": {"last_n_minutes": 30},
    "get_current_context": {},
    "locate": {"concept": "kettle"},
    "recall": {"query": "umbrella"},
}


def _open(path: Path, clock: SimClock, **kwargs: Any) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(path), **CONFIG)
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=clock, **kwargs
    )


def _answers(memory: SpatioTemporalMemory) -> dict[str, str]:
    return {name: getattr(memory, name)(**args) for name, args in CALLS.items()}


@pytest.fixture
def written(tmp_path: Path) -> Iterator[tuple[Path, SimClock]]:
    clock = SimClock(START)
    path = tmp_path / "mem"
    with _open(path, clock) as memory:
        for i in range(300):
            clock.now = START + 5.0 * i
            thing = THINGS[i % len(THINGS)]
            memory.add(f"{thing} seen near shelf {i % 7}", x=float(i % 9), y=float(i % 4))
        memory.flush()
        memory.extract_entities()  # nothing left for a later open's background work
    clock.now = START + 1600.0
    with _open(path, clock):
        pass  # a first open settles what an open does once (the map's catch-up, ...)
    yield path, clock


@pytest.fixture
def counted_drops(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every open drops the page cache (the row threshold at 1); the graphs it was done on."""
    dropped: list[Path] = []
    real = GraphDB.drop_page_cache

    def counting(self: GraphDB) -> None:
        dropped.append(self.path)
        real(self)

    monkeypatch.setattr(store, "DROP_PAGE_CACHE_ROWS", 1)
    monkeypatch.setattr(GraphDB, "drop_page_cache", counting)
    return dropped


def test_an_open_that_drops_the_page_cache_answers_as_one_that_does_not(
    written: tuple[Path, SimClock], counted_drops: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, clock = written
    with _open(path, clock) as memory:
        dropped = _answers(memory)
    assert len(counted_drops) == 1
    monkeypatch.setattr(store, "DROP_PAGE_CACHE_ROWS", 10**9)
    with _open(path, clock) as memory:
        kept = _answers(memory)
    assert len(counted_drops) == 1
    assert dropped == kept
    assert "red cup" in dropped["semantic_search"]


def test_writes_after_the_drop_are_kept_and_read_back_after_a_reopen(
    written: tuple[Path, SimClock], counted_drops: list[Path]
) -> None:
    path, clock = written
    with _open(path, clock) as memory:
        assert counted_drops == [path / store.GRAPH_FILE]
        memory.add("a purple teapot on the windowsill", x=20.0, y=20.0)
        memory.flush()
        assert "purple teapot" in memory.spatial_query(x=20.0, y=20.0, radius=1.0)
        # A reader on another thread opens its own connection on the database opened again.
        seen: list[str] = []
        reader = threading.Thread(
            target=lambda: seen.append(memory.store.graph.query_text(
                "MATCH (o:Observation) RETURN count(o) AS n"
            )[0]["n"])
        )  # fmt: skip
        reader.start()
        reader.join()
        assert seen == [301]
    with _open(path, clock) as memory:
        assert len(memory.store.index) == 301
        assert "purple teapot" in memory.spatial_query(x=20.0, y=20.0, radius=1.0)


def test_a_read_only_open_drops_the_page_cache_too(
    written: tuple[Path, SimClock], counted_drops: list[Path]
) -> None:
    from test_read_only_memory import fingerprint

    path, clock = written
    before = fingerprint(path)
    with _open(path, clock, read_only=True) as memory:
        assert counted_drops == [path / store.GRAPH_FILE]
        assert "kettle" in memory.locate(concept="kettle")
        assert memory.store.graph.read_only
    assert fingerprint(path) == before  # closing and reopening read-only wrote nothing


def test_a_closed_graph_refuses_to_drop_its_cache(tmp_path: Path) -> None:
    graph = GraphDB(tmp_path / "graph.kuzu")
    graph.close()
    with pytest.raises(StorageError, match="closed"):
        graph.drop_page_cache()


def test_free_memory_is_given_back_through_the_c_library_on_linux() -> None:
    import sys

    if sys.platform.startswith("linux"):
        assert release._malloc_trim() is not None
    release.release_free_memory()  # and twice: nothing is held that could go wrong
    release.release_free_memory()


_OPENER = """
import sys, time
from emem_graph import SpatioTemporalMemory
from emem_graph.config import MemoryConfig
from emem_graph.ingest.embeddings import HashingEmbedder
from emem_graph.storage import store
store.DROP_PAGE_CACHE_ROWS = 1
print("LOADED", flush=True)
sys.stdin.readline()
while True:  # opens and closes until killed: every kill lands somewhere in an open or close
    memory = SpatioTemporalMemory(
        config=MemoryConfig(db_path=sys.argv[1], maintenance_interval=None),
        embedding_provider=HashingEmbedder(384),
    )
    memory.close()
"""


@pytest.mark.slow
def test_a_kill_during_opens_that_drop_the_page_cache_loses_nothing(
    written: tuple[Path, SimClock],
) -> None:
    """SIGKILL at random moments of a loop of opens (each closing and reopening the graph
    database after its index read) and closes: the memory opens after every kill with every
    observation, and a search finds them."""
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    path, clock = written
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for kill in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "LOADED"
            child.stdin.write("go\n")
            child.stdin.flush()
            time.sleep(0.2 + 1.5 * rng.random())
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
        with _open(path, clock) as memory:
            context = f"seed={seed}, kill {kill}"
            assert len(memory.store.index) == 300, context
            assert "red cup" in memory.semantic_search(query="red cup", n_results=3), context
