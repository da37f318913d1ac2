"""The vector sketch: int8 copies of the observation vectors that answer semantic searches in
large areas in process, with the vector store's copy of the gist and entity rows.

Real LanceDB files and the real MiniLM model; the searches are checked against LanceDB's own
exact search over the same rows.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emem_graph.filters import VectorFilter
from emem_graph.models import INTEROCEPTION
from emem_graph.storage.sketch import BLOCK, VectorSketch
from emem_graph.storage.vectors import VectorRow, VectorStore

DIM = 384


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_sketch_scores_are_cosines_within_the_int8_rounding() -> None:
    rng = np.random.default_rng(0)
    vectors = _unit(rng, 40) * rng.uniform(0.2, 3.0, (40, 1)).astype(np.float32)
    vectors[7] = 0.0  # no direction: never scored
    rows = np.r_[np.arange(20), BLOCK - 10 + np.arange(20)]  # across a block boundary
    sketch = VectorSketch(DIM)
    sketch.put(rows, vectors)
    query = rng.standard_normal(DIM).astype(np.float32)
    scores = sketch.scores(rows, query)
    norms = np.linalg.norm(vectors, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        exact = vectors @ query / (norms * np.linalg.norm(query))
    # Each number is off by at most half a step (largest / 127): the bound of the dot product.
    bound = math.sqrt(DIM) * np.abs(vectors).max(axis=1) / 254 / np.maximum(norms, 1e-12)
    held = np.arange(40) != 7
    assert np.all(np.abs(scores[held] - exact[held]) <= bound[held] + 1e-6)
    assert float(np.abs(scores[held] - exact[held]).mean()) < 2e-3
    assert np.isnan(scores[7])
    assert np.isnan(sketch.scores(np.array([25, 3 * BLOCK]), query)).all()  # never put
    assert len(sketch) == 39


def test_cleared_rows_stay_cleared_for_the_loader_and_newer_vectors_win() -> None:
    rng = np.random.default_rng(1)
    first, second = _unit(rng, 10), _unit(rng, 10)
    query = _unit(rng, 1)[0]
    sketch = VectorSketch(DIM)
    rows = np.arange(10)
    sketch.put(rows, first)
    before = sketch.scores(rows, query)
    sketch.clear(rows[:3])
    sketch.put(rows, second, only_missing=True)  # the loader: neither deleted nor held rows
    after = sketch.scores(rows, query)
    assert np.isnan(after[:3]).all()
    assert np.array_equal(after[3:], before[3:])
    sketch.put(rows[:3], second[:3])  # the writer: a vector written again
    assert np.allclose(sketch.scores(rows[:3], query), second[:3] @ query, atol=0.02)
    sketch.put(np.array([-1]), first[:1])  # a row the index does not hold: skipped
    assert len(sketch) == 10


def _row(i: int, vector: np.ndarray, rng: np.random.Generator) -> VectorRow:
    kind = ["observation", "gist", "entity"][i % 3]
    start = float(rng.uniform(0, 100))
    return VectorRow(
        id=f"{kind[0]}{i}",
        kind=kind,  # type: ignore[arg-type]
        vector=vector,
        x=float(rng.integers(0, 20)),  # whole metres: rows on circle edges
        y=float(rng.integers(0, 20)),
        z=0.0,
        t=start,
        t_end=start if kind != "gist" else start + float(rng.uniform(0, 30)),
        layer=str(rng.choice(["captions", "detections", "battery"])),
        source_type=None if kind == "gist" else str(rng.choice(["camera", INTEROCEPTION])),
        episode_id=None if i % 4 == 0 else f"ep{i % 3}",
        tier=str(rng.choice(["short_term", "long_term", "archived"])),
        text=f"row {i}",
    )


def _random_filter(rng: np.random.Generator) -> VectorFilter:
    fields: dict[str, Any] = {}
    pick = lambda p: rng.random() < p  # noqa: E731
    if pick(0.3):
        fields["kinds"] = tuple(rng.choice(["observation", "gist", "entity"], 2, replace=False))
    if pick(0.3):
        fields["layers"] = ("captions",) if pick(0.5) else ()
    if pick(0.2):
        fields["source_types"] = ("camera",)
    if pick(0.5):
        fields["exclude_source_types"] = (INTEROCEPTION,)
    if pick(0.2):
        fields["tiers"] = ("long_term", "short_term")
    if pick(0.5):
        fields["exclude_tiers"] = ("archived",)
    if pick(0.2):
        fields["episode_id"] = "ep1"
    if pick(0.4):
        fields["time_after"] = float(rng.uniform(0, 100))
    if pick(0.4):
        fields["time_before"] = float(rng.uniform(0, 130))
    if pick(0.6):
        fields["center"] = (float(rng.integers(0, 20)), float(rng.integers(0, 20)))
        fields["radius"] = float(rng.choice([0.0, 1.0, 3.0, 5.0, 7.5]))
    elif pick(0.3):
        fields["box"] = (2.0, 9.0, 4.0, 15.0)
    return VectorFilter(**fields)


def test_the_row_filter_and_the_copy_of_gists_and_entities_answer_as_lancedb(
    tmp_path: Path,
) -> None:
    """VectorFilter.admits_row admits exactly the rows LanceDB's SQL admits (NULL source
    types, spans, circle edges), and search_others ranks the gist and entity rows as
    LanceDB's exact search does, through writes, tier updates, deletes and a reopen."""
    rng = np.random.default_rng(2)
    vectors = _unit(rng, 600)
    rows = [_row(i, vectors[i], rng) for i in range(600)]
    store = VectorStore(tmp_path / "v", DIM)
    store.add(rows[:400])
    store.upsert(rows[400:])
    store.set_tier([r.id for r in rows[:90]], "long_term")
    store.delete([r.id for r in rows[90:120]])
    expected = {r.id: r for r in rows[120:]}
    expected.update({r.id: replace(r, tier="long_term") for r in rows[:90]})
    reopened = VectorStore(tmp_path / "v", DIM)
    queries = _unit(rng, 60)
    checked = 0
    for number, query in enumerate(queries):
        where = _random_filter(rng)
        admitted = {i for i, r in expected.items() if where.admits_row(r)}
        assert admitted == set(store.all_ids(where)), where
        others = replace(
            where, kinds=tuple(k for k in where.kinds or ("gist", "entity") if k != "observation")
        )
        if not others.kinds:
            continue
        exact = store.search(query, 8, others)
        for source in (store, reopened):
            mine = source.search_others(query, 8, others)
            # The same scores in the same order; rows tied in score may change places.
            assert np.allclose([h.score for h in mine], [h.score for h in exact], atol=1e-4)
            assert _untied(mine) == _untied(exact), (number, where)
        checked += len(exact)
    assert checked > 100


