"""Hybrid retrieval: keyword + vectors fused by rank, prefilters, multi-part requests, recency,
and locate's strong-hit estimate. Real LanceDB and MiniLM."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from graph_writes import write_gist
from sim_clock import SimClock

from emem_graph.filters import VectorFilter, perception_filter
from emem_graph.models import Gist, Observation
from emem_graph.retrieval.locate import estimate_location, strong_hits
from emem_graph.retrieval.search import (
    Scored,
    merge_parts,
    reciprocal_rank_fusion,
    split_request,
    summaries_behind,
)
from emem_graph.storage.keyword_index import bm25, terms

QUIET = {
    "entity_extract_flush_interval": 10**6,
    "entity_extract_time_interval": 1e9,
    "maintenance_interval": None,
}
"""No background entity extraction or maintenance: each test ranks exactly what it wrote."""

# --- request parsing and fusion (pure) -----------------------------------------------------------


def test_keyword_terms_keep_the_content_words_of_a_question_normalised():
    assert terms("Where is the red chair?") == ["red", "chair"]
    assert terms("is it there?") == []
    # Inflections meet, number words are digits, possessives and apostrophes go.
    assert terms("Watering the plants") == terms("water the plant") == ["water", "plant"]
    assert terms("Anna's two mugs") == ["anna", "2", "mug"]
    assert terms("He carried boxes") == terms("carry the box")


@pytest.mark.parametrize(
    ("request_text", "parts"),
    [
        (
            "put my gift vase and the black book from grandma on the shelf",
            ["put my gift vase", "the black book from grandma on the shelf"],
        ),
        ("the cup, then the kettle", ["the cup", "the kettle"]),
        ("Find the keys. Also the wallet!", ["find the keys", "the wallet"]),
        ("apples, pears and plums", ["apples", "pears", "plums"]),
        ("where is the red chair?", ["where is the red chair?"]),
        ("the cup and then", ["the cup and then"]),  # one meaningful part: not split
        # A title's or a number's full stop ends no sentence.
        ("Where are Mrs. Brown's batteries?", ["Where are Mrs. Brown's batteries?"]),
        ("Dr. Patel's 2.5 mm screws", ["Dr. Patel's 2.5 mm screws"]),
    ],
)
def test_split_request_into_parts(request_text, parts):
    assert split_request(request_text) == parts


def test_reciprocal_rank_fusion_rewards_agreement():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "a"]], k=60)
    assert max(fused, key=fused.__getitem__) == "b"
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


def _scored(ids: list[str]) -> list[Scored]:
    return [
        Scored(Observation(id=i, text=i, x=0, y=0, timestamp=0), 1.0 / (n + 1))
        for n, i in enumerate(ids)
    ]


def test_merge_parts_puts_every_part_in_the_top_n():
    whole = _scored(["a1", "a2", "a3", "a4"])  # the whole request finds one part's things
    merged = merge_parts(whole, [_scored(["a1", "a2", "a3"]), _scored(["b1", "b2"])], n=3, rrf_k=60)
    assert [s.record.id for s in merged][:2] == ["a1", "b1"]
    assert len(merged) == 3


def _gist(gist_id: str) -> Scored:
    return Scored(Gist(id=gist_id, text=gist_id, x=0, y=0, time_start=0, time_end=0), 1.0)


def test_a_summary_ranks_no_higher_than_the_embedder_alone_places_it():
    ranked = [_gist("g"), *_scored(["a", "b", "c", "d"])]  # fused: the summary first
    order = [s.record.id for s in summaries_behind(ranked, {"a": 0, "b": 1, "g": 2, "c": 3})]
    assert order == ["a", "b", "g", "c", "d"]
    # The embedder's own first keeps its fused place; one it did not return goes last.
    assert summaries_behind(ranked, {"g": 0, "a": 1})[0].record.id == "g"
    assert [s.record.id for s in summaries_behind(ranked, {"a": 0})] == ["a", "b", "c", "d", "g"]
    # Summaries keep their order among themselves (search_gists ranks nothing else).
    gists = [_gist("g1"), _gist("g2"), _gist("g3")]
    ids = [s.record.id for s in summaries_behind(gists, {"g3": 0, "g2": 1, "g1": 2})]
    assert ids == ["g1", "g2", "g3"]


# --- hybrid search on a real store ---------------------------------------------------------------

DISTRACTORS = [
    "where is the kitchen?",
    "where is the red car parked",
    "where did I leave the remote control",
    "a wooden chair in the dining room",
    "a blue armchair near the window",
    "a red apple in the fruit bowl",
    "where is the bathroom",
    "the office chair is broken",
]


def test_keyword_search_finds_the_red_chair_in_a_question(make_memory):
    mem = make_memory(**QUIET)
    for i, text in enumerate(DISTRACTORS * 3):
        mem.add(text, float(i), 0.0)
    target = mem.add("inventory: lamp, red chair, cable box, bucket, ladder", 50.0, 50.0)
    mem.flush()  # read below without a tool (the tools flush before they read)
    searcher = mem.tools._search
    where = perception_filter()

    keyword_hits = mem.store.keyword("where is the red chair?", 5, where)
    assert keyword_hits[0][1].id == target  # the only text with both words
    hybrid = [s.record.id for s in searcher.search("where is the red chair?", 5, where)]
    assert target in hybrid[:3]
    assert "inventory: lamp, red chair" in mem.semantic_search("where is the red chair?", 3)


def test_hybrid_finds_a_rare_code_word_the_vectors_miss(make_memory):
    mem = make_memory(**QUIET)
    for i, text in enumerate(DISTRACTORS * 2):
        mem.add(text, float(i), 0.0)
    mem.add("crate QX7731 is stacked behind the forklift", 5.0, 5.0)
    assert "QX7731" in mem.semantic_search("where is QX7731?", n_results=1)


@pytest.fixture(scope="module")
def grid(tmp_path_factory, minilm):
    """2,000 observations on a 100 m x 100 m square, 1% of them in layer 'rare'."""
    from emem_graph import MemoryConfig, SpatioTemporalMemory

    rng = np.random.default_rng(7)
    texts = ["a cardboard box", "a potted plant", "a closed door", "a coffee mug", "a person"]
    vectors = minilm.embed(texts)
    config = MemoryConfig(
        db_path=str(tmp_path_factory.mktemp("grid") / "m"), flush_batch_size=500, **QUIET
    )
    mem = SpatioTemporalMemory(
        config=config, embedding_provider=minilm, get_current_time=SimClock()
    )
    points = rng.uniform(0.0, 100.0, size=(2000, 2))
    for i, (x, y) in enumerate(points):
        k = i % len(texts)
        layer = "rare" if i % 100 == 0 else "camera"
        mem.add(texts[k], float(x), float(y), timestamp=float(i), layer_name=layer,
                embedding=vectors[k])  # fmt: skip
    mem.flush()
    yield mem, points
    mem.close()


def test_area_filter_is_a_prefilter_returning_n_hits_from_one_percent(grid):
    mem, points = grid
    radius = math.sqrt(100 * 100 * 0.01 / math.pi)  # a circle of 1% of the square
    cx, cy = 37.0, 61.0
    inside = int((np.hypot(points[:, 0] - cx, points[:, 1] - cy) <= radius).sum())
    assert inside >= 10
    out = mem.semantic_search("a coffee mug", n_results=10, near_x=cx, near_y=cy,
                              spatial_radius=radius)  # fmt: skip
    rows = out.splitlines()
    assert len(rows) == 10
    for row in rows:
        x, y = (float(v) for v in re.search(r"\((-?[\d.]+),(-?[\d.]+)\)", row).groups())
        assert math.hypot(x - cx, y - cy) <= radius + 0.06  # positions print with one decimal


def test_layer_and_time_filters_are_prefilters(grid):
    mem, _ = grid
    rows = mem.semantic_search("a person", n_results=15, layer="rare").splitlines()
    assert len(rows) == 15 and all(r.split(". ", 1)[1].startswith("[rare]") for r in rows)
    late = mem.semantic_search("a person", n_results=10, time_after=1990.0).splitlines()
    assert len(late) == 10  # the last 10 observations, whatever their text


def test_two_part_request_returns_hits_for_both_parts_in_top_5(make_memory):
    # Dense side only: the keyword side alone already lifts the rare words "black book
    # grandma", so this isolates what splitting the request adds.
    mem = make_memory(use_hybrid_retrieval=False, **QUIET)
    for i, text in enumerate(
        [
            "a gift vase on the shelf",
            "the gift vase from the wedding on the top shelf",
            "an empty vase on the shelf",
            "a gift box on the shelf",
            "a small vase on a shelf in the hall",
            "the shelf above the sofa",
            "a ceramic vase, a gift from Anna",
            "a shelf with picture frames",
            "a blue gift vase on the kitchen shelf",
            "my vase, a birthday gift, on the shelf",
            "a tall gift vase next to the shelf",
            "the glass vase on the bookshelf was a gift",
            "a gift vase with flowers on the wall shelf",
            "a wrapped gift on the shelf by the vase",
        ]
    ):
        mem.add(text, float(i), 0.0)
    book = mem.add("a black book from grandma lying on the nightstand", 20.0, 5.0)
    mem.add("a cookbook in the kitchen drawer", 3.0, 9.0)
    request = "put my gift vase and the black book from grandma on the shelf"
    mem.flush()  # the searcher below is read directly; the tools flush before they read

    whole = [s.record.id for s in mem.tools._search.search(request, 5, perception_filter())]
    split = mem.semantic_search(request, n_results=5).splitlines()

    assert len(whole) == 5 and book not in whole  # shelves and vases fill the whole request's 5
    assert any("black book from grandma" in row for row in split)
    assert any("vase" in row for row in split)
    assert len(split) == 5


def test_then_request_represents_both_things(make_memory):
    mem = make_memory(**QUIET)
    for i, text in enumerate(["a blue cup", "a cup of tea", "a paper cup", "a cup holder"]):
        mem.add(text, float(i), 0.0)
    mem.add("an electric kettle on the stove", 9.0, 9.0)
    out = mem.semantic_search("the cup, then the kettle", n_results=2)
    assert "kettle" in out and "cup" in out


def test_recency_weight_prefers_newer_memories(make_memory):
    clock = SimClock(0.0)
    mem = make_memory(clock=clock, recency_weight=0.5, recency_halflife=60.0, **QUIET)
    mem.add("a green umbrella", 0.0, 0.0, timestamp=0.0)
    mem.add("a green umbrella", 9.0, 9.0, timestamp=600.0)
    clock.now = 600.0
    assert mem.semantic_search("green umbrella", n_results=1).startswith("1. [default] (9.0,9.0)")
    plain = make_memory(name="plain", clock=clock, **QUIET)
    plain.add("a green umbrella", 0.0, 0.0, timestamp=600.0)
    plain.add("a green umbrella by the door", 9.0, 9.0, timestamp=0.0)
    # Without recency the closer text wins even though it is older.
    assert plain.semantic_search("green umbrella", n_results=1).startswith("1. [default] (0.0,0.0)")


# --- locate --------------------------------------------------------------------------------------


def test_locate_lands_on_the_strong_match_not_the_mean_of_weak_ones(make_memory):
    mem = make_memory(**QUIET)
    rng = np.random.default_rng(3)
    weak = [
        "a stack of newspapers", "a pair of running shoes", "a bowl of oranges",
        "a window with open curtains", "a laptop on the desk", "a guitar in the corner",
        "a basket of laundry", "a painting of a boat", "a bag of dog food", "a floor lamp",
    ]  # fmt: skip
    for i in range(30):
        x, y = rng.uniform(-50, 50, size=2)
        mem.add(weak[i % len(weak)], float(x), float(y))
    mem.add("a red fire extinguisher mounted by the garage door", 40.0, -35.0)

    out = mem.locate("fire extinguisher", n_results=10)
    x, y, _ = (float(v) for v in re.match(r"Location: \((.+), (.+), (.+)\)", out).groups())

    assert math.hypot(x - 40.0, y + 35.0) < 1.0
    assert re.search(r"^Based on: \d+ memories \(.*1x default.*\)$", out, re.MULTILINE)


def test_strong_hits_cut_relative_to_the_best_and_weights_favour_it():
    def obs(x: float) -> Observation:
        return Observation(id=str(x), text="t", x=x, y=0.0, timestamp=0.0)

    hits = [(obs(0.0), 0.80), (obs(2.0), 0.75), (obs(50.0), 0.40), (obs(-50.0), 0.30)]
    assert [r.x for r, _ in strong_hits(hits)] == [0.0, 2.0]
    estimate = estimate_location(hits)
    assert estimate is not None
    assert 0.0 < estimate.x < 1.0  # pulled towards the best hit
    assert estimate.radius >= 1.0
    assert estimate_location([]) is None


def _keyword_hits_reference(store, query_terms, n, where):
    """keyword_hits as it was before its cuts: every tied observation and every matching gist
    and entity made a hit, all sorted by (score, id), cut at n."""
    from emem_graph.storage.keyword_index import KeywordHit, Matches, bm25
    from emem_graph.storage.ranking import best as _best

    others, columns = store.vectors.keyword_others()
    listed = columns.rows
    wanted = where is None or where.kinds is None or "observation" in where.kinds
    keywords = store.index.keywords()
    # Every live row of each matching text, with its text's bits (the observations' index is
    # scored by distinct text only; tests/test_keyword_index.py holds that equal to by row).
    by_text, other = bm25([keywords, others], query_terms, (wanted, True), by_text=(True, False))
    rows, owner = keywords.rows_of_texts(by_text.rows.tolist())
    order = np.argsort(rows)
    observed = Matches(rows[order], by_text.scores[owner][order], by_text.coverage[owner][order])
    hits = []
    if observed.rows.shape[0]:
        keep = np.flatnonzero(store.index.admitted(observed.rows, where))
        for at in keep[_best(observed.scores[keep], n)].tolist():
            hits.append(
                KeywordHit(
                    store.index.id_of(int(observed.rows[at])),
                    "observation",
                    float(observed.scores[at]),
                    float(observed.coverage[at]),
                )
            )
    kinds = None if where is None else where.kinds
    for at, row in enumerate(other.rows.tolist()):
        found = listed[row]
        if kinds is not None and found.kind not in kinds:
            continue
        if where is None or where.admits_row(found):
            hits.append(
                KeywordHit(found.id, found.kind, float(other.scores[at]), float(other.coverage[at]))
            )
    hits.sort(key=lambda hit: (-hit.score, hit.id))
    return hits[:n]


def test_keyword_hits_cut_tie_groups_as_sorting_every_match_did(make_memory, hashing):
    """keyword_hits reads the ids of only the observations tied at the n-th place, and asks
    the filter about gists and entities only until n have passed it: on a memory that repeats
    itself (tie groups far larger than n) with gists and entities matching too, every cut
    equals the one made by sorting every match (the code before the cuts)."""
    rng = np.random.default_rng(5)
    memory = make_memory("ties", embedder=hashing, **QUIET)
    things = ["red chair", "blue chair", "red cup", "green door", "red box"]
    for i in range(900):
        if i % 300 == 0:
            memory.start_episode(f"round {i // 300}")
        layer = "captions" if i % 3 else "detections"
        text = f"{things[i % 5]} near shelf {i % 4}" if i % 7 else things[i % 5]
        memory.add(text, float(rng.uniform(0, 20)), float(rng.uniform(0, 20)),
                   timestamp=1000.0 + i, layer_name=layer)  # fmt: skip
        if i % 300 == 299:
            memory.end_episode(consolidate=True, wait=True)
    for i, thing in enumerate(things * 8):
        memory.add_entity(thing, float(i % 20), float(i % 7), entity_type="object")
    # Hundreds of distinct texts too (a dialogue's, not a patrol's): a selective filter then
    # walks past the first texts the keyword search reads.
    for i in range(400):
        memory.add(f"red chair number {i} by the window", float(i % 40), float(i // 40),
                   timestamp=2000.0 + i)  # fmt: skip
    memory.flush()
    store = memory.store
    assert store.counts()["gists"] >= 3
    episode = (store.active_episode_ids() or ["none"])[0]
    filters = [
        None,
        perception_filter(),
        perception_filter(layer="captions"),
        perception_filter(area=(10.0, 10.0, 6.0)),
        perception_filter(kinds=("gist", "entity")),
        perception_filter(kinds=("entity",), area=(5.0, 3.0, 4.0)),
        # One kind of the gists and entities, or none of them (keyword_hits leaves the other
        # kind's rows out before walking them).
        perception_filter(kinds=("gist",)),
        perception_filter(kinds=("entity",)),
        VectorFilter(kinds=("observation",)),
        VectorFilter(kinds=()),
        perception_filter(time_after=1300.0, time_before=1600.0),
        perception_filter(area=(35.0, 9.0, 1.5)),
        perception_filter(time_after=2390.0),
        # Areas are read from the circle's side (store._best_in_area): with the other
        # conditions, rows exactly on the circle (the window rows lie on whole metres:
        # 3-4-5 from (10, 5)), a radius of 0, a circle over every row (the walk again), one
        # that keeps archived rows and gists, a body-state one and an episode.
        perception_filter(area=(10.0, 5.0, 5.0)),
        perception_filter(area=(10.0, 5.0, 5.0), layer="captions"),
        perception_filter(area=(10.0, 10.0, 6.0), time_after=1300.0, time_before=1600.0),
        perception_filter(area=(13.0, 9.0, 0.0)),
        perception_filter(area=(20.0, 20.0, 1000.0)),
        perception_filter(area=(10.0, 10.0, 6.0), include_body_state=True),
        perception_filter(area=(10.0, 10.0, 6.0), episode_id=episode),
        VectorFilter(center=(10.0, 10.0), radius=6.0),
    ]
    compared = 0
    for question in ["red chair", "chair", "red", "green door shelf", "box near shelf 2", "window"]:
        query_terms = terms(question)
        for where in filters:
            for n in (1, 3, 10, 30):
                got = store.keyword_hits(query_terms, n, where)
                assert got == _keyword_hits_reference(store, query_terms, n, where)
                compared += bool(got)
    assert compared > 100


def test_keyword_hits_in_an_area_read_from_the_circle_equal_the_sort_of_every_match(
    make_memory, hashing
):
    """A filter with a circle is answered from the circle's side (its rows from the grid,
    then the whole filter, each row scored by its text) instead of walking the best texts'
    rows everywhere: on a 60 m map of repeated and distinct texts, several layers, body
    states, rows archived by the index and rows lying exactly on circles (whole metres,
    3-4-5 triangles), every answer equals the one made by sorting every match."""
    rng = np.random.default_rng(11)
    memory = make_memory("areas", embedder=hashing, **QUIET)
    things = ["red chair", "blue chair", "red cup", "green door", "red box", "chair"]
    for i in range(1500):
        x, y = float(rng.integers(0, 60)), float(rng.integers(0, 60))
        if i % 2:
            x, y = x + float(rng.uniform(0, 1)), y + float(rng.uniform(0, 1))
        text = things[i % 6] if i % 4 else f"{things[i % 6]} number {i} by shelf {i % 9}"
        if i % 10 == 0:
            memory.add_body_state(f"battery {i % 100} percent, chair motor warm", "battery",
                                  x=x, y=y, timestamp=1000.0 + i)  # fmt: skip
        else:
            memory.add(text, x, y, timestamp=1000.0 + i,
                       layer_name=("captions", "detections", "scene")[i % 3])  # fmt: skip
    for i, thing in enumerate(things * 4):
        memory.add_entity(thing, float(i % 60), float((7 * i) % 60), entity_type="object")
    memory.flush()
    store = memory.store
    archived = [store.index.id_of(row) for row in range(0, 1500, 13)]
    store.index.set_tier(archived, "archived")
    store.index.keywords().remove(list(range(5, 1500, 17)))  # as deleted rows are
    circles = [
        (30.0, 30.0, 5.0),
        (10.0, 5.0, 5.0),
        (13.0, 9.0, 0.0),
        (0.0, 0.0, 3.0),
        (59.5, 59.5, 2.5),
        (30.0, 30.0, 1000.0),
        (25.0, 40.0, 8.0),
    ]
    centres = rng.uniform(0, 60, (12, 2)).tolist()
    circles += [(x, y, r) for (x, y), r in zip(centres, rng.uniform(0.5, 9, 12), strict=True)]
    # Whole-metre centres and radii of 3-4-5 and 5-12-13 triangles: rows on the circle.
    whole = rng.integers(5, 55, (9, 2)).tolist()
    radii = [5.0, 10.0, 13.0] * 3
    circles += [(float(x), float(y), r) for (x, y), r in zip(whole, radii, strict=True)]
    compared = used = 0
    for cx, cy, r in circles:
        filters = [
            perception_filter(area=(cx, cy, r)),
            perception_filter(area=(cx, cy, r), layer="captions"),
            perception_filter(area=(cx, cy, r), time_after=1300.0, time_before=2100.0),
            perception_filter(area=(cx, cy, r), include_body_state=True),
            VectorFilter(center=(cx, cy), radius=r),
            VectorFilter(center=(cx, cy), radius=r, tiers=("archived",)),
            VectorFilter(
                center=(cx, cy), radius=r, kinds=("observation",), layers=("scene", "captions")
            ),
        ]  # fmt: skip
        for where in filters:
            for question in ["red chair", "chair", "battery motor", "shelf 4 number", "door"]:
                query_terms = terms(question)
                for n in (1, 3, 10, 30):
                    got = store.keyword_hits(query_terms, n, where)
                    assert got == _keyword_hits_reference(store, query_terms, n, where), (
                        cx, cy, r, where, question, n)  # fmt: skip
                    compared += bool(got)
            observed = bm25([store.index.keywords()], terms("chair"), by_text=(True,))[0]
            found = store._best_in_area(store.index.keywords(), observed, 10, where)
            used += found is not None
    assert compared > 1000
    assert used >= 100  # the circle's side answered most of them (not the walk again)


TURNS = [
    "Sam: Hey Evan, how was your week?",
    "Evan: I find painting to be a great stress reliever.",
    "Sam: My doctor wants me to eat less sugar.",
    "Evan: We drove to the lake on Sunday.",
    "Sam: The new job keeps me busy.",
    "Evan: My son started school last month.",
    "Sam: I tried a cooking class with friends.",
    "Evan: The car broke down again yesterday.",
]


def test_a_turn_beats_a_long_summary_that_merely_contains_it(make_memory):
    """A summary that is its turns back to back holds every word of the question (one in
    each of two turns) and ranked first on that; the turn that answers now does."""
    mem = make_memory(clock=SimClock(2000.0), **QUIET)
    ids = [
        mem.add(text, 0.0, 0.0, timestamp=1000.0 + i, layer_name="dialogue")
        for i, text in enumerate(TURNS)
    ]
    write_gist(mem, " ".join(TURNS), 0.0, 0.0, time_start=1000.0, time_end=1007.0,
               observation_ids=ids, layer="dialogue")  # fmt: skip
    top = mem.semantic_search("What is a stress reliever for Sam?", n_results=3).splitlines()
    assert top[0].endswith("] Evan: I find painting to be a great stress reliever.")
    assert not any("[gist/" in line for line in top)
