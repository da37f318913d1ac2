"""The user profile's API refuses bad input with one InvalidInputError line and writes nothing:
a str where a list is meant (not read letter by letter), None and numbers, items of the wrong
type, whole numbers that are not, text over max_text_chars."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from emem_graph import SpatioTemporalMemory
from emem_graph.errors import InvalidInputError
from emem_graph.profile import ObjectSpec, UserProfile

LIMIT = 200
"""max_text_chars of the memories here: small, so the over-long texts are cheap."""


@contextmanager
def _memory(tmp_path: Path, **fields: Any) -> Iterator[SpatioTemporalMemory]:
    config = {"embedding_provider": "hashing", "max_text_chars": LIMIT, **fields}
    with SpatioTemporalMemory(str(tmp_path / "mem"), config=config) as memory:
        yield memory


def _stored(profile: UserProfile) -> dict[str, Any]:
    """What the profile holds, without the vectors: users, knowledge, objects, places."""
    snapshot = profile.snapshot()
    return {
        "users": dict(snapshot.users),
        "knowledge": sorted(
            (k.id, k.user_id, k.alias, k.description, k.content, k.updated_at, tuple(k.object_ids))
            for k in snapshot.knowledge.values()
        ),
        "patterns": sorted(
            (p.id, p.step, p.text) for k in snapshot.knowledge.values() for p in k.patterns
        ),
        "objects": sorted((o.id, o.name) for o in snapshot.objects.values()),
        "locations": sorted((p.id, p.name) for p in snapshot.locations.values()),
    }


def _refused(call: Callable[[], Any], match: str) -> str:
    with pytest.raises(InvalidInputError, match=match) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_str_for_objects_is_refused_not_stored_letter_by_letter(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        message = _refused(
            lambda: p.add_object_semantics("alex", "my mug", "cup"), "objects must be a list"
        )
        assert "got str" in message and "['yellow cup']" in message
        for wrong in (b"cup", {"name": "cup"}, {"cup"}, ObjectSpec(name="cup")):
            _refused(
                lambda wrong=wrong: p.add_object_semantics("alex", "my mug", wrong),
                "objects must be a list",
            )
        assert p.snapshot().objects == {}


def test_a_str_for_steps_is_refused_not_parsed_letter_by_letter(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        _refused(
            lambda: p.add_user_pattern("alex", "my evening", "move the candle to the table"),
            "steps must be a list, got str",
        )
        _refused(
            lambda: p.add_user_pattern("alex", "my evening", {"action": "move"}),
            "steps must be a list, got dict",
        )
        assert p.snapshot().knowledge == {}


@pytest.mark.parametrize("wrong", [None, 5, 2.5])
def test_objects_and_steps_that_are_not_lists_are_refused(tmp_path, wrong):
    with _memory(tmp_path) as memory:
        p = memory.profile
        _refused(lambda: p.add_object_semantics("alex", "my mug", wrong), "objects must be a")
        _refused(lambda: p.add_user_pattern("alex", "my evening", wrong), "steps must be a")


def test_items_of_the_wrong_type_or_empty_are_refused_by_position(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        _refused(
            lambda: p.add_object_semantics("alex", "my mug", ["red cup", 5]),
            r"objects\[1\] must be a name, an ObjectSpec or a dict, got int",
        )
        _refused(
            lambda: p.add_object_semantics("alex", "my mug", [None]),
            r"objects\[0\] must be a name",
        )
        _refused(
            lambda: p.add_object_semantics("alex", "my mug", ["red cup", "  "]),
            r"objects\[1\] must not be empty",
        )
        _refused(
            lambda: p.add_object_semantics("alex", "my mug", [{"name": 7}]),
            r"objects\[0\]",
        )
        _refused(
            lambda: p.add_user_pattern("alex", "my evening", ["move the candle to the table", 3]),
            r"steps\[1\] must be a phrase, a StepSpec or a dict, got int",
        )
        _refused(
            lambda: p.add_user_pattern("alex", "my evening", [""]), r"steps\[0\] must not be empty"
        )
        assert p.snapshot().knowledge == {}


def test_alias_user_and_description_must_be_text(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        _refused(lambda: p.add_object_semantics("alex", None, ["cup"]), "alias must be a string")
        _refused(lambda: p.add_user_pattern("alex", 5, ["open the blinds"]), "alias must be")
        _refused(lambda: p.add_object_semantics(None, "my mug", ["cup"]), "user must be")
        for wrong in (5, 0, False, ["a sentence"]):
            _refused(
                lambda wrong=wrong: p.add_object_semantics("alex", "my mug", ["cup"], wrong),
                "description must be a string",
            )
        assert p.snapshot().knowledge == {}


@pytest.mark.parametrize("alias", [None, 5, "", ["my mug"]])
def test_remove_refuses_an_alias_that_is_not_text(tmp_path, alias):
    with _memory(tmp_path) as memory:
        memory.profile.add_object_semantics("alex", "my mug", ["red cup"])
        _refused(lambda: memory.profile.remove("alex", alias), "alias must")
        assert [k.alias for k in memory.profile.knowledge("alex")] == ["my mug"]


@pytest.mark.parametrize(
    ("k", "match"),
    [
        (2.5, "k must be a whole number, got float"),
        (math.nan, "k must be a whole number, got float"),
        (3.0, "k must be a whole number, got float"),
        (True, "k must be a whole number, got bool"),
        ("3", "k must be a whole number, got str"),
        (None, "k must be a whole number, got NoneType"),
        (0, "k must be at least 1, got 0"),
        (-1, "k must be at least 1, got -1"),
    ],
)
def test_search_refuses_k_that_is_not_a_whole_number_of_at_least_one(tmp_path, k, match):
    with _memory(tmp_path) as memory:
        memory.profile.add_object_semantics("alex", "my mug", ["red cup"])
        _refused(lambda: memory.profile.search("my mug", k=k), match)
        assert len(memory.profile.search("my mug", k=1)) == 1


def test_search_and_knowledge_refuse_a_query_or_user_that_is_not_text(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        _refused(lambda: p.search(None), "query must be a string")
        _refused(lambda: p.search("  "), "query must not be empty")
        _refused(lambda: p.search("my mug", user=5), "user must be")
        _refused(lambda: p.knowledge(5), "user must be")


def test_ground_refuses_only_that_is_not_a_set_of_ids(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        p.add_object_semantics("alex", "my mug", ["red cup"])
        _refused(lambda: p.ground(only="abc"), "only must be a set of ids, got str")
        _refused(lambda: p.ground(only=5), "only must be a set of ids, got int")
        _refused(lambda: p.ground(only={5}), r"only must hold ids \(strings\), got a int")
        _refused(lambda: p.ground(all_objects="false"), "all_objects must be True or False")
        assert p.ground(only={next(iter(p.snapshot().objects))}) == 0


def test_current_user_must_be_a_user_name(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        for wrong in (5, " ", "x" * (LIMIT + 1)):
            with pytest.raises(InvalidInputError):
                p.current_user = wrong
        assert p.current_user is None
        p.current_user = "Alex"
        assert p.current_user == "Alex"


def test_texts_over_max_text_chars_are_refused(tmp_path):
    long = "x" * (LIMIT + 1)
    with _memory(tmp_path) as memory:
        p = memory.profile
        calls = [
            (lambda: p.add_object_semantics("alex", "my " + long, ["cup"]), "alias has"),
            (lambda: p.add_object_semantics("alex", "my mug", ["cup"], long), "description has"),
            (lambda: p.add_object_semantics("alex", "my mug", ["cup " + long]), r"objects\[0\]"),
            (lambda: p.add_object_semantics(long, "my mug", ["cup"]), "user has"),
            (
                lambda: p.add_object_semantics("alex", "my mug", [{"name": "cup " + long}]),
                r"objects\[0\].name has",
            ),
            (
                lambda: p.add_object_semantics(
                    "alex", "my mug", [ObjectSpec(name="cup", attributes=[long])]
                ),
                r"objects\[0\].attributes\[0\] has",
            ),
            (lambda: p.add_user_pattern("alex", "my evening", ["move " + long]), r"steps\[0\]"),
            (
                lambda: p.add_user_pattern(
                    "alex",
                    "my evening",
                    [{"action": "move", "object": "candle", "location": {"name": long}}],
                ),
                r"steps\[0\].arguments\[1\].name has",
            ),
            (lambda: p.update_from_instruction(f"{long} is my mug", "alex"), "instruction has"),
            (lambda: p.remove("alex", long), "alias has"),
            (lambda: p.search(long), "query has"),
        ]
        for call, match in calls:
            message = _refused(call, match)
            assert f"the limit is {LIMIT}" in message
        assert p.snapshot().knowledge == {}
        at_limit = "x" * (LIMIT - 3)
        assert p.add_object_semantics("alex", "my " + at_limit, ["cup"]).action == "added"


def test_a_refused_call_leaves_the_stored_profile_unchanged(tmp_path):
    with _memory(tmp_path) as memory:
        p = memory.profile
        p.add_object_semantics("alex", "my mug", ["red cup"], "the red cup is my mug")
        p.add_user_pattern("alex", "my evening", ["move the candle to the table"])
        before = _stored(p)
        refused = [
            lambda: p.add_object_semantics("alex", "my mug", "cup"),
            lambda: p.add_object_semantics("alex", "my mug", ["blue cup", 5]),
            lambda: p.add_object_semantics("alex", "my mug", ["blue cup"], 0),
            lambda: p.add_object_semantics("alex", "my mug", ["x" * (LIMIT + 1)]),
            lambda: p.add_user_pattern("alex", "my evening", "bring the blanket to the sofa"),
            lambda: p.add_user_pattern("alex", "my evening", ["bring the blanket", None]),
            lambda: p.add_user_pattern("alex", "my evening", None),
            lambda: p.remove("alex", None),
            lambda: p.remove("alex", 5),
        ]
        for call in refused:
            with pytest.raises(InvalidInputError):
                call()
            assert _stored(p) == before
        assert p.search("my mug", k=1)[0].knowledge.alias == "my mug"
