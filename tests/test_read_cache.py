"""Reads kept between writes (storage/graph_reads.py GraphReads, by GraphDB.generation) and the
gist-only search path: episode_summary and search_gists answer from what they kept until the
graph's next write, and what they answer after a write is what a fresh memory answers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sim_clock import SimClock

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import StorageError
from emem_graph.filters import VectorFilter
from emem_graph.storage.keyword_index import KeywordIndex, bm25


def _memory(path: Path, clock: SimClock) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(path), maintenance_interval=None, entity_extraction=False)
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=clock
    )


@pytest.fixture
def clock() -> SimClock:
    """The tests' clock, started at 1000 s (conftest's starts at 0)."""
    return SimClock(1000.0)


@pytest.fixture
def mem(tmp_path: Path, clock: SimClock) -> Iterator[SpatioTemporalMemory]:
    """A hashing-embedder memory at tmp_path/m on ``clock``, closed at teardown."""
    memory = _memory(tmp_path / "m", clock)
    yield memory
    memory.close()


def _round(
    mem: SpatioTemporalMemory, clock: SimClock, name: str, text: str, x: float, y: float
) -> None:
    """Start episode ``name`` and add ``text`` four times, 5 s and 0.1 m apart from (x, y)."""
    mem.start_episode(name)
    for i in range(4):
        clock.advance(5)
        mem.add(text, x + 0.1 * i, y)


def _count(answer: str) -> int:
    found = re.search(r"\((\d+) observations from", answer)
    assert found is not None, answer
    return int(found.group(1))


class _Counting:
    """Counts the named graph reads of a store (wraps GraphDB.query)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, graph: Any) -> None:
        self.calls: list[str] = []
        original = graph.query

        def query(name: str, params: dict[str, Any] | None = None) -> Any:
            self.calls.append(name)
            return original(name, params)

        monkeypatch.setattr(graph, "query", query)


def test_episode_summary_is_kept_until_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: SimClock, mem: SpatioTemporalMemory
) -> None:
    mem.start_episode("kitchen round")
    for i in range(3):
        clock.advance(5)
        mem.add(f"a red cup on the table {i}", 1.0 + i, 2.0)
    first = mem.episode_summary()
    assert _count(first) == 3 and "(active)" in first
    reads = _Counting(monkeypatch, mem.store.graph)
    assert mem.episode_summary() == first
    assert reads.calls == []  # no graph round trip between two writes
    clock.advance(5)
    mem.add("a blue plate by the sink", 4.0, 2.0)
    second = mem.episode_summary()  # the tool flushes: a write, so read again
    assert _count(second) == 4
    assert "episode_span" in reads.calls and "recent_episodes" in reads.calls
    mem.end_episode(consolidate=True, wait=True)
    ended = mem.episode_summary()
    assert "(completed)" in ended and _count(ended) == 4
    # A caller changing what it got changes nothing kept.
    from emem_graph.retrieval import lookups

    [episode] = lookups.recent_episodes(mem.store, name=None, limit=1)
    episode.name = "changed"
    episode.metadata["x"] = 1
    assert mem.episode_summary() == ended
    mem.close()
    clock.advance(1)
    reopened = _memory(tmp_path / "m", clock)
    try:
        assert reopened.episode_summary() == ended
    finally:
        reopened.close()


def test_search_gists_finds_a_gist_written_after_a_search(
    clock: SimClock, mem: SpatioTemporalMemory
) -> None:
    _round(mem, clock, "kitchen round", "a red cup on the kitchen table", 1.0, 2.0)
    mem.end_episode(consolidate=True, wait=True)
    before = mem.search_gists("plants by the window")
    assert "kitchen" in before or "cup" in before
    _round(mem, clock, "garden round", "green plants by the window", 30.0, 20.0)
    mem.end_episode(consolidate=True, wait=True)
    after = mem.search_gists("plants by the window")
    assert after != before
    assert after.split("\n")[0].lower().count("plant") >= 1, after
    gists = mem.store.graph.query_text("MATCH (g:Gist) RETURN g.id AS id, g.text AS text")
    assert len(gists) == 2
    for gist in gists:  # every gist fetched by id as the graph holds it
        [found] = mem.store.get_gists([gist["id"], "no-such-id"])
        assert found.text == gist["text"]


