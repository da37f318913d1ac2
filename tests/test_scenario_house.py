"""Three episodes over a simulated house (kitchen, hallway, living room) with detections and
captions, played through a real memory (Kuzu, LanceDB, MiniLM, no LLM: the built-in fallbacks):
every episode gets gists, each real object is one entity with the right sighting count and
co-occurrences, body state never leaks into gists or entities, and archived episodes stay
findable through their gists."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from emem_graph import SpatioTemporalMemory
from emem_graph.consolidation import reads
from emem_graph.evals import consolidation as evaluate
from emem_graph.evals.scenarios import Scenario, house_scenario

QUIET = {
    "maintenance_interval": None,  # maintenance runs only when the test calls it
    "entity_extract_flush_interval": 10_000,
    "entity_extract_time_interval": 1e9,  # entities are extracted when an episode ends
}


def play_house(make_memory: Any) -> tuple[SpatioTemporalMemory, Scenario, Any, Any]:
    scenario = house_scenario()
    clock = evaluate.ScenarioClock()
    memory = make_memory(clock=clock, **QUIET)
    played = evaluate.play(memory, scenario, clock)
    return memory, scenario, clock, played


def gists_of(memory: SpatioTemporalMemory, episode_id: str) -> list[dict[str, Any]]:
    return memory.store.graph.query_text(
        "MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation) WHERE g.episode_id = $e "
        "RETURN g.id AS id, g.text AS text, count(o) AS edges",
        {"e": episode_id},
    )


def observed_in(memory: SpatioTemporalMemory, entity_id: str) -> list[dict[str, Any]]:
    return memory.store.graph.query_text(
        "MATCH (e:Entity {id: $id})-[:OBSERVED_IN]->(o:Observation) "
        "RETURN o.id AS id, o.episode_id AS episode_id",
        {"id": entity_id},
    )


def test_every_house_episode_is_summarized_by_gists_of_its_perception_only(
    make_memory: Any,
) -> None:
    memory, scenario, _, played = play_house(make_memory)

    for plan, episode_id in zip(scenario.episodes, played.episode_ids, strict=True):
        episode = memory.store.get_episode(episode_id)
        assert episode is not None and episode.status == "completed"
        assert episode.gist, f"episode {plan.name!r} has no summary"
        gists = gists_of(memory, episode_id)
        assert gists and all(g["text"] for g in gists), plan.name
        perception = sum(1 for s in plan.steps if not s.body_state)
        assert sum(g["edges"] for g in gists) == perception  # body state is never summarized
        observations = memory.store.get_episode_observations(episode_id)
        assert {o.tier for o in observations if not o.is_body_state} == {"long_term"}
        assert {o.tier for o in observations if o.is_body_state} == {"short_term"}
    # The evening patrol pauses longer than consolidation_window: one gist per chunk.
    assert [len(gists_of(memory, e)) for e in played.episode_ids] == [1, 1, 2]


def test_each_house_object_is_one_entity_with_its_sightings_and_cooccurrences(
    make_memory: Any,
) -> None:
    memory, scenario, _, played = play_house(make_memory)
    report = evaluate.entity_report(memory, scenario, played)

    assert report.objects_seen == len(scenario.objects)
    assert report.duplicate_rate == 0.0
    assert report.false_merge_rate == 0.0
    assert report.merged_objects == 0
    assert report.attributed_sightings == report.sightings  # every sighting names one object
    assert report.sightings == sum(scenario.sightings().values())
    assert all(len(ids) == 1 for ids in report.entity_of.values())
    entity_of = {key: ids[0] for key, ids in report.entity_of.items()}
    object_of = {entity_id: key for key, entity_id in entity_of.items()}
    for key, expected in scenario.sightings().items():
        assert report.counts[entity_of[key]] == expected, key

    # The red chair, seen in all three episodes, is one entity counted once per sighting.
    red = memory.store.get_entity(entity_of["red_chair"])
    assert red is not None and red.name == "red chair"
    assert red.observation_count == scenario.sightings()["red_chair"]
    assert {row["episode_id"] for row in observed_in(memory, red.id)} == set(played.episode_ids)
    # The blue chair, 10 m away, is another entity, placed at its own object.
    blue = memory.store.get_entity(entity_of["blue_chair"])
    assert blue is not None and blue.id != red.id and blue.name == "blue chair"
    assert math.hypot(red.x - 2.0, red.y - 2.0) < 1.0
    assert math.hypot(blue.x - 12.0, blue.y - 2.0) < 1.0

    # COOCCURS_WITH counts are the scenario's pair counts, one edge per pair.
    stored = reads.cooccurrence_counts(memory.store)
    as_objects: Counter[frozenset[str]] = Counter()
    for (a, b), count in stored.items():
        assert a < b  # stored from the smaller id to the larger
        as_objects[frozenset((object_of[a], object_of[b]))] += count
    assert len(as_objects) == len(stored)
    assert as_objects == scenario.cooccurrences()
    [table] = memory.store.graph.query("cooccurring_entities", {"id": red.id, "limit": 10})
    assert table["id"] == entity_of["table"]
    assert table["count"] == scenario.cooccurrences()[frozenset(("red_chair", "table"))]


def test_body_state_never_reaches_gists_or_entities(make_memory: Any) -> None:
    memory, scenario, _, played = play_house(make_memory)
    assert any(s.body_state and "battery" in s.text for s in scenario.steps)

    gist_texts = [
        r["text"] for r in memory.store.graph.query_text("MATCH (g:Gist) RETURN g.text AS text")
    ]
    episode_texts = [memory.store.get_episode(e).gist for e in played.episode_ids]
    names = [
        r["name"] for r in memory.store.graph.query_text("MATCH (e:Entity) RETURN e.name AS name")
    ]
    assert gist_texts and names
    for text in [*gist_texts, *episode_texts, *names]:
        assert "battery" not in text.lower() and "%" not in text
    body_ids = memory.store.graph.query_text(
        "MATCH (e:Entity)-[:OBSERVED_IN]->(o:Observation) "
        "WHERE o.source_type = 'interoception' RETURN o.id AS id"
    )
    assert body_ids == []


def test_archived_house_episode_stays_findable_through_its_gist(make_memory: Any) -> None:
    memory, scenario, clock, played = play_house(make_memory)
    first = played.episode_ids[0]
    perception = [o for o in memory.store.get_episode_observations(first) if not o.is_body_state]
    body = [o for o in memory.store.get_episode_observations(first) if o.is_body_state]
    assert memory.store.vectors.existing_ids([o.id for o in perception])  # indexed before

    # Archival takes exactly the long-term observations older than archive_after_seconds.
    cutoff = clock.now - memory.config.archive_after_seconds
    old = sum(1 for s in scenario.steps if not s.body_state and s.t < cutoff)
    evening = scenario.episodes[-1].steps
    assert old > 0 and all(s.t >= cutoff for s in evening)
    assert memory.maintenance() == old
    clock.now += memory.config.archive_after_seconds + 1.0
    assert memory.maintenance() == sum(1 for s in evening if not s.body_state)
    assert memory.maintenance() == 0

    after = {o.id: o for o in memory.store.get_episode_observations(first)}
    assert {after[o.id].tier for o in perception} == {"archived"}
    assert {after[o.id].text for o in perception} == {""}
    raw = memory.store.graph.query_text(
        "MATCH (o:Observation) WHERE o.episode_id = $e AND o.tier = 'archived' "
        "AND o.text IS NOT NULL RETURN o.id",
        {"e": first},
    )
    assert raw == []  # the raw text is gone from the graph
    assert memory.store.vectors.existing_ids([o.id for o in perception]) == set()
    assert len(gists_of(memory, first)) == 1  # nodes and SUMMARIZES edges stay
    # Body state is never summarized, so never archived: it keeps its text.
    assert {(after[o.id].tier, bool(after[o.id].text)) for o in body} == {("short_term", True)}

    [gist] = gists_of(memory, first)
    result = memory.semantic_search("the cardboard delivery box by the front door", n_results=5)
    lines = [re.sub(r"^\d+\. ", "", line) for line in result.splitlines()]  # "1. [gist/..."
    gist_lines = [line for line in lines if line.startswith("[gist/")]
    assert not [line for line in lines if line.startswith(("[captions]", "[detections]"))]
    assert any(gist["text"] in line for line in gist_lines), result
    assert "delivery box" in gist["text"]
    # Only the morning patrol saw the box: the gist found is the first episode's.
    later = [g for e in played.episode_ids[1:] for g in gists_of(memory, e)]
    assert later and all("box" not in g["text"] for g in later)
