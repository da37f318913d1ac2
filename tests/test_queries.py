"""The named Cypher queries behind the tools (queries/*.cypher), one test each, on real Kuzu."""

from __future__ import annotations

from graph_writes import archive_window, link_cooccurs, link_observed_in, write_gist
from sim_clock import SimClock

from emem_graph.retrieval import lookups
from emem_graph.retrieval.lookups import Circle

QUIET = {
    "entity_extract_flush_interval": 10**6,
    "entity_extract_time_interval": 1e9,
    "maintenance_interval": None,
    "entity_spatial_radius": 0.01,
}
"""No background extraction or maintenance, no entity merging: each test sees what it wrote."""


def test_recall_returns_gists_summarizing_and_entities_observed_in_the_area(make_memory):
    mem = make_memory(clock=SimClock(100.0), **QUIET)
    near = [mem.add("a mug on the desk", 10.0, 10.0), mem.add("a lamp", 11.0, 10.5)]
    far = mem.add("a boat on the lake", 50.0, 50.0)
    here = write_gist(
        mem, "an office desk", 10.5, 10.2, time_start=100, time_end=100, observation_ids=near
    )
    write_gist(mem, "the lake", 50.0, 50.0, time_start=100, time_end=100, observation_ids=[far])
    lamp = mem.add_entity("lamp", 30.0, 30.0)  # placed elsewhere: linked only by its sightings
    boat = mem.add_entity("boat", 50.0, 50.0)
    link_observed_in(mem, lamp, near)
    link_observed_in(mem, boat, [far])

    links = lookups.recall_links(mem.store, Circle(10.0, 10.0, 3.0))

    assert [(g.id, g.links) for g in links.gists] == [(here, 2)]
    assert [(e.id, e.links) for e in links.entities] == [(lamp, 2)]
    # Archived observations still lead to the gist that summarizes them.
    archive_window(mem, 0.0, 1000.0)
    assert [g.id for g in lookups.recall_links(mem.store, Circle(10.0, 10.0, 3.0)).gists] == [here]
    assert lookups.recall_links(mem.store, Circle(-40.0, -40.0, 3.0)).gists == []


def test_cooccurring_entities_reads_stored_counts_in_both_directions(make_memory):
    mem = make_memory(**QUIET)
    cup, kettle, toaster, sink = (
        mem.add_entity(name, 10.0 * i, 0.0)
        for i, name in enumerate(("cup", "kettle", "toaster", "sink"))
    )
    link_cooccurs(mem, cup, kettle, 5, 1.0, 9.0)
    link_cooccurs(mem, cup, toaster, 2, 3.0, 4.0)
    link_cooccurs(mem, sink, cup, 7, 0.0, 8.0)  # stored the other way round

    together = lookups.cooccurring_entities(mem.store, cup)

    assert [(c.name, c.count) for c in together] == [("sink", 7), ("kettle", 5), ("toaster", 2)]
    assert (together[1].first_seen, together[1].last_seen) == (1.0, 9.0)
    assert [c.name for c in lookups.cooccurring_entities(mem.store, cup, limit=1)] == ["sink"]
    assert [c.name for c in lookups.cooccurring_entities(mem.store, kettle)] == ["cup"]
    assert lookups.cooccurring_entities(mem.store, "no-such-entity") == []


def test_episode_chain_walks_follows_and_subtask_edges(make_memory):
    clock = SimClock()
    mem = make_memory(clock=clock, **QUIET)
    first = mem.start_episode("first")
    clock.advance(1)
    mem.end_episode()
    parent = mem.start_episode("parent")
    clock.advance(1)
    child = mem.start_episode("child", parent_episode_id=parent)
    clock.advance(1)
    mem.end_episode()  # child
    clock.advance(1)
    mem.end_episode()  # parent
    after = mem.start_episode("after")

    child_chain = lookups.episode_chain(mem.store, child)
    assert child_chain.previous == [first]  # the parent was still active when the child began
    assert child_chain.parents == [parent]
    assert lookups.episode_chain(mem.store, parent).subtasks == [child]
    assert lookups.episode_chain(mem.store, after).previous == [parent, first]
    assert lookups.episode_chain(mem.store, first).previous == []


