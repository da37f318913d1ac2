"""Objects move: the tools answer the present first. A red cup seen five times on
the kitchen table at (1, 1), then an hour later three times in the bathroom sink at (12, 9),
on a real memory (Kuzu, LanceDB, MiniLM): locate answers the sink and says where it was
before, entity_query lists one cup with its history, recall says which sightings are current,
a time argument (or time words) answers where it was then, and a later look at the sink that
missed it is said."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from emem_graph.retrieval import history
from emem_graph.retrieval.formatting import format_time
from emem_graph.retrieval.schemas import tool_definitions

T = 1_000_000.0
HOUR = 3600.0
QUIET = {
    "maintenance_interval": None,
    "entity_extraction": False,
}
LOCATION = re.compile(r"^Location: \((-?[\d.]+), (-?[\d.]+), (-?[\d.]+)\)", re.MULTILINE)


def location(text: str) -> tuple[float, float]:
    match = LOCATION.search(text)
    assert match, text
    return float(match.group(1)), float(match.group(2))


def moved_cup(make_memory: Any, clock_at: float = T + 2 * HOUR) -> tuple[Any, str]:
    """The red cup: 5 sightings on the kitchen table (T .. T+240), 3 in the bathroom sink an
    hour later (T+1h .. T+1h+120); the table and the sink are entities of their own."""
    mem = make_memory(clock=lambda: clock_at, **QUIET)
    mem.add_entity("kitchen table", 1.5, 1.5, timestamp=T - 600, entity_type="furniture")
    mem.add_entity("bathroom sink", 12.5, 9.5, timestamp=T - 600, entity_type="fixture")
    mem.add("a kitchen table with chairs", 1.5, 1.5, timestamp=T - 600)
    cup = mem.add_entity("red cup", 1.0, 1.0, timestamp=T)
    for i in range(5):
        x = 1.0 + 0.05 * i
        mem.add("a red cup on the kitchen table", x, 1.0, timestamp=T + 60 * i)
        if i:
            assert mem.add_entity("red cup", x, 1.0, timestamp=T + 60 * i) == cup
    for i in range(3):
        t = T + HOUR + 60 * i
        mem.add("a red cup in the bathroom sink", 12.0, 9.0, timestamp=t)
        assert mem.add_entity("red cup", 12.0, 9.0, timestamp=t) == cup
    mem.flush()
    return mem, cup


def test_locate_answers_the_current_stay_and_says_where_it_was_before(make_memory: Any) -> None:
    mem, _ = moved_cup(make_memory)
    answer = mem.locate("red cup")
    x, y = location(answer)
    assert math.dist((x, y), (12.0, 9.0)) <= 1.0, answer  # not the table, not the midpoint
    assert f"Last seen there: {format_time(T + HOUR + 120)}" in answer
    assert "(red cup near bathroom sink, 3 sightings at this position" in answer
    assert f"Moved from (1.1, 1.0) near kitchen table at {format_time(T + HOUR)}" in answer
    assert f"(5 sightings there, {format_time(T)}–{format_time(T + 240)[11:]})" in answer
    assert "Not seen at its last position" not in answer  # nobody looked at the sink since
    # The old sightings do not vote: the evidence listed is the sink's.
    assert "kitchen table" not in answer.split("Moved from")[0]


def test_entity_query_lists_one_cup_most_recent_first_with_its_history(make_memory: Any) -> None:
    mem, _ = moved_cup(make_memory)
    for i in range(10):  # seen more often than the cup, but last seen before it
        mem.add_entity("red cup holder", 3.0, 3.0, timestamp=T + 30 + i)
    answer = mem.entity_query(name="red cup")
    lines = answer.splitlines()
    assert lines[0].startswith("1. [entity/object] (12.0,9.0) [seen 8x] red cup"), answer
    assert f"[last seen {format_time(T + HOUR + 120)}]" in lines[0]
    assert lines[1].strip() == (
        f"moved: now at (12.0, 9.0) since {format_time(T + HOUR)}; before: (1.1, 1.0) "
        f"{format_time(T)}–{format_time(T + 240)[11:]}"
    )
    assert lines[2].startswith("2. ") and "red cup holder" in lines[2]
    assert answer.count("] red cup [") == 1  # one red cup, not two
    assert "stale" not in answer


def test_recall_marks_the_current_sightings(make_memory: Any) -> None:
    mem, _ = moved_cup(make_memory)
    answer = mem.recall("where is the red cup now")
    assert "location (12.0, 9.0)" in answer, answer
    current = answer.split("Current sightings")[1]
    assert current.startswith(f" (red cup is here now: since {format_time(T + HOUR)}")
    assert "a red cup in the bathroom sink (x3)" in current
    assert "on the kitchen table" not in answer.split("Entities")[0]
    assert f"now at (12.0, 9.0) since {format_time(T + HOUR)}; before: (1.1, 1.0)" in answer


def test_a_time_before_the_move_answers_the_old_place(make_memory: Any) -> None:
    mem, _ = moved_cup(make_memory)
    for when in (T + 120, str(T + 1800), "90 minutes ago"):
        answer = mem.locate("red cup", at_time=when)
        assert math.dist(location(answer), (1.1, 1.0)) <= 0.5, (when, answer)
        assert "was at (1.1, 1.0) near kitchen table (5 sightings" in answer
        assert "Now: at (12.0, 9.0)" in answer
    # After the move, the sink; before the first sighting, the first place, said so.
    assert math.dist(location(mem.locate("red cup", at_time=T + HOUR + 30)), (12, 9)) <= 0.5
    early = mem.locate("red cup", at_time=T - 60)
    assert math.dist(location(early), (1.1, 1.0)) <= 0.5 and "Not seen before" in early
    # Time words in the concept do the same.
    clock = format_time(T + 120)[11:16]
    worded = mem.locate(f"where was the red cup at {clock}?")
    assert math.dist(location(worded), (1.1, 1.0)) <= 0.5, worded
    before = mem.locate("where was the red cup before")
    assert math.dist(location(before), (1.1, 1.0)) <= 0.5, before
    assert "Before its current position" in before


def test_a_look_at_the_sink_that_missed_the_cup_is_said(make_memory: Any) -> None:
    mem, _ = moved_cup(make_memory)
    looked = T + HOUR + 600
    mem.add("a bathroom sink with a towel", 12.3, 9.2, timestamp=looked)
    mem.add("white tiles", 11.5, 8.8, timestamp=looked - 200)
    mem.add("a mirror", 12.0, 9.0, timestamp=T + HOUR + 125)  # too soon after: not absence
    mem.flush()
    answer = mem.locate("red cup")
    assert f"Not seen at its last position at {format_time(looked)}" in answer, answer
    assert math.dist(location(answer), (12.0, 9.0)) <= 1.0
    listed = mem.entity_query(name="red cup")
    assert f"[stale: not seen at its last position at {format_time(looked)}]" in listed
    assert f"Not seen at its last position at {format_time(looked)}" in mem.recall("red cup")


def test_a_thing_that_never_moved_is_answered_as_before(make_memory: Any) -> None:
    mem = make_memory(clock=lambda: T + HOUR, **QUIET)
    for i in range(3):
        mem.add("a green kettle on the stove", 4.0, 2.0, timestamp=T + 60 * i)
        mem.add_entity("green kettle", 4.0, 2.0, timestamp=T + 60 * i)
    answer = mem.locate("green kettle")
    assert math.dist(location(answer), (4.0, 2.0)) <= 0.5
    assert f"Last seen there: {format_time(T + 120)}" in answer
    assert "Moved from" not in answer and "moved:" not in mem.entity_query(name="kettle")


def test_at_time_is_in_the_schema_the_dispatcher_and_the_ros_service(make_memory: Any) -> None:
    from ros_bridge.services import request_to_arguments
    from ros_bridge.srv_files import srv_definition

    (locate,) = [d for d in tool_definitions() if d["function"]["name"] == "locate"]
    assert "at_time" in locate["function"]["parameters"]["properties"]
    mem, _ = moved_cup(make_memory)
    text = mem.dispatch_tool_call("locate", {"concept": "red cup", "at_time": T + 60})
    assert math.dist(location(text), (1.1, 1.0)) <= 0.5, text
    bad = mem.dispatch_tool_call("locate", {"concept": "red cup", "at_time": "teatime"})
    assert bad.startswith("Error:") and "at_time" in bad
    assert "at_time" in [f.name for f in srv_definition("Locate").request]

    class Request:
        concept = "red cup"
        n_results = 10
        layer = ""
        time_after = ""
        time_before = ""
        at_time = "10:00"

    assert request_to_arguments("Locate", Request())[1] == {
        "concept": "red cup",
        "n_results": 10,
        "at_time": "10:00",
    }
    Request.at_time = ""
    assert "at_time" not in request_to_arguments("Locate", Request())[1]


@pytest.mark.parametrize(
    ("concept", "searched", "before"),
    [
        ("where was the red cup at 10:00", "the red cup", False),
        ("where was the red cup before?", "the red cup", True),
        ("red cup 2 hours ago", "red cup", False),
        ("red cup", "red cup", False),
    ],
)
def test_time_words_of_a_concept(concept: str, searched: str, before: bool) -> None:
    now = 86_400.0 * 100 + 11 * HOUR
    question = history.asked(concept, now)
    assert (question.concept, question.before) == (searched, before)
    if "10:00" in concept:
        assert question.at == 86_400.0 * 100 + 10 * HOUR
    elif "ago" in concept:
        assert question.at == now - 2 * HOUR
    else:
        assert question.at is None
    # A clock time later than now is yesterday's.
    assert history.parse_at_time("12:00", now) == 86_400.0 * 99 + 12 * HOUR


@pytest.mark.parametrize("value", ["99:99", "25:00", "23:59:60", "1e308", "-1e308", "nan", ""])
def test_an_impossible_at_time_is_one_clear_error(make_memory: Any, value: str) -> None:
    from emem_graph.errors import InvalidInputError

    mem, _ = moved_cup(make_memory)
    with pytest.raises(InvalidInputError) as refused:
        mem.locate("red cup", at_time=value)
    assert "\n" not in str(refused.value) and "at_time" in str(refused.value)
    answer = mem.dispatch_tool_call("locate", {"concept": "red cup", "at_time": value})
    assert answer.startswith("Error:") and "\n" not in answer, answer


@pytest.mark.parametrize(
    "concept", ["red cup at 99:99", "red cup 99999999999999999999999 days ago", "red cup at 24:00"]
)
def test_words_that_only_look_like_a_time_are_searched_as_words(
    make_memory: Any, concept: str
) -> None:
    mem, _ = moved_cup(make_memory)
    assert history.asked(concept, T).at is None
    x, y = location(mem.locate(concept))
    assert math.dist((x, y), (12.0, 9.0)) <= 1.0


def test_the_spatial_tools_do_not_take_the_old_place_for_an_instance(make_memory: Any) -> None:
    """route_query and directional_query list the distinct instances of a thing: the texts on
    the kitchen table from before the cup was carried away are not a second cup."""
    mem, cup = moved_cup(make_memory)
    found = mem.places.candidates("red cup")
    assert found and found[0].record.id == cup
    positions = [(c.record.x, c.record.y) for c in found]
    assert not any(math.dist(p, (1.0, 1.0)) <= 1.5 for p in positions), positions


def test_entity_query_answers_follow_every_change_after_being_asked(make_memory: Any) -> None:
    """entity_query keeps each entity's line while the entity and its stays are the same
    objects: asked before and after each change, the answer is the one a fresh memory of the
    same sightings gives (seen again, moved, a look that missed it)."""
    mem, cup = moved_cup(make_memory)

    def cup_lines() -> list[str]:
        answer = mem.entity_query(name="red cup")
        assert answer == mem.entity_query(name="red cup")  # asked twice: the same text
        return answer.splitlines()

    first = cup_lines()
    assert first[0].startswith("1. [entity/object] (12.0,9.0) [seen 8x] red cup")
    # Seen again in the sink: count and last seen change, no move.
    assert mem.add_entity("red cup", 12.0, 9.0, timestamp=T + HOUR + 300) == cup
    mem.flush()
    again = cup_lines()
    assert "[seen 9x] red cup" in again[0]
    assert f"[last seen {format_time(T + HOUR + 300)}]" in again[0]
    assert again[1] == first[1]  # the same two stays
    # Moved to the hallway: a third stay, the line's history grows.
    for i in range(3):
        t = T + HOUR + 1200 + 60 * i
        assert mem.add_entity("red cup", 30.0, 2.0, timestamp=t) == cup
    mem.flush()
    moved = cup_lines()
    assert moved[0].startswith("1. [entity/object] (30.0,2.0) [seen 12x] red cup"), moved
    assert (
        moved[1]
        .strip()
        .startswith(f"moved: now at (30.0, 2.0) since {format_time(T + HOUR + 1200)}")
    )
    assert "(12.0, 9.0)" in moved[1] and "(1.1, 1.0)" in moved[1]
    assert "stale" not in moved[0]
    # A later look at the hallway that missed it: marked stale, the rest of the line kept.
    looked = T + HOUR + 1320 + 700
    mem.add("an empty hallway floor", 30.2, 2.1, timestamp=looked)
    mem.flush()
    stale = cup_lines()
    assert (
        stale[0] == moved[0] + f" [stale: not seen at its last position at {format_time(looked)}]"
    )


def test_entity_query_keeps_a_bounded_number_of_lines_and_answers_alike(
    make_memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept lines start over past their character budget (a thing that moved often has a
    long history line); the answers do not change."""
    from emem_graph.retrieval import tools as tools_module

    mem, _ = moved_cup(make_memory)
    names = ["red cup", "kitchen table", "bathroom sink", "cup", "table"]
    before = [mem.entity_query(name=name) for name in names]
    monkeypatch.setattr(tools_module, "ENTITY_LINES_CHARS", 150)
    mem.tools._entity_lines.clear()  # kept under the default budget: start under the small one
    mem.tools._entity_line_chars = 0
    for _ in range(3):
        assert [mem.entity_query(name=name) for name in names] == before
        kept = mem.tools._entity_lines
        assert sum(len(line) + len(moved) for _, _, (_, line, moved) in kept.values()) <= 150


