"""The ten retrieval tools: every output section and empty case of API.md, interoception kept
out of perception, the planner actions. Real Kuzu, LanceDB and MiniLM."""

from __future__ import annotations

import re

import pytest
from graph_writes import archive_window, write_gist
from house import START
from sim_clock import SimClock

from emem_graph import InvalidInputError
from emem_graph.retrieval.formatting import format_time

OBSERVATION_LINE = re.compile(
    r"^\d+\. \[[\w]+\] \(-?\d+\.\d,-?\d+\.\d\) \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] .+$"
)
ENTITY_LINE = re.compile(r"^\d+\. \[entity/\w+\] \(-?\d+\.\d,-?\d+\.\d\) \[seen \d+x\] .+$")
GIST_LINE = re.compile(r"^\d+\. \[gist/[\w-]+\] \(-?\d+\.\d,-?\d+\.\d\) \[\d+ obs\] .+$")


def lines(text: str) -> list[str]:
    return text.splitlines()


# --- semantic_search -----------------------------------------------------------------------------


def test_semantic_search_mixes_observations_gists_and_entities(house):
    out = house.memory.semantic_search("the red chair", n_results=8)
    rows = lines(out)
    assert len(rows) == 8  # of the 9 perception memories (6 observations, 2 entities, 1 gist)
    assert [row.split(". ", 1)[0] for row in rows] == [str(i) for i in range(1, 9)]
    assert all(
        OBSERVATION_LINE.match(r) or ENTITY_LINE.match(r) or GIST_LINE.match(r) for r in rows
    )
    assert any(ENTITY_LINE.match(r) for r in rows)
    assert any(GIST_LINE.match(r) for r in rows)
    assert "red chair" in rows[0]


def test_semantic_search_never_shows_body_state_unless_asked(house):
    out = house.memory.semantic_search("battery level", n_results=50)
    assert "battery 9" not in out and "battery 8" not in out and "cpu 41C" not in out
    asked = house.memory.semantic_search("battery level", n_results=50, include_body_state=True)
    assert "[battery]" in asked and "battery 85%" in asked


def test_semantic_search_filters_by_layer_episode_time_and_area(house):
    mem = house.memory
    detections = lines(mem.semantic_search("chair", layer="detections"))
    assert any(". [detections]" in r for r in detections)
    assert not any(". [captions]" in r for r in detections)
    in_kitchen = mem.semantic_search("furniture", episode_id=house.kitchen_episode)
    assert "chair by the balcony" not in in_kitchen and "kitchen" in in_kitchen
    recent = mem.semantic_search("a cup", time_after="-2m")  # only the living room is that recent
    assert "red cup on the kitchen table" not in recent
    near = mem.semantic_search("anything", near_x=18.0, near_y=4.0, spatial_radius=2.0)
    assert "kitchen" not in near and "chair" in near
    with pytest.raises(InvalidInputError, match="near_x, near_y and spatial_radius"):
        mem.semantic_search("anything", near_x=1.0, near_y=1.0)


def test_semantic_search_on_an_empty_memory(make_memory):
    assert make_memory().semantic_search("anything") == "No results found."


# --- spatial_query -------------------------------------------------------------------------------


def test_spatial_query_lists_observations_nearest_first(house):
    rows = lines(house.memory.spatial_query(18.5, 4.0, radius=2.0))
    assert rows[0].endswith("a red chair by the balcony door")
    assert all(OBSERVATION_LINE.match(r) for r in rows)
    assert len(rows) == 3  # chair, detections, sofa; not the body state read there
    assert lines(house.memory.spatial_query(18.5, 4.0, radius=2.0, n_results=1)) == rows[:1]
    assert "[detections]" in house.memory.spatial_query(18.0, 4.0, layer="detections")
    with_body = house.memory.spatial_query(18.0, 4.0, radius=1.0, include_body_state=True)
    assert "battery 85%" in with_body


def test_spatial_query_empty_area(house):
    assert house.memory.spatial_query(500.0, 500.0) == "No observations found."


# --- temporal_query ------------------------------------------------------------------------------