def test_episode_span_counts_observations_and_their_times(make_memory):
    clock = SimClock(10.0)
    mem = make_memory(clock=clock, **QUIET)
    episode = mem.start_episode("walk")
    for _ in range(3):
        mem.add("a step", 0.0, 0.0)
        clock.advance(5.0)
    empty = mem.start_episode("idle")

    span = lookups.episode_span(mem.store, episode)

    assert span is not None and (span.count, span.first, span.last) == (3, 10.0, 20.0)
    assert lookups.episode_span(mem.store, empty) is None


def test_entity_timeline_lists_sightings_newest_first(make_memory):
    mem = make_memory(**QUIET)
    seen = [
        mem.add("a red chair", 1.0, 2.0, timestamp=5.0, layer_name="captions"),
        mem.add("a chair", 3.0, 4.0, timestamp=9.0, layer_name="detections"),
    ]
    mem.add("a table", 0.0, 0.0, timestamp=7.0)
    chair = mem.add_entity("red chair", 2.0, 3.0)
    link_observed_in(mem, chair, seen)

    timeline = lookups.entity_timeline(mem.store, chair)

    assert [(s.observation_id, s.x, s.y, s.timestamp, s.layer) for s in timeline] == [
        (seen[1], 3.0, 4.0, 9.0, "detections"),
        (seen[0], 1.0, 2.0, 5.0, "captions"),
    ]
    assert len(lookups.entity_timeline(mem.store, chair, limit=1)) == 1


def test_context_around_finds_gists_and_entities_placed_near_a_point(make_memory):
    mem = make_memory(**QUIET)
    gist = write_gist(mem, "the kitchen", 1.0, 0.0, time_start=0, time_end=1)
    write_gist(mem, "the garden", 30.0, 0.0, time_start=0, time_end=1)
    near = mem.add_entity("fridge", 0.5, 0.0)
    nearer = mem.add_entity("stove", 0.1, 0.0)
    mem.add_entity("shed", 29.0, 0.0)

    gists, entities = lookups.context_around(mem.store, Circle(0.0, 0.0, 2.0))

    assert [g.id for g in gists] == [gist]
    assert [e.id for e in entities] == [nearer, near]
    assert len(lookups.context_around(mem.store, Circle(0.0, 0.0, 2.0), limit=1)[1]) == 1


def test_observations_in_window_filters_time_area_layer_and_body_state(make_memory):
    mem = make_memory(**QUIET)
    for t in range(10):
        mem.add(f"frame {t}", float(t), 0.0, timestamp=float(t), layer_name="camera")
    mem.add("a word", 5.0, 0.0, timestamp=5.5, layer_name="speech")
    mem.add_body_state("battery 50%", "battery", x=5.0, timestamp=5.2)
    store = mem.store

    def window(**kwargs):
        args = {"time_after": 2.0, "time_before": 8.0, **kwargs}
        return [o.text for o in lookups.observations_in_window(store, **args)]

    assert window(limit=3) == ["frame 8", "frame 7", "frame 6"]
    assert window(limit=3, newest_first=False) == ["frame 2", "frame 3", "frame 4"]
    assert window(layer="speech") == ["a word"]
    assert window(circle=Circle(5.0, 0.0, 1.0)) == ["frame 6", "a word", "frame 5", "frame 4"]
    assert "battery 50%" in window(circle=Circle(5.0, 0.0, 1.0), include_body_state=True)
    assert window(time_after=None, time_before=None, limit=2, newest_first=False) == [
        "frame 0",
        "frame 1",
    ]


def test_gists_in_window_overlap_and_cross_layer(make_memory):
    mem = make_memory(**QUIET)
    morning = write_gist(mem, "morning", 0.0, 0.0, time_start=0, time_end=100, layer="camera")
    noon = write_gist(mem, "noon", 0.0, 0.0, time_start=100, time_end=200)
    write_gist(mem, "evening", 50.0, 0.0, time_start=300, time_end=400, layer="speech")
    store = mem.store

    def ids(**kwargs):
        args = {"time_after": None, "time_before": None, **kwargs}
        return lookups.gists_in_window(store, **args)

    assert [g.id for g in ids(time_after=50.0, time_before=150.0)] == [noon, morning]
    assert [g.id for g in ids(layer="camera")] == [noon, morning]  # cross-layer qualifies
    assert [g.text for g in ids(newest_first=False, limit=1)] == ["morning"]
    assert [g.text for g in ids(circle=Circle(50.0, 0.0, 1.0))] == ["evening"]