def test_the_writer_makes_the_lines_of_the_entities_it_wrote(
    make_memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a write of entity sightings the flush makes their entity_query lines (a name's
    first question then reads kept lines): a question after the move makes none, and its
    answer is the one made from nothing kept."""
    from emem_graph.retrieval import tools as tools_module

    mem, cup = moved_cup(make_memory)
    kept = mem.tools._entity_lines
    current = mem.store.entities.find(name="red cup", shared=True)[0]
    assert kept[cup][0] is current  # made by the writer: nothing was asked yet
    for i in range(3):  # moved to the hallway
        assert mem.add_entity("red cup", 30.0, 2.0, timestamp=T + HOUR + 1200 + 60 * i) == cup
    mem.flush()
    assert kept[cup][0] is mem.store.entities.find(name="red cup", shared=True)[0]
    made: list[bool] = []
    line = tools_module.RetrievalTools._entity_line

    def spy(self: Any, entity: Any, own: Any) -> Any:
        result = line(self, entity, own)
        made.append(result[3])
        return result

    monkeypatch.setattr(tools_module.RetrievalTools, "_entity_line", spy)
    answer = mem.entity_query(name="red cup")
    assert made == [False], made
    assert "now at (30.0, 2.0)" in answer
    kept.clear()
    mem.tools._entity_line_chars = 0
    assert mem.entity_query(name="red cup") == answer  # made from nothing kept: the same
    assert made == [False, True]