def _untied(hits: list[Any]) -> list[str]:
    """The ids of the hits whose score no other hit comes within 1e-4 of."""
    return [h.id for h in hits if all(abs(h.score - o.score) > 1e-4 for o in hits if o.id != h.id)]


QUERIES = ["a red chair", "someone at the door", "a laptop on the desk", "plants by a window"]
THINGS = ["red chair", "blue door", "laptop", "green plant", "coffee cup", "person", "box"]
PLACES = ["near the window", "by the desk", "in the corridor", "next to a shelf"]


@pytest.fixture(scope="module")
def sketched(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Any:
    """A memory of 1,500 observations (captions, detections and battery readings) and a few
    entities on a 30 x 30 m floor, every area search through the sketch (sketch_min_rows 0)."""
    from sim_clock import SimClock

    from emem_graph import MemoryConfig, SpatioTemporalMemory

    rng = np.random.default_rng(3)
    clock = SimClock(1_000_000.0)
    config = MemoryConfig(
        db_path=str(tmp_path_factory.mktemp("sketch") / "mem"),
        sketch_min_rows=0,
        exact_search_max_rows=0,  # the paths of a large memory (a small one is searched exactly)
        maintenance_interval=None,
        entity_extraction=False,
    )
    memory = SpatioTemporalMemory(config=config, embedding_provider=minilm, get_current_time=clock)
    texts = [f"{THINGS[i % 7]} {PLACES[(i // 7) % 4]}, seen {i % 11} times" for i in range(1_500)]
    vectors = minilm.embed(texts)
    for i, text in enumerate(texts):
        clock.advance(0.5)
        x, y = (float(v) for v in rng.uniform(0, 30, 2))
        if i % 10 == 0:
            memory.add_body_state(f"battery {100 - i % 100} %", "battery", x=x, y=y)
        else:
            layer = "captions" if i % 3 else "detections"
            memory.add(text, x, y, layer_name=layer, embedding=vectors[i])
    for name in THINGS[:4]:
        memory.add_entity(name, *(float(v) for v in rng.uniform(0, 30, 2)))
    memory.flush()
    assert memory.store.wait_for_sketch(60)
    yield memory, minilm, clock.now
    memory.close()


def _area_filters(rng: np.random.Generator, now: float) -> list[VectorFilter]:
    filters = []
    for _ in range(12):
        center = (float(rng.uniform(0, 30)), float(rng.uniform(0, 30)))
        radius = float(rng.uniform(3, 14))
        base = VectorFilter(
            center=center,
            radius=radius,
            exclude_source_types=(INTEROCEPTION,),
            exclude_tiers=("archived",),
        )
        filters += [
            base,
            replace(base, exclude_source_types=None),
            replace(base, layers=("captions",)),
            replace(base, time_after=now - 400.0, time_before=now - 100.0),
            replace(base, kinds=("observation",)),
            replace(base, kinds=("entity", "observation")),
        ]
    return filters


def test_area_searches_through_the_sketch_match_lancedbs_exact_search(sketched: Any) -> None:
    """The in-process answer (the sketch for observations, the vector store's copy for gists
    and entities) against LanceDB's exact search under the same filter: recall@10 >= 0.9
    (only near-ties within the int8 rounding may change places), scores within 0.01."""
    memory, minilm, now = sketched
    store = memory.store
    vectors = minilm.embed(QUERIES)
    rng = np.random.default_rng(4)
    recalls, deviations, kinds = [], [], set()
    for where in _area_filters(rng, now):
        for vector in vectors:
            mine = store._sketch_hits(vector, 10, where)
            assert mine is not None, where
            exact = store.vectors.search(vector, 10, where)
            assert len(mine) == len(exact), where
            if not exact:
                continue
            scores = {h.id: h.score for h in exact}
            recalls.append(len(scores.keys() & {h.id for h in mine}) / len(exact))
            deviations += [abs(h.score - scores[h.id]) for h in mine if h.id in scores]
            kinds.update(h.kind for h in mine)
            assert store.vector_hits(vector, 10, where) == mine  # vector_hits takes this path
    assert len(recalls) > 200 and kinds == {"observation", "entity"}
    assert float(np.mean(recalls)) >= 0.9
    assert max(deviations) < 0.01


def test_filters_the_index_cannot_answer_go_to_lancedb(sketched: Any) -> None:
    memory, minilm, _ = sketched
    store = memory.store
    vector = minilm.embed(["a red chair"])[0]
    area = VectorFilter(center=(15.0, 15.0), radius=8.0, exclude_tiers=("archived",))
    for where in (
        replace(area, tiers=("short_term",)),
        replace(area, exclude_tiers=None),  # the index never answers archived rows
        replace(area, exclude_source_types=("camera",)),
        replace(area, episode_id="e1"),
        replace(area, layers=("captions", "detections")),
        replace(area, center=None, radius=None),
    ):
        assert store._sketch_hits(vector, 10, where) is None, where
        assert store.vector_hits(vector, 10, where) == store.vectors.search(vector, 10, where)


def test_deleted_vectors_leave_the_sketch(make_memory: Any, minilm: Any) -> None:
    memory = make_memory(sketch_min_rows=0, maintenance_interval=None, entity_extraction=False)
    ids = [memory.add(f"{thing} in the lab", 1.0 + i, 2.0) for i, thing in enumerate(THINGS)]
    memory.flush()
    store = memory.store
    assert store.wait_for_sketch(30)
    vector = minilm.embed(["a red chair"])[0]
    where = VectorFilter(center=(4.0, 2.0), radius=10.0, exclude_tiers=("archived",))
    assert {h.id for h in store.vector_hits(vector, 10, where)} == set(ids)
    store.vectors.delete(ids[:3])
    mine = store._sketch_hits(vector, 10, where)
    assert mine is not None and {h.id for h in mine} == set(ids[3:])
    assert {h.id for h in store.vectors.search(vector, 10, where)} == set(ids[3:])


def test_the_sketch_loaded_at_open_equals_the_one_kept_while_writing(
    make_memory: Any, minilm: Any
) -> None:
    memory = make_memory(maintenance_interval=None, entity_extraction=False)
    texts = [f"{THINGS[i % 7]} {PLACES[i % 4]} number {i}" for i in range(300)]
    for i, text in enumerate(texts):
        memory.add(text, float(i % 17), float(i % 13))
    memory.flush()
    store = memory.store
    assert store.wait_for_sketch(30)
    query = minilm.embed(["a coffee cup"])[0]
    rows = np.arange(len(store.index))
    written = store.index.sketch.scores(rows, query)
    ids = [store.index._ids[r] for r in rows.tolist()]
    memory.close()
    reopened = make_memory(maintenance_interval=None, entity_extraction=False)
    assert reopened.store.wait_for_sketch(30)
    index = reopened.store.index
    loaded = index.sketch.scores(index.rows_of(ids), query)
    assert not np.isnan(written).any()
    assert np.allclose(loaded, written, atol=1e-6)


def test_with_the_sketch_off_lancedb_searches_every_area(make_memory: Any, minilm: Any) -> None:
    memory = make_memory(
        area_sketch=False, sketch_min_rows=0, exact_search_max_rows=0, entity_extraction=False
    )
    for i, thing in enumerate(THINGS):
        memory.add(f"{thing} in the hall", float(i), 0.0)
    memory.flush()
    store = memory.store
    assert store.index.sketch is None and not store.wait_for_sketch(1)
    vector = minilm.embed(["a red chair"])[0]
    where = VectorFilter(center=(3.0, 0.0), radius=5.0, exclude_tiers=("archived",))
    assert store.vector_hits(vector, 5, where) == store.vectors.search(vector, 5, where)


def test_an_area_searched_by_lancedb_while_the_sketch_loads_ranks_as_the_sketch(
    sketched: Any,
) -> None:
    """Until the sketch has loaded after an open, an area search it will answer goes to
    LanceDB, whose rows are then scored with the sketch's arithmetic (their stored vectors
    rounded as the sketch rounds them): the same ids and the same score bits before and
    after the load, so near-ties keep their order (answers never depend on
    background work)."""
    memory, minilm, now = sketched
    store = memory.store
    sketch = store.index.sketch
    rows = np.arange(len(store.index))
    ids = [store.index.id_of(int(r)) for r in rows.tolist()]
    stored = store.vectors.vectors_of(ids)
    held = [r for r, i in zip(rows.tolist(), ids, strict=True) if i in stored]
    query = minilm.embed(["a coffee cup by the desk"])[0]
    for picked in (held, held[7:300:3], held[-5:]):
        matrix = np.stack([stored[store.index.id_of(r)] for r in picked])
        assert np.array_equal(
            sketch.scores(np.asarray(picked), query), sketch.scores_of_vectors(matrix, query)
        )  # the same bits whichever rows come along
    vectors = minilm.embed(QUERIES)
    compared = 0
    for where in _area_filters(np.random.default_rng(8), now):
        for vector in vectors:
            loaded = store.vector_hits(vector, 10, where)
            store._sketch_loaded.clear()  # as right after an open
            try:
                loading = store.vector_hits(vector, 10, where)
                store.index.sketch = VectorSketch(sketch.dim)  # before its first row came
                empty = store.vector_hits(vector, 10, where)
            finally:
                store.index.sketch = sketch
                store._sketch_loaded.set()
            assert loading == loaded, where
            assert empty == loaded, where  # an empty sketch scores alike (not by its length)
            compared += bool(loaded)
    assert compared > 200


def test_sketch_min_rows_leaves_smaller_areas_to_lancedb(sketched: Any, monkeypatch: Any) -> None:
    """An area of fewer rows than sketch_min_rows is searched by LanceDB, one of at least
    that many by the sketch; with 0 (the default) the area's rows are not even counted."""
    memory, minilm, _ = sketched
    store = memory.store
    vector = minilm.embed(["a red chair"])[0]
    where = VectorFilter(center=(15.0, 15.0), radius=4.0, exclude_tiers=("archived",))
    rows = store.matching_rows(where)
    assert rows is not None and rows > 10
    asked: list[str] = []
    sketch_hits, matching_rows = store._sketch_hits, store.matching_rows
    monkeypatch.setattr(store, "_sketch_hits", lambda *a: asked.append("sketch") or sketch_hits(*a))
    monkeypatch.setattr(store, "matching_rows", lambda w: asked.append("count") or matching_rows(w))
    for floor, expected in ((0, ["sketch"]), (rows, ["count", "sketch"]), (rows + 1, ["count"])):
        config = store.config.model_copy(update={"sketch_min_rows": floor})
        monkeypatch.setattr(store, "config", config)
        asked.clear()
        hits = store.vector_hits(vector, 10, where)
        assert asked == expected, floor
        if "sketch" not in expected:
            assert hits == store.vectors.search(vector, 10, where, matching=rows)
        else:
            assert [h.id for h in hits] == [h.id for h in sketch_hits(vector, 10, where)]


def test_an_area_holding_no_rows_is_answered_empty_by_the_sketch(sketched: Any) -> None:
    """A circle between the rows (or off the map) gives the sketch no rows to score: no
    hits, not an error (with sketch_min_rows 0 such an area is no longer sent to LanceDB)."""
    memory, minilm, _ = sketched
    store = memory.store
    vector = minilm.embed(["a red chair"])[0]
    for center, radius in (((15.0, 15.0), 1e-300), ((500.0, -500.0), 3.0), ((15.0, 15.0), 0.0)):
        where = VectorFilter(center=center, radius=radius, exclude_tiers=("archived",))
        hits = store._sketch_hits(vector, 10, where)
        assert hits is not None
        assert [h for h in hits if h.kind == "observation"] == []
        assert store.vector_hits(vector, 10, where) == hits
    assert store.index.sketch.scores(np.zeros(0, dtype=np.int64), vector).shape == (0,)
    answer = memory.semantic_search("a red chair", near_x=500.0, near_y=-500.0, spatial_radius=3.0)
    assert isinstance(answer, str)


def test_the_kept_area_scores_follow_every_write(make_memory: Any, minilm: Any) -> None:
    """nearest_to_vector keeps its last area's scores for the same question asked again
    (semantic_search asks for more results): a deeper ask ranks as a fresh one does, and an
    observation written into the area, or a vector deleted, is seen by the next ask."""
    memory = make_memory(
        sketch_min_rows=0,
        exact_search_max_rows=0,
        maintenance_interval=None,
        entity_extraction=False,
    )
    ids = [memory.add(f"{thing} in the lab", 1.0 + i % 5, 2.0 + i // 5) for i, thing in
           enumerate(THINGS * 3)]  # fmt: skip
    memory.flush()
    store = memory.store
    assert store.wait_for_sketch(30)
    index = store.index
    vector = minilm.embed(["a red chair"])[0]
    area = (3.0, 3.0, 10.0)
    first = index.nearest_to_vector(vector, *area, limit=5)
    deeper = index.nearest_to_vector(vector, *area, limit=15)
    index._nearest_kept = None
    assert index.nearest_to_vector(vector, *area, limit=15) == deeper
    assert deeper[:5] == first
    # A new observation in the area whose vector is the question's: first from now on.
    new = memory.add("the question itself", 3.0, 3.0, embedding=vector)
    memory.flush()
    assert index.nearest_to_vector(vector, *area, limit=5)[0][0] == new
    # Deleted vectors (the sketch changes, the index rows stay): gone from the next ask.
    store.vectors.delete([new, *ids[:4]])
    assert {i for i, _ in index.nearest_to_vector(vector, *area, limit=30)} == set(ids[4:])