def test_recent_episodes_newest_first_and_by_name(make_memory):
    clock = SimClock()
    mem = make_memory(clock=clock, **QUIET)
    for name in ("Patrol kitchen", "charge", "patrol hall"):
        mem.start_episode(name)
        clock.advance(10)
    store = mem.store

    assert [e.name for e in lookups.recent_episodes(store, name=None, limit=2)] == [
        "patrol hall",
        "charge",
    ]
    assert [e.name for e in lookups.recent_episodes(store, name="PATROL", limit=10)] == [
        "patrol hall",
        "Patrol kitchen",
    ]


def test_find_entities_by_name_type_area_and_time(make_memory):
    mem = make_memory(**QUIET)
    red = mem.add_entity("Red Chair", 1.0, 0.0, timestamp=10.0, entity_type="Furniture")
    blue = mem.add_entity("blue chair", 5.0, 0.0, timestamp=20.0, entity_type="furniture")
    mem.add_entity("maria", 2.0, 0.0, timestamp=30.0, entity_type="person")
    store = mem.store

    def names(**kwargs):
        return [e.name for e in lookups.find_entities(store, **kwargs)]

    assert sorted(names(name="CHAIR")) == ["Red Chair", "blue chair"]
    assert names(entity_type="person") == ["maria"]
    assert sorted(names(entity_type="FURNITURE")) == ["Red Chair", "blue chair"]
    assert names(circle=Circle(4.5, 0.0, 4.0)) == ["blue chair", "maria", "Red Chair"]
    assert names(last_seen_after=15.0, name="chair") == ["blue chair"]
    first = lookups.find_entities(store, name="chair", limit=1)
    assert [e.id for e in first] in ([red], [blue])


def test_latest_body_state_skips_readings_emptied_by_archival(make_memory):
    mem = make_memory(**QUIET)
    mem.add_body_state("battery 90%", "battery", timestamp=1.0)
    mem.add_body_state("battery 80%", "battery", timestamp=2.0)
    mem.add_body_state("cpu 40C", "cpu_temp", timestamp=1.5)
    mem.add("a battery on the shelf", 0.0, 0.0, timestamp=3.0, layer_name="battery")

    latest = lookups.latest_body_state(mem.store)
    assert [(o.layer_name, o.text) for o in latest] == [
        ("battery", "battery 80%"),
        ("cpu_temp", "cpu 40C"),
    ]
    assert [o.text for o in lookups.latest_body_state(mem.store, ["cpu_temp"])] == ["cpu 40C"]

    archive_window(mem, 1.9, 2.1)  # the latest battery reading loses its text
    latest = lookups.latest_body_state(mem.store, ["battery"])
    assert [o.text for o in latest] == ["battery 90%"]
    assert lookups.latest_body_state(mem.store, ["no_such_layer"]) == []


def test_observations_nearest_ranks_inside_the_query(make_memory):
    mem = make_memory(**QUIET)
    for i in range(30):
        mem.add(f"tile {i}", float(i), 0.0, timestamp=float(i), layer_name="floor")
    mem.add("a wall", 3.2, 0.0, timestamp=5.0, layer_name="walls")
    mem.add_body_state("battery 20%", "battery", x=3.0, timestamp=6.0)
    store = mem.store

    def near(radius: float = 100.0, **kwargs):
        args = {"limit": 2, **kwargs}
        found = lookups.observations_near(store, Circle(3.0, 0.0, radius), **args)
        return [o.text for o in found]

    assert near() == ["tile 3", "a wall"]  # nearest first, body state left out
    assert near(0.5, limit=10) == ["tile 3", "a wall"]  # inside the circle only
    assert near(layer="floor", limit=1) == ["tile 3"]
    assert "battery 20%" in near(include_body_state=True, limit=3)
    assert near(time_after=20.0) == ["tile 20", "tile 21"]
    assert near(-1.0 + 1.0, limit=10) == ["tile 3"]  # radius 0: the exact spot
