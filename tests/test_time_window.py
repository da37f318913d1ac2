"""Time-window consolidation on a real memory (Kuzu, LanceDB, MiniLM): old short-term
observations that belong to no episode are clustered by place; each cluster becomes a gist that
SUMMARIZES its members (promoted to long_term), while scattered noise, young observations, body
state and observations of episodes are left alone."""

from __future__ import annotations

import math
from typing import Any

from emem_graph import SpatioTemporalMemory

QUIET = {
    "maintenance_interval": None,  # time-window consolidation runs only when the test asks
    "entity_extract_flush_interval": 10_000,
    "entity_extract_time_interval": 1e9,
}
WINDOW = 1800.0  # the default consolidation_window


def ring(center: tuple[float, float], i: int, radius: float = 0.8) -> tuple[float, float]:
    """The i-th of ten points on a circle around ``center`` (a tight, deterministic cluster)."""
    angle = 2 * math.pi * i / 10
    return center[0] + radius * math.cos(angle), center[1] + radius * math.sin(angle)


def add_cluster(
    mem: SpatioTemporalMemory, center: tuple[float, float], text: str, t0: float
) -> list[str]:
    ids = []
    for i in range(10):
        x, y = ring(center, i)
        ids.append(mem.add(f"{text} ({i})", x, y, timestamp=t0 + 10 * i, layer_name="captions"))
    return ids


def summarized(mem: SpatioTemporalMemory, gist_id: str) -> set[str]:
    rows = mem.store.graph.query_text(
        "MATCH (g:Gist {id: $id})-[:SUMMARIZES]->(o:Observation) RETURN o.id AS id",
        {"id": gist_id},
    )
    return {row["id"] for row in rows}


def summarized_anywhere(mem: SpatioTemporalMemory, ids: list[str]) -> list[str]:
    rows = mem.store.graph.query_text(
        "MATCH (:Gist)-[:SUMMARIZES]->(o:Observation) WHERE o.id IN $ids RETURN o.id AS id",
        {"ids": ids},
    )
    return [row["id"] for row in rows]


def tiers(mem: SpatioTemporalMemory, ids: list[str]) -> set[str]:
    return {o.tier for o in mem.store.get_observations(ids)}


def test_two_old_clusters_become_two_gists_and_noise_young_and_body_state_stay(
    make_memory: Any, clock: Any
) -> None:
    mem = make_memory(clock=clock, **QUIET)
    assert mem.config.consolidation_window == WINDOW
    shelf = add_cluster(mem, (0.0, 0.0), "a shelf full of old books", 0.0)
    coffee = add_cluster(mem, (30.0, 30.0), "a coffee machine on the counter", 5.0)
    noise = [
        mem.add("a lone traffic cone", 100.0, -80.0, timestamp=50.0),
        mem.add("a puddle on the floor", -90.0, 60.0, timestamp=60.0),
        mem.add("a poster on the wall", 60.0, 120.0, timestamp=70.0),
    ]
    body = [
        mem.add_body_state(f"battery {90 - i}%", "battery", *ring((0.0, 0.0), i), timestamp=i)
        for i in range(10)
    ]
    clock.now = 2000.0  # everything above is older than the window ...
    young = [
        mem.add(f"a shelf full of new books ({i})", *ring((0.0, 0.0), i), timestamp=1950.0 + i)
        for i in range(4)
    ]  # ... these are not

    gist_ids = mem.consolidate_time_window()

    assert len(gist_ids) == 2
    gists = sorted(map(mem.store.get_gist, gist_ids), key=lambda g: g.time_start)
    assert [summarized(mem, g.id) for g in gists] == [set(shelf), set(coffee)]
    assert [g.source_observation_count for g in gists] == [10, 10]
    assert [(g.time_start, g.time_end) for g in gists] == [(0.0, 90.0), (5.0, 95.0)]
    for gist, center in zip(gists, [(0.0, 0.0), (30.0, 30.0)], strict=True):
        assert gist.episode_id is None and gist.layer_name == "captions"
        assert math.hypot(gist.x - center[0], gist.y - center[1]) < 1.0
        assert "battery" not in gist.text and "%" not in gist.text
    assert "books" in gists[0].text and "coffee" in gists[1].text
    assert tiers(mem, shelf + coffee) == {"long_term"}
    assert tiers(mem, noise + young + body) == {"short_term"}
    assert summarized_anywhere(mem, noise + young + body) == []
    assert mem.store.counts()["gists"] == 2

    # Nothing new is old enough: a second run writes nothing and noise stays noise.
    assert mem.consolidate_time_window() == []
    # Once the young ones are old too they are clustered; body state and noise never are.
    clock.advance(WINDOW)
    [later] = mem.consolidate_time_window()
    assert summarized(mem, later) == set(young)
    assert tiers(mem, noise + body) == {"short_term"}
    assert summarized_anywhere(mem, noise + body) == []


def test_observations_of_episodes_are_not_taken_by_time_window_consolidation(
    make_memory: Any, clock: Any
) -> None:
    mem = make_memory(clock=clock, **QUIET)
    loose = add_cluster(mem, (60.0, 0.0), "a stack of pallets in the yard", 0.0)  # no episode
    ended = mem.start_episode("sort the books")
    in_ended = add_cluster(mem, (0.0, 0.0), "a shelf full of old books", 0.0)
    mem.end_episode(consolidate=False)  # closed, left unconsolidated
    active = mem.start_episode("make coffee")
    in_active = add_cluster(mem, (30.0, 30.0), "a coffee machine on the counter", 5.0)
    clock.now = 5000.0  # all of it is older than the window
    assert mem.active_episode_id == active

    [gist_id] = mem.consolidate_time_window()

    assert summarized(mem, gist_id) == set(loose)
    assert tiers(mem, loose) == {"long_term"}
    assert tiers(mem, in_ended + in_active) == {"short_term"}
    assert summarized_anywhere(mem, in_ended + in_active) == []
    assert {o.episode_id for o in mem.store.get_observations(in_ended)} == {ended}
    assert mem.consolidate_time_window() == []
    # The ended episode is still the episode's to consolidate.
    assert mem.store.get_episode(ended).gist is None