def test_temporal_query_orders_newest_or_oldest(house):
    newest = [r.split("] ", 2)[-1] for r in lines(house.memory.temporal_query(n_results=2))]
    assert sorted(newest) == ["1 chair, 1 sofa", "a grey sofa with a blanket on it"]
    oldest = lines(house.memory.temporal_query(order="oldest", n_results=1))
    assert oldest == [
        f"1. [captions] (2.0,1.5) [{format_time(START)}] a red cup on the kitchen table"
    ]
    window = house.memory.temporal_query(time_after=START + 5, time_before=START + 15)
    assert sorted(r.split("] ", 2)[-1] for r in lines(window)) == [
        "2 cups, 1 appliance",
        "a silver coffee machine on the counter",
    ]
    assert "kitchen" not in house.memory.temporal_query(last_n_minutes=2)
    near = house.memory.temporal_query(near_x=2.0, near_y=2.0, spatial_radius=1.0)
    assert "chair" not in near and "2 cups" in near
    assert "battery" not in house.memory.temporal_query(n_results=50)


def test_temporal_query_empty_window(house):
    assert house.memory.temporal_query(time_before=START - 100) == "No observations found."


def test_temporal_query_falls_back_to_gists_when_observations_were_consolidated(make_memory):
    clock = SimClock(1000.0)
    mem = make_memory(clock=clock, maintenance_interval=None)
    mem.start_episode("tidy the shelf")
    for i in range(3):
        mem.add(f"a book on the shelf, number {i}", 1.0, 1.0, timestamp=1000.0 + i)
    mem.end_episode(wait=True)  # the library's consolidation writes the gist
    clock.advance(2 * mem.config.archive_after_seconds)
    assert mem.maintenance() >= 3  # archival drops the raw observations

    out = lines(mem.temporal_query(time_after=999.0, time_before=1003.0))

    assert out[0] == "(Observations consolidated — showing summaries)"
    assert len(out) > 1 and all(GIST_LINE.match(row) for row in out[1:])
    assert "book on the shelf" in out[1].lower()


def test_temporal_query_fallback_shows_hand_written_gists_too(make_memory):
    clock = SimClock(1000.0)
    mem = make_memory(clock=clock, maintenance_interval=None)
    ids = [mem.add(f"shelf item {i}", 1.0, 1.0, timestamp=1000.0 + i) for i in range(3)]
    write_gist(mem, "a shelf with three items", 1.0, 1.0, time_start=1000.0, time_end=1002.0,
               observation_ids=ids)  # fmt: skip
    archive_window(mem, 1000.0, 1002.0)
    out = lines(mem.temporal_query(time_after=999.0, time_before=1003.0))
    assert out == [
        "(Observations consolidated — showing summaries)",
        "1. [gist/cross-layer] (1.0,1.0) [3 obs] a shelf with three items",
    ]


# --- episode_summary -----------------------------------------------------------------------------


def test_episode_summary_last_by_name_and_by_id(house):
    last = lines(house.memory.episode_summary())
    assert len(last) == 2
    assert last[0].startswith("[patrol living room] (completed) ")
    assert last[0] != "[patrol living room] (completed) (no summary)"  # consolidation's gist
    assert last[1] == (
        f"  (5 observations from {format_time(START + 610)} to {format_time(START + 620)})"
    )
    both = house.memory.episode_summary(last_n=2)
    assert both.index("[patrol living room]") < both.index("[patrol kitchen]")
    assert lines(house.memory.episode_summary(task_name="KITCHEN"))[0].startswith(
        "[patrol kitchen] (completed)"
    )
    by_id = house.memory.episode_summary(episode_id=house.kitchen_episode)
    assert "(4 observations from" in by_id


def test_episode_summary_nothing_found(house, make_memory):
    assert house.memory.episode_summary(task_name="laundry") == "No episodes found."
    assert house.memory.episode_summary(episode_id="nope") == "No episodes found."
    assert make_memory().episode_summary() == "No episodes found."


# --- get_current_context -------------------------------------------------------------------------


