"""The locate evaluation (emem_graph/evals/locate_eval.py) and the relevance-weighted locate
(emem_graph/retrieval/locate.py) it measures."""

from __future__ import annotations

import math
import re

import pytest

from emem_graph.evals import locate_eval
from emem_graph.evals.locate_eval import RELATIONS, ROOMS, ROUTE, THINGS
from emem_graph.models import Entity, Observation
from emem_graph.retrieval.locate import (
    CLUSTER_RADIUS,
    estimate_location,
    named_things,
    strong_hits,
)

# --- the scenario ---------------------------------------------------------------------------------


def test_scenario_has_many_named_alike_objects_and_relations_that_name_others():
    names = [t.name for t in THINGS]
    assert len(names) >= 30 and len(set(names)) == len(names)
    assert sum(len(n.split()) >= 2 for n in names) >= 15
    chairs = [t for t in THINGS if t.name.endswith("chair")]
    assert len({t.room for t in chairs}) >= 3  # red, blue, black chairs in different rooms
    assert {t.room for t in THINGS} == {r.name for r in ROOMS} == set(ROUTE)
    things = {t.name: t for t in THINGS}
    for subject, other, caption in RELATIONS:
        assert subject in things and other in things and subject != other
        assert other in caption and caption.startswith(("a ", "an "))
        # The caption lies at the subject, far enough from the other to drag it.
        a, b = things[subject], things[other]
        assert math.dist((a.x, a.y), (b.x, b.y)) >= 1.0
    paraphrases = [t.paraphrase for t in THINGS if t.paraphrase]
    assert len(paraphrases) >= 20 and not set(paraphrases) & set(names)
    assert len(locate_eval.queries()) == len(names) + len(paraphrases)


def test_parse_location_and_distribution():
    answer = "Location: (12.3, -4.0, 0.0)\nRadius: 1.0m\nBased on: 3 memories (3x captions)"
    assert locate_eval.parse_location(answer) == (12.3, -4.0)
    assert locate_eval.parse_location("Could not locate: no matching memories found.") is None
    d = locate_eval.distribution([0.2, 0.5, 0.9, 3.0, None])
    assert d["within_goal"] == pytest.approx(0.6)
    assert d["max"] is None and d["p90"] is None and d["unanswered"] == 1.0
    assert d["p50"] == pytest.approx(0.9) and d["mean"] == pytest.approx(1.15)
    d = locate_eval.distribution([0.0, 1.0, 2.0])
    assert (d["p50"], d["p90"], d["max"]) == (1.0, pytest.approx(1.8), 2.0)


@pytest.fixture(scope="module")
def quick_run(minilm):
    return locate_eval.run(minilm, quick=True)


def test_quick_run_locates_every_object_within_a_metre(quick_run):
    result = quick_run
    assert result["seconds"] > 0  # reported; how fast is the bench's concern, not a test's
    assert result["observations"] > 150 and result["entities"] >= len(THINGS)
    rows = result["queries"]
    assert len(rows) == len(locate_eval.queries())
    errors = [r["errors"]["locate"] for r in rows]
    assert all(e is not None and math.isfinite(e) for e in errors)
    located = result["variants"]["locate"]
    assert located["all"]["within_goal"] >= locate_eval.GOAL_SHARE
    assert located["paraphrase"]["within_goal"] >= locate_eval.GOAL_SHARE
    # The previous estimate misses on the same memory (an exactly named entity made from one
    # caption across the room outweighed every detection).
    before = result["variants"]["strong-hit mean"]["all"]
    assert before["within_goal"] < located["all"]["within_goal"] - 0.2
    by_query = {r["query"]: r["errors"]["locate"] for r in rows}
    for multi_word in ("first aid kit", "large potted plant", "fire extinguisher", "red chair"):
        assert by_query[multi_word] <= 1.0, multi_word
    lines = locate_eval.describe(result)
    assert any(re.match(r"\s+locate\s+all\s+\d+ ", line) for line in lines)
    assert any(re.match(r"\s+strong-hit mean\s+name\s+\d+ ", line) for line in lines)


# --- the relevance-weighted locate ----------------------------------------------------------------


def _obs(text: str, x: float, y: float) -> Observation:
    return Observation(id=f"{text}@{x},{y}", text=text, x=x, y=y, timestamp=0.0)


def _entity(name: str, x: float, y: float, count: int = 1) -> Entity:
    return Entity(
        id=f"{name}@{x},{y}",
        name=name,
        x=x,
        y=y,
        first_seen=0.0,
        last_seen=0.0,
        observation_count=count,
    )


def test_named_things_counts_what_a_text_names():
    assert named_things("1 fire extinguisher") == 1
    assert named_things("1 red chair, 2 cups") == 2
    assert named_things("a television above the red chair") == 2
    assert named_things("the kitchen: a refrigerator, a dining table and a toaster") == 4
    assert named_things("") == 1


