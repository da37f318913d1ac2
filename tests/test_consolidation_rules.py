"""The no-LLM building blocks: detection parsing, names, extractive summaries, LLM answer parsing.

Pure functions (the extractive summary uses the real MiniLM); no memory is built here.
"""

from __future__ import annotations

import numpy as np
import pytest

from emem_graph.consolidation.detections import RuleBasedExtractor, parse_detections
from emem_graph.consolidation.fallback import FallbackLLM
from emem_graph.errors import BackendUnavailableError
from emem_graph.llm.client import (
    ExtractedEntity,
    coerce_entities,
    parse_entities_json,
    strip_thinking,
)
from emem_graph.text.extractive import (
    cross_layer_summary,
    extractive_summary,
    unique_texts,
)
from emem_graph.text.names import compatible, generic, head, more_specific, normalize


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("2 chairs, 1 person", ["chair", "person"]),
        ("Detected: chair (0.92), person (0.81)", ["chair", "person"]),
        ("cup x2; bottle: 0.7", ["cup", "bottle"]),
        ("objects: cup, bottle and laptop", ["cup", "bottle", "laptop"]),
        ("1 dining table, 3 chairs", ["dining table", "chair"]),
        ("person 87%", ["person"]),
        ("nothing detected", []),
    ],
)
def test_detection_lists_are_parsed_into_singular_labels(text: str, labels: list[str]) -> None:
    parsed = parse_detections(text)
    assert parsed is not None
    assert [d.label for d in parsed] == labels


def test_detection_scores_and_counts_are_read() -> None:
    parsed = parse_detections("Detected: 2 chairs (0.92), person 87%")
    assert parsed is not None
    assert [(d.label, d.count, d.score) for d in parsed] == [
        ("chair", 2, 0.92),
        ("person", 1, 0.87),
    ]


@pytest.mark.parametrize(
    "text",
    ["a red chair by the door", "The robot is in the kitchen.", "no objects", "go to the door"],
)
def test_sentences_are_not_detection_lists(text: str) -> None:
    assert parse_detections(text) is None


def test_rule_extractor_finds_detector_labels_then_names_them_in_captions() -> None:
    extractor = RuleBasedExtractor()
    found = extractor.extract(
        [
            "a red chair by the kitchen table",  # before the detections in the batch: still read
            "2 chairs, 1 table",
            "the front door is open",  # "door" was never detected: nothing guessed
        ]
    )
    assert {(e.name, e.index) for e in found} == {
        ("chair", 1),
        ("table", 1),
        ("red chair", 0),
        ("kitchen table", 0),
    }
    assert all(e.entity_type == "object" for e in found)


def test_rule_extractor_types_people() -> None:
    found = RuleBasedExtractor().extract(["3 people, 1 dog"])
    assert {(e.name, e.entity_type) for e in found} == {("person", "person"), ("dog", "animal")}


def test_names_match_when_one_adds_detail_to_the_other() -> None:
    assert compatible("chair", "a red chair")
    assert compatible("Red Chairs", "red chair")
    assert not compatible("red chair", "blue chair")
    assert not compatible("chair", "table")
    assert more_specific("chair", "red chair") and not more_specific("red chair", "chair")
    assert head("red dining chairs") == "chair" and normalize("The Boxes") == "box"
    assert generic("the sofa") and not generic("grey sofa")


def test_extractive_summary_keeps_representative_non_redundant_texts_in_order(minilm) -> None:
    texts = [
        "a red chair by the door",
        "a red chair next to the door",  # a near-duplicate of the first
        "the kitchen counter has a kettle",
        "a red chair by the door",  # an exact duplicate: counts as weight, appears once
        "a kettle on the counter",
        "a window over the sink",
        "the floor is tiled",
    ]
    summary = extractive_summary(texts, minilm.embed, max_sentences=3)
    sentences = [s for s in summary.split(". ") if s]
    assert 1 <= len(sentences) <= 3
    assert summary.count("red chair") == 1  # the near-duplicate was skipped
    assert summary.startswith("A red chair")  # the heaviest text is kept and order preserved
    assert summary != " ".join(texts)  # not a concatenation


def test_extractive_summary_uses_given_vectors_without_embedding() -> None:
    texts = ["alpha", "beta", "gamma"]
    vectors = np.eye(3, dtype=np.float32)

    def no_embedding(batch: list[str]) -> np.ndarray:
        raise AssertionError("stored vectors were given; nothing should be embedded")

    assert extractive_summary(texts, no_embedding, vectors=vectors, max_sentences=3) == (
        "Alpha. Beta. Gamma."
    )


def test_unique_texts_counts_duplicates_ignoring_case_and_spacing() -> None:
    distinct, counts, first = unique_texts(["A  cup.", "a cup", "a plate", ""])
    assert distinct == ["A cup.", "a plate"] and counts == [2, 1] and first == [0, 2]


def test_cross_layer_summary_tags_layers_and_names_what_they_agree_on(minilm) -> None:
    summary = cross_layer_summary(
        {
            "captions": ["a red chair by the door", "a kettle on the counter"],
            "detections": ["1 chair, 1 kettle", "1 fridge"],
        },
        minilm.embed,
    )
    assert summary.startswith("[captions] ") and "[detections] " in summary
    assert summary.endswith("Seen by 2 layers: chair, kettle.")


def test_fallback_llm_implements_the_protocol(minilm) -> None:
    fallback = FallbackLLM(minilm.embed)
    assert fallback.summarize(["a cup", "a cup", "a plate"]) == "A cup. A plate."
    assert fallback.synthesize({"a": ["x"], "b": ["y"]}) == "x y"  # tiny parts: no longer text
    assert [e.name for e in fallback.extract_entities(["1 cup"])] == ["cup"]


def test_think_blocks_and_code_fences_are_stripped() -> None:
    assert strip_thinking("<think>hmm, chairs</think> A chair.") == "A chair."
    assert strip_thinking("<think>never closed") == ""
    assert strip_thinking('```json\n{"entities": []}\n```') == '{"entities": []}'


def test_entity_json_is_parsed_with_one_based_observation_numbers() -> None:
    text = (
        '<think>ok</think>{"entities": [{"name": "red chair", "entity_type": "furniture", '
        '"confidence": 1.4, "observation": 2}, {"name": "", "observation": 1}, '
        '{"name": "ghost", "observation": 9}]}'
    )
    assert parse_entities_json(text, count=2) == [
        ExtractedEntity(name="red chair", entity_type="furniture", confidence=1.0, index=1)
    ]


def test_emem_style_entity_dicts_are_accepted() -> None:
    found = coerce_entities([{"name": "sofa", "type": "furniture", "confidence": None}], 1)
    assert found == [ExtractedEntity(name="sofa", entity_type="furniture", index=None)]


@pytest.mark.parametrize("text", ["", "entities: chair", '{"things": []}', "[1, 2"])
def test_unparseable_entity_answers_raise_backend_unavailable(text: str) -> None:
    with pytest.raises(BackendUnavailableError):
        parse_entities_json(text, count=1)