def test_get_current_context_has_every_section_and_ends_with_body_status(house):
    out = lines(house.memory.get_current_context())
    assert out[0] == "Position: (18.0, 4.2)"
    assert out[1] == "Nearby (3.0m):"
    assert "  [captions] a red chair by the balcony door" in out  # the layer on each line
    assert "Nearby entities:" in out
    assert any(re.fullmatch(r"  - \[furniture\] red chair \(seen \d+x\)", row) for row in out)
    recent = out.index("Recent (5.0min):")
    assert "  [captions] (18.5,4.0) a red chair by the balcony door" in out[recent:]
    assert len(out) == len(set(out))  # no line twice
    body = out.index("Body Status:")
    assert body > recent
    assert out[body + 1 :] == [
        "  [battery] battery 85% (30s ago)",
        "  [cpu_temp] cpu 41C (30s ago)",
    ]
    assert not any("battery" in row for row in out[:body])


def test_get_current_context_area_summaries(house):
    # Nothing moves the robot to the kitchen, so ask the tools object with a wider radius.
    out = house.memory.get_current_context(radius=20.0, include_recent_minutes=1.0)
    assert "Area summaries:" in out
    assert "  - the kitchen: a red cup and a coffee machine" in lines(out)
    assert "Recent (1.0min):" in out


def test_get_current_context_on_an_empty_memory(make_memory):
    assert make_memory().get_current_context() == "No context available."


# --- search_gists --------------------------------------------------------------------------------


def test_search_gists_returns_only_gists(house):
    out = lines(house.memory.search_gists("coffee machine in the kitchen"))
    assert out and all(GIST_LINE.match(row) for row in out)
    assert "1. [gist/captions] (2.0,2.0) [2 obs] the kitchen: a red cup and a coffee machine" in out
    assert "chair" not in out[0]
    assert house.memory.search_gists("coffee", time_before=START - 1) == "No gists found."


def test_search_gists_on_a_memory_without_gists(make_memory):
    mem = make_memory()
    mem.add("a cup", 0.0, 0.0)
    assert mem.search_gists("cup") == "No gists found."


# --- entity_query --------------------------------------------------------------------------------


def test_entity_query_by_name_type_and_area(house):
    chairs = lines(house.memory.entity_query(name="CHAIR"))
    # Each entity's line (a moved one's history follows on an indented "moved:" line).
    chairs = [row for row in chairs if not row.startswith("   moved: ")]
    assert chairs and all(ENTITY_LINE.match(row) and "chair" in row for row in chairs)
    assert any(re.search(r"\[entity/furniture\] \(18\.\d,4\.\d\) \[seen \d+x\] red chair "
                         r"\[last seen \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\]$", row)
               for row in chairs)  # fmt: skip
    # The most recently confirmed first.
    seen = [re.findall(r"\[last seen (.+?)\]", row)[0] for row in chairs]
    assert seen == sorted(seen, reverse=True)
    assert "coffee machine" in house.memory.entity_query(entity_type="appliance")
    near = house.memory.entity_query(near_x=0.0, near_y=0.0, spatial_radius=5.0)
    assert "coffee machine" in near and "red chair" not in near
    assert house.memory.entity_query(name="unicorn") == "No entities found."
    assert house.memory.entity_query(last_seen_after=START + 10_000) == "No entities found."


# --- locate --------------------------------------------------------------------------------------


def test_locate_reports_location_radius_basis_and_top_hits(house):
    out = lines(house.memory.locate("the red chair by the balcony"))
    x, y, _ = (float(v) for v in re.match(r"Location: \((.+), (.+), (.+)\)", out[0]).groups())
    assert abs(x - 18.5) < 1.0 and abs(y - 4.0) < 1.0
    assert re.fullmatch(r"Radius: \d+\.\dm", out[1])
    assert re.fullmatch(r"Based on: \d+ memories \(.+\)", out[2])
    # What the memory says of the thing's stay (when it was last seen there, a missed look,
    # where it was before), then at most three evidence lines.
    notes = [row for row in out[3:] if not row.startswith("  [")]
    assert all(row.startswith(("Last seen there: ", "Not seen at ", "Moved from ", "Earlier: "))
               for row in notes), notes  # fmt: skip
    evidence = out[3 + len(notes) :]
    assert 1 <= len(evidence) <= 3 and all(row.startswith("  [") for row in evidence)