def test_an_exactly_named_entity_from_one_caption_across_the_room_does_not_win():
    # Measured in the evaluation: the scene caption "the hallway: ..., a fire extinguisher"
    # at the robot's pose made an entity of that exact name 9 m from the extinguisher.
    hits = [
        (_entity("fire extinguisher", 3.0, 8.0), 1.0),
        (_obs("1 fire extinguisher", 11.6, 8.5), 0.89),
        (_obs("1 fire extinguisher", 12.1, 8.5), 0.89),
        (_obs("1 fire extinguisher", 12.1, 8.7), 0.89),
        (_entity("red fire extinguisher", 11.9, 8.6, count=6), 0.868),
        (_obs("a red fire extinguisher on the wall", 12.2, 8.4), 0.742),
    ]
    estimate = estimate_location(hits)
    assert estimate is not None
    assert math.dist((estimate.x, estimate.y), (12.0, 8.7)) < 0.5
    assert all(r.x > 10 for r, _ in estimate.hits)  # the far entity is not evidence
    assert estimate.hits[0][1] == 0.89  # best first among the hits used


def test_an_alike_object_elsewhere_does_not_drag_the_answer():
    hits = [
        (_entity("red chair", 2.2, 5.3, count=5), 1.0),
        (_obs("1 red chair", 2.1, 5.4), 0.86),
        (_obs("1 red chair", 1.9, 5.6), 0.86),
        (_entity("blue chair", 3.0, 12.0, count=5), 0.76),
        (_obs("1 blue chair", 3.1, 12.1), 0.72),
        (_obs("1 blue chair", 2.9, 11.8), 0.72),
    ]
    estimate = estimate_location(hits)
    assert estimate is not None
    assert math.dist((estimate.x, estimate.y), (2.0, 5.5)) < 0.5
    assert estimate.radius >= 1.0


def test_an_alike_object_seen_nine_times_does_not_outvote_the_asked_one_seen_once():
    # Similarities measured with MiniLM for "red chair"; no entities (extraction off).
    hits = [(_obs("1 red chair", 2.0, 5.5), 0.86)]
    hits += [(_obs("1 blue chair", 3.0 + 0.05 * i, 12.0), 0.65) for i in range(9)]
    estimate = estimate_location(hits)
    assert estimate is not None
    assert (estimate.x, estimate.y) == (2.0, 5.5)
    assert [r.text for r, _ in estimate.hits] == ["1 red chair"]


def test_names_and_texts_are_compared_with_their_own_kind():
    # Measured: "refrigerator" is 1.0 to the entity made from the kitchen's scene captions at
    # the robot's pose, 0.79 to the detections "1 refrigerator" at the fridge.
    hits = [
        (_entity("refrigerator", 2.0, 2.5, count=3), 1.0),
        (_obs("1 refrigerator", 7.0, 6.3), 0.793),
        (_obs("1 refrigerator", 7.1, 6.0), 0.793),
        (_obs("1 refrigerator", 6.8, 6.4), 0.793),
        (_entity("white refrigerator", 7.1, 6.3, count=8), 0.78),
        (_obs("a tall white refrigerator with magnets on it", 7.3, 5.8), 0.688),
        (_obs("the kitchen: a refrigerator, a dining table and a toaster", 2.0, 2.5), 0.663),
    ]
    estimate = estimate_location(hits)
    assert estimate is not None
    assert math.dist((estimate.x, estimate.y), (7.0, 6.3)) < 0.5


def test_candidates_are_the_hits_near_the_best_one():
    hits = [(_obs("a", 0.0, 0.0), 0.8), (_obs("b", 9.0, 0.0), 0.6), (_obs("c", 0.0, 9.0), 0.2)]
    assert [r.text for r, _ in strong_hits(hits)] == ["a", "b"]
    assert estimate_location([]) is None
    estimate = estimate_location(hits)
    assert estimate is not None and (estimate.x, estimate.y) == (0.0, 0.0)
    assert CLUSTER_RADIUS < 9.0


def test_locate_the_red_chair_under_the_television(make_memory):
    """A television on the wall across from the red chair: the captions about the television
    name the chair, and are seen more often than the chair itself; locate("red chair") stays
    at the chair and does not list them, locate("television") finds the television."""
    memory = make_memory(maintenance_interval=None)
    chair, tv = (2.0, 5.5), (4.8, 5.0)
    t = 1_790_000_000.0
    for i, (dx, dy) in enumerate([(0.2, -0.1), (-0.3, 0.2), (0.1, 0.3)]):
        memory.add(
            "1 red chair", chair[0] + dx, chair[1] + dy, timestamp=t + i, layer_name="detections"
        )
    memory.add(
        "a red chair next to the kitchen door", 2.3, 5.2, timestamp=t + 5, layer_name="captions"
    )
    for i, (dx, dy) in enumerate([(0.2, 0.1), (-0.2, 0.3), (0.3, -0.3), (0.0, 0.2), (-0.1, -0.2)]):
        memory.add(
            "a television above the red chair",
            tv[0] + dx,
            tv[1] + dy,
            timestamp=t + 10 + i,
            layer_name="captions",
        )
        memory.add(
            "1 television", tv[0] - dy, tv[1] + dx, timestamp=t + 20 + i, layer_name="detections"
        )
    memory.add(
        "the kitchen: a red chair, a television and a fridge",
        6.0,
        3.0,
        timestamp=t + 30,
        layer_name="captions",
    )
    memory.extract_entities()

    answer = memory.locate("red chair")
    at = locate_eval.parse_location(answer)
    assert at is not None and math.dist(at, chair) <= 1.0, answer
    assert "television" not in answer, answer
    at = locate_eval.parse_location(memory.locate("television"))
    assert at is not None and math.dist(at, tv) <= 1.0
