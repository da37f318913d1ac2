"""The exact in-process search of a small memory (storage/exact.py, MemoryStore._exact_hits):
its rankings are those of the exact cosine similarity (float64 over the vectors LanceDB holds)
under every kind of prefilter, through writes, a reopen, and past the size limit, where
LanceDB takes over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sim_clock import SimClock

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.filters import VectorFilter, perception_filter
from emem_graph.storage.exact import ExactVectors

WORDS = ["cup", "plate", "plant", "chair", "door", "lamp", "book", "shoe", "bag", "box", "red"]


def _memory(path: Path, clock: SimClock, **fields: Any) -> SpatioTemporalMemory:
    config = MemoryConfig(
        db_path=str(path), maintenance_interval=None, entity_extraction=False, **fields
    )
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=clock
    )


def _fill(mem: SpatioTemporalMemory, clock: SimClock, rng: np.random.Generator, laps: int) -> None:
    for lap in range(laps):
        mem.start_episode(f"round {lap}")
        for i in range(40):
            clock.advance(2)
            text = " ".join(rng.choice(WORDS, size=3, replace=False)) + f" spot {rng.integers(500)}"
            x, y = float(rng.uniform(0, 30)), float(rng.uniform(0, 30))
            layer = "captions" if i % 3 else "detections"
            mem.add(text, x, y, layer_name=layer)
            if i % 10 == 0:
                mem.add_body_state(f"battery {90 - i}%", "battery", x, y)
        mem.add_entity(str(rng.choice(WORDS)), float(lap), 2.0, entity_type="object")
        mem.end_episode(consolidate=True, wait=True)
    mem.flush()


def _filters(mem: SpatioTemporalMemory) -> list[VectorFilter | None]:
    episode = mem.store.graph.query_text("MATCH (e:Episode) RETURN e.id AS id LIMIT 1")[0]["id"]
    return [
        None,
        perception_filter(),
        perception_filter(include_body_state=True),
        perception_filter(layer="captions"),
        perception_filter(time_after=1100.0, time_before=1300.0),
        perception_filter(area=(15.0, 15.0, 6.0)),
        perception_filter(kinds=("observation",)),
        perception_filter(kinds=("observation", "gist")),
        perception_filter(episode_id=episode),
        VectorFilter(tiers=("long_term", "short_term")),
    ]


def _exact_ranking(mem: SpatioTemporalMemory, query: np.ndarray, n: int, where: Any) -> list:
    """(id, score) of the n best rows by float64 cosine over the stored vectors."""
    table = mem.store.vectors.id_vectors(where)
    ids = table.column("id").to_pylist()
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    matrix = np.asarray(flat, dtype=np.float64).reshape(len(ids), -1)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    q = np.asarray(query, dtype=np.float64)
    scores = matrix @ (q / np.linalg.norm(q))
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:n]
    return [(ids[i], float(scores[i])) for i in order]


def _check(mem: SpatioTemporalMemory, rng: np.random.Generator) -> int:
    """Every filter, a few queries: the in-process hits are the exact ranking (rows whose
    score another row ties within 1e-6 may swap). Returns the positions compared."""
    assert mem.store.wait_for_sketch(60) and mem.store.exact_search
    compared = 0
    for where in _filters(mem):
        for _ in range(3):
            query = mem.embed([" ".join(rng.choice(WORDS, size=2, replace=False))])[0]
            mine = mem.store.vector_hits(query, 12, where)
            truth = _exact_ranking(mem, query, 20, where)
            assert len(mine) == min(12, len(truth)), where
            assert np.allclose(
                [h.score for h in mine], [s for _, s in truth[: len(mine)]], atol=1e-5
            )
            for hit, (expected, score) in zip(mine, truth, strict=False):
                if all(abs(score - s) > 1e-6 for i, s in truth if i != expected):
                    assert hit.id == expected, where
                    compared += 1
    return compared


def test_small_memory_searches_rank_as_the_exact_cosine(tmp_path: Path) -> None:
    clock = SimClock(1000.0)
    rng = np.random.default_rng(5)
    mem = _memory(tmp_path / "m", clock)
    try:
        _fill(mem, clock, rng, 6)
        assert _check(mem, rng) > 100
        text = mem.semantic_search("a red cup")
        assert text.startswith("1. ")
    finally:
        mem.close()
    reopened = _memory(tmp_path / "m", clock)
    try:  # loaded from LanceDB at open
        assert _check(reopened, rng) > 100
        assert reopened.semantic_search("a red cup") == text
        _fill(reopened, clock, rng, 1)  # and kept with the writes after it
        assert _check(reopened, rng) > 100
    finally:
        reopened.close()


def test_past_the_limit_lancedb_searches(tmp_path: Path) -> None:
    clock = SimClock(1000.0)
    rng = np.random.default_rng(6)
    mem = _memory(tmp_path / "m", clock, exact_search_max_rows=150)
    try:
        _fill(mem, clock, rng, 2)  # 80 observations and 8 body-state readings
        assert mem.store.wait_for_sketch(60) and mem.store.exact_search
        query = mem.embed(["red cup"])[0]
        small = [h.id for h in mem.store.vector_hits(query, 10, perception_filter())]
        assert small == [i for i, _ in _exact_ranking(mem, query, 10, perception_filter())]
        _fill(mem, clock, rng, 2)  # 176 rows: past the limit
        hits = mem.store.vector_hits(query, 10, perception_filter())
        assert not mem.store.exact_search
        assert len(hits) == 10 and all(h.kind in ("observation", "gist", "entity") for h in hits)
    finally:
        mem.close()
    reopened = _memory(tmp_path / "m", clock, exact_search_max_rows=150)
    try:  # too large at open: no copy made
        reopened.store.wait_for_sketch(60)
        assert not reopened.store.exact_search
    finally:
        reopened.close()


def test_exact_vectors_keep_rows_deletions_and_the_writers_vectors() -> None:
    exact = ExactVectors(4)
    exact.put(np.array([0, 2, -1]), np.array([[1, 0, 0, 0], [0, 2, 0, 0], [9, 9, 9, 9]]))
    scores = exact.scores(np.array([1.0, 1.0, 0.0, 0.0]), 4)
    assert np.allclose(scores[[0, 2]], [2**-0.5, 2**-0.5]) and np.isnan(scores[[1, 3]]).all()
    exact.clear(np.array([2]))
    exact.put(np.array([2, 0]), np.array([[1, 0, 0, 0], [0, 0, 0, 1]]), only_missing=True)
    scores = exact.scores(np.array([1.0, 0.0, 0.0, 0.0]), 3)
    assert scores[0] == 1.0 and np.isnan(scores[1:]).all()  # the load neither overwrote nor revived
    exact.put(np.array([1]), np.array([[0, 0, 0, 0]]))  # a zero vector is never held
    assert np.isnan(exact.scores(np.ones(4), 2)[1]) and len(exact) == 1
    for row in range(3000):  # growth keeps what was held
        exact.put(np.array([row + 3]), np.array([[0, 0, 1, 0]]))
    assert exact.scores(np.array([1.0, 0.0, 0.0, 0.0]), 1)[0] == 1.0 and len(exact) == 3001


def test_the_kept_scores_follow_every_write(tmp_path: Path) -> None:
    """_exact_hits keeps its last question's scores for the same question asked again
    (semantic_search asks for more results): a deeper ask ranks as a fresh one, a question
    with another filter is scored anew, and a write to the index or the copy is seen next."""
    clock = SimClock(1000.0)
    mem = _memory(tmp_path / "mem", clock)
    _fill(mem, clock, np.random.default_rng(5), laps=2)
    store = mem.store
    assert store.wait_for_sketch(60) and store.exact_search
    query = mem.embed(["red cup"])[0]
    where = perception_filter()
    first = store.vector_hits(query, 5, where)
    deeper = store.vector_hits(query, 15, where)
    store._exact_kept = None
    assert store.vector_hits(query, 15, where) == deeper
    assert [h.id for h in deeper[:5]] == [h.id for h in first]
    captions = perception_filter(layer="captions")
    fresh = store.vector_hits(query, 15, captions)
    store._exact_kept = None
    assert store.vector_hits(query, 15, captions) == fresh != deeper
    # A new observation whose vector is the question's: first from the next ask on.
    new = mem.add("the question itself", 3.0, 3.0, embedding=query)
    mem.flush()
    assert store.vector_hits(query, 5, where)[0].id == new
    # Deleted vectors (the copy changes, the index rows stay): gone from the next ask.
    gone = [h.id for h in store.vector_hits(query, 3, where) if h.kind == "observation"]
    store.vectors.delete(gone)
    assert not {h.id for h in store.vector_hits(query, 30, where)} & set(gone)


def _area_filters(rng: np.random.Generator) -> list[VectorFilter]:
    areas = [
        perception_filter(area=(float(rng.uniform(0, 30)), float(rng.uniform(0, 30)), r))
        for r in (3.0, 6.0, 12.0)
        for _ in range(3)
    ]
    return [*areas, perception_filter(area=(15.0, 15.0, 8.0), layer="captions")]


def test_a_small_memory_loads_its_sketch_only_once_needed(tmp_path: Path) -> None:
    """A memory of at most exact_search_max_rows observations loads its exact copy at open
    and leaves its sketch for later: an area search is answered alike before the exact copy
    has loaded (LanceDB, scored as that copy scores) and after (never by the sketch's int8
    scores), the sketch fills when a caller waits for it, and growing past the limit loads
    it unasked."""
    clock = SimClock(1000.0)
    rng = np.random.default_rng(12)
    mem = _memory(tmp_path / "m", clock, exact_search_max_rows=400)
    try:  # a new memory: both copies filled as it is written, nothing left for later
        assert mem.store.wait_for_sketch(60) and not mem.store._sketch_deferred
        _fill(mem, clock, rng, 4)  # 160 observations and 16 body-state readings
        assert len(mem.store.index.sketch) == len(mem.store.index)  # type: ignore[arg-type]
    finally:
        mem.close()
    mem = _memory(tmp_path / "m", clock, exact_search_max_rows=400)
    try:
        store = mem.store
        assert store._exact_loaded.wait(60) and store.exact_search
        sketch = store.index.sketch
        assert sketch is not None and len(sketch) == 0 and not store._sketch_loaded.is_set()
        compared = 0
        for where in _area_filters(rng):
            for words in (["red", "cup"], ["door", "lamp"], ["plant", "box"]):
                query = mem.embed([" ".join(words)])[0]
                loaded = store.vector_hits(query, 10, where)
                store._exact_loaded.clear()  # as right after the open
                try:
                    loading = store.vector_hits(query, 10, where)
                finally:
                    store._exact_loaded.set()
                assert loading == loaded, where
                compared += len(loaded)
        assert compared > 100
        assert len(sketch) == 0  # nothing above needed it
        assert store.wait_for_sketch(60) and len(sketch) == len(store.index)
    finally:
        mem.close()
    mem = _memory(tmp_path / "m", clock, exact_search_max_rows=400)
    try:
        store = mem.store
        assert store._exact_loaded.wait(60) and len(store.index.sketch) == 0  # type: ignore[arg-type]
        _fill(mem, clock, rng, 7)  # past 400 rows: the exact copy goes, the sketch loads
        assert not store.exact_search and store._sketch_loaded.wait(60)
        assert len(store.index.sketch) == len(store.index)  # type: ignore[arg-type]
    finally:
        mem.close()