def test_locate_without_matches(make_memory):
    assert make_memory().locate("anything") == "Could not locate: no matching memories found."


# --- recall --------------------------------------------------------------------------------------


def test_recall_gathers_observations_summaries_and_entities(house):
    out = lines(house.memory.recall("the coffee machine in the kitchen"))
    assert re.fullmatch(
        r"About 'the coffee machine in the kitchen' — "
        r"location \(\d+\.\d, \d+\.\d\), radius \d+\.\dm:",
        out[0],
    )
    assert out.index("Observations:") < out.index("Summaries:") < out.index("Entities:")
    assert "  [captions] the kitchen: a red cup and a coffee machine" in out
    assert any(re.fullmatch(r"  \[appliance\] coffee machine \(seen \d+x\)", row) for row in out)
    assert not any("battery" in row for row in out)


def test_recall_links_entities_through_their_sightings(house):
    out = house.memory.recall("red chair by the balcony door")
    assert any(re.fullmatch(r"  \[furniture\] red chair \(seen \d+x\)", row) for row in lines(out))


def test_recall_without_matches(make_memory):
    assert make_memory().recall("the attic") == "No memories found for: the attic"


# --- body_status ---------------------------------------------------------------------------------


def test_body_status_latest_reading_per_layer(house):
    assert lines(house.memory.body_status()) == [
        "Body Status:",
        "  [battery] battery 85% (30s ago)",
        "  [cpu_temp] cpu 41C (30s ago)",
    ]
    assert lines(house.memory.body_status(layers=["cpu_temp"]))[1:] == [
        "  [cpu_temp] cpu 41C (30s ago)"
    ]


def test_body_status_ages_and_archived_text(make_memory):
    clock = SimClock(0.0)
    mem = make_memory(clock=clock)
    assert mem.body_status() == "No body state data available."
    mem.add_body_state("battery 70%", "battery")
    clock.advance(100)
    mem.add_body_state("battery 60%", "battery")
    clock.advance(2 * 3600)
    assert mem.body_status() == "Body Status:\n  [battery] battery 60% (2.0h ago)"
    archive_window(mem, 50.0, 150.0)
    assert mem.body_status() == "Body Status:\n  [battery] battery 70% (2.0h ago)"
    clock.now = 160.0
    assert mem.body_status() == "Body Status:\n  [battery] battery 70% (3min ago)"


# --- planner actions -----------------------------------------------------------------------------


def test_store_specific_memory_at_the_current_position_is_searchable(make_memory):
    mem = make_memory(maintenance_interval=None)
    mem.add("a doorway", 4.0, 5.0)
    out = mem.store_specific_memory("the keys are in the blue bowl")
    assert out.startswith("Stored memory ") and "[agent_notes] at (4.0, 5.0, 0.0)" in out
    assert "[agent_notes] (4.0,5.0)" in mem.semantic_search("where are my keys?", n_results=3)
    mem.store_specific_memory("the charger is in the garage", layer_name="notes", x=30.0, y=1.0)
    assert mem.current_position.tolist() == [4.0, 5.0, 0.0]  # a note is not a perception
    assert "(30.0,1.0)" in mem.spatial_query(30.0, 1.0)


def test_planner_episode_actions_through_dispatch(make_memory):
    mem = make_memory()
    assert mem.dispatch_tool_call("end_episode", {}) == "No active episode."
    started = mem.dispatch_tool_call("start_episode", {"name": "tidy up"})
    assert started.startswith("Started episode 'tidy up' (id ")
    assert mem.active_episode_id is not None and mem.active_episode_id in started
    mem.add("a sock on the floor", 1.0, 1.0)
    assert mem.dispatch_tool_call("end_episode", {}).startswith("Ended episode 'tidy up'")
    assert "(1 observations from" in mem.episode_summary()


def test_every_tool_flushes_first(make_memory):
    mem = make_memory(flush_batch_size=1000, flush_interval=1e6)
    mem.add("a blue bicycle in the hall", 3.0, 3.0)
    assert "bicycle" in mem.spatial_query(3.0, 3.0)