def test_gist_only_searches_rank_as_the_exact_lancedb_search(
    clock: SimClock, mem: SpatioTemporalMemory
) -> None:
    """vector_hits over gists (and entities) alone is answered in process: the same ranking
    as LanceDB's exact search of those rows (ties within 1e-4 aside)."""
    rng = np.random.default_rng(3)
    words = ["cup", "plate", "plant", "chair", "door", "lamp", "book", "shoe", "bag", "box"]
    for lap in range(12):
        mem.start_episode(f"round {lap}")
        for _ in range(6):
            clock.advance(3)
            picked = rng.choice(words, size=3, replace=False)
            mem.add(" ".join(picked), float(rng.uniform(0, 40)), float(rng.uniform(0, 40)))
        mem.add_entity(str(rng.choice(words)), 1.0 + lap, 2.0, entity_type="object")
        mem.end_episode(consolidate=True, wait=True)
    store = mem.store
    compared = 0
    for kinds in (("gist",), ("gist", "entity"), ("entity",)):
        for q in range(6):
            vector = mem.embed([f"a {words[q]} and a {words[q + 3]}"])[0]
            where = VectorFilter(kinds=kinds, time_after=1000.0 + 20 * q)
            mine = store.vector_hits(vector, 5, where)
            # Beyond the fifth too: a row tied with the fifth may take its place.
            exact = store.vectors.search(vector, 10, where)
            scores = [h.score for h in exact]
            assert np.allclose([h.score for h in mine], scores[: len(mine)], atol=1e-4)
            for hit, other in zip(mine, exact, strict=False):
                if all(abs(hit.score - o.score) > 1e-4 for o in exact if o.id != hit.id):
                    assert hit.id == other.id, (kinds, q)
                    compared += 1
            assert all(h.kind in kinds for h in mine)
    assert compared > 20


def test_bm25_unscored_index_counts_in_statistics_only() -> None:
    """An index left unscored still weighs in the document frequencies and the average
    length: the other index's scores are those of scoring both."""
    observed, others = KeywordIndex(), KeywordIndex()
    observed.add(range(5), ["red cup", "red cup on the table", "blue plate", "cup", "red"])
    observed.remove([3])
    others.add(range(3), ["a red cup gist", "plates and cups", "kitchen"])
    for query in (["red", "cup"], ["plate"], ["kitchen", "red"], ["absent"]):
        both = bm25([observed, others], query)
        only = bm25([observed, others], query, (False, True))
        assert only[0].rows.shape[0] == 0
        assert np.array_equal(only[1].rows, both[1].rows)
        assert np.array_equal(only[1].scores, both[1].scores)
        assert np.array_equal(only[1].coverage, both[1].coverage)


def test_graph_generation_moves_with_every_write_even_a_failed_one(
    mem: SpatioTemporalMemory,
) -> None:
    graph = mem.store.graph
    start = graph.generation
    mem.store.graph.query("recent_episodes", {"name": None, "limit": 1})
    assert graph.generation == start  # reads leave it
    with graph.write() as tx:
        tx.run("set_memory_info", {"key": "probe", "value": "1"})
    assert graph.generation == start + 1
    with pytest.raises(StorageError), graph.write() as tx:
        tx.run_text("MATCH (n:NoSuchTable) RETURN n")
    assert graph.generation == start + 2


def test_entity_stays_are_read_without_a_graph_statement(
    monkeypatch: pytest.MonkeyPatch, clock: SimClock, mem: SpatioTemporalMemory
) -> None:
    """The stays come from the store's in-process entity index, which follows every
    committed change: no graph read per answer, before or after a write, and a move written
    is in the next answer."""
    from emem_graph.consolidation import reads

    mem.add_entity("red cup", 1.0, 2.0, entity_type="object")
    first = mem.entity_query(name="cup")
    assert "red cup" in first
    calls = _Counting(monkeypatch, mem.store.graph)
    stay_reads = {"entity_positions", "all_positions"}
    assert mem.entity_query(name="cup") == first
    clock.advance(600)
    mem.add_entity("red cup", 9.0, 7.0, entity_type="object")  # a write: a move
    second = mem.entity_query(name="cup")
    assert "moved: now at (9.0, 7.0)" in second
    assert not stay_reads & set(calls.calls)
    [entity] = mem.store.entities.find(name="red cup", limit=5)
    stays = mem.tools._stays.positions_of([entity.id])
    assert stays == reads.positions_of(mem.store, [entity.id])
    stays[entity.id].clear()  # the caller's copy: nothing kept changes
    assert mem.entity_query(name="cup") == second


def test_current_context_reads_the_area_gists_again_after_a_write(
    monkeypatch: pytest.MonkeyPatch, clock: SimClock, mem: SpatioTemporalMemory
) -> None:
    _round(mem, clock, "kitchen round", "a red cup on the kitchen table", 1.0, 2.0)
    first = mem.get_current_context()
    assert "Area summaries" not in first
    calls = _Counting(monkeypatch, mem.store.graph)
    assert mem.get_current_context() == first
    assert "gists_around" not in calls.calls
    mem.end_episode(consolidate=True, wait=True)  # writes a gist around the robot
    after = mem.get_current_context()
    assert "gists_around" in calls.calls
    assert "Area summaries" in after
