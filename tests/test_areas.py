"""The area forest: clustering, building, incremental update, the two tools."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sim_clock import SimClock

from emem_graph.areas.clustering import Items, cluster, diagonal, hierarchy, summarize_items
from emem_graph.areas.forest import load_forest
from emem_graph.evals.areas import remember_scene
from emem_graph.evals.scene import REGIONS, check_no_region_names, generate_scene

START = 1_000_000.0


@pytest.fixture(scope="module")
def small_scene():
    return generate_scene(6, seed=3, start=START)


@pytest.fixture(scope="module")
def scene_vectors(small_scene, minilm):
    """The scene's observation vectors, embedded once for every test of the module."""
    return minilm.embed([o.text for o in small_scene.observations])


@pytest.fixture
def scene_memory(make_memory, small_scene, scene_vectors):
    memory = make_memory(flush_batch_size=200, maintenance_interval=None)
    regions = remember_scene(memory, small_scene, scene_vectors)
    return memory, regions


def snapshot(memory):
    return {
        a.id: (a.text, a.count, a.box, tuple(sorted(a.children)), a.parent)
        for a in memory.areas.forest.areas.values()
    }


# --- clustering --------------------------------------------------------------------------------


def test_clustering_keeps_rooms_apart_and_every_cluster_within_the_threshold():
    rng = np.random.default_rng(0)
    rooms = [(x, y) for x in (0.0, 6.5, 13.0) for y in (0.0, 6.5)]
    points = np.vstack(
        [rng.uniform((x + 0.5, y + 0.5), (x + 5.5, y + 5.5), (80, 2)) for x, y in rooms]
    )
    labels = cluster(Items.points(points[:, 0], points[:, 1]), 8.0)
    room_of = np.repeat(np.arange(len(rooms)), 80)
    for label in np.unique(labels):
        members = labels == label
        box = np.array([points[members, 0].min(), points[members, 0].max(),
                        points[members, 1].min(), points[members, 1].max()])  # fmt: skip
        assert diagonal(box) <= 8.0
        assert len(set(room_of[members])) == 1, "a cluster mixes two rooms"
    assert len(np.unique(labels)) <= 2 * len(rooms)


def test_hierarchy_levels_nest_and_grow():
    rng = np.random.default_rng(1)
    points = rng.uniform(0, 200, (3000, 2))
    items = Items.points(points[:, 0], points[:, 1])
    levels = hierarchy(items, [8.0, 30.0, 120.0])
    counts = [int(labels.max()) + 1 for labels in levels]
    assert counts[0] > counts[1] > counts[2] >= 1
    current = items
    for labels, threshold in zip(levels, [8.0, 30.0, 120.0], strict=True):
        current = summarize_items(current, labels)
        assert (diagonal(current.box) <= threshold + 1e-9).all()
        assert current.weight.sum() == 3000


def test_clustering_rejects_a_zero_threshold():
    with pytest.raises(ValueError, match="threshold"):
        cluster(Items.points(np.zeros(2), np.zeros(2)), 0.0)


# --- the scene ---------------------------------------------------------------------------------


def test_generated_observations_never_name_their_region(small_scene):
    check_no_region_names(small_scene)
    named = {r.name for r in REGIONS}
    assert {o.region for o in small_scene.observations} == named
    assert len(small_scene.questions) >= 30
    assert all(q.region in named for q in small_scene.questions)
    for observation in small_scene.observations:
        region = next(r for r in REGIONS if r.name == observation.region)
        assert region.contains(observation.x, observation.y)


def test_scene_sites_repeat_the_site_far_apart():
    one = generate_scene(4, seed=1, start=START)
    three = generate_scene(4, seed=1, start=START, sites=3)
    assert len(three.observations) == 3 * len(one.observations)
    assert len(three.regions) == 3 * len(REGIONS)
    assert three.questions == one.questions
    check_no_region_names(three)
    for observation in three.observations:
        region = next(r for r in three.regions if r.name == observation.region)
        assert region.contains(observation.x, observation.y)
    # Copy k lies SITE_SPACING * k metres along x: no area of the default sizes spans two.
    width = max(r.box[1] for r in REGIONS) - min(r.box[0] for r in REGIONS)
    xs = {k: [o.x for o in three.observations if o.region.endswith(f" #{k}")] for k in (2, 3)}
    assert min(xs[2]) - max(o.x for o in one.observations) > 120.0
    assert min(xs[3]) - max(xs[2]) > 120.0 and max(xs[3]) - min(xs[3]) <= width
    with pytest.raises(ValueError):
        generate_scene(4, sites=0)


# --- building ----------------------------------------------------------------------------------


def test_forest_is_built_on_first_use_with_area_gists_edges_and_vectors(scene_memory):
    memory, regions = scene_memory
    assert not memory.areas.built
    overview = memory.describe_area()
    forest = memory.areas.forest
    assert forest.depth == 3
    roots = forest.roots()
    assert overview.startswith(f"Overview: {len(roots)} top-level area")
    for root in roots[:3]:
        assert root.text in overview
    # Every observation is a leaf of exactly one level-1 area, through a SUMMARIZES edge.
    assert set(forest.leaf_parent) == set(regions)
    stored = load_forest(memory._store)
    assert {a.id: a.level for a in stored.areas.values()} == {
        a.id: a.level for a in forest.areas.values()
    }
    assert stored.leaf_parent == forest.leaf_parent
    gists = [memory._store.get_gist(i) for i in forest.areas]
    assert all(g is not None and g.level >= 1 for g in gists)
    assert memory._store.vectors.existing_ids(list(forest.areas)) == set(forest.areas)
    # Children of an area lie inside its box; every level-1 area holds one region mostly.
    for area in forest.areas.values():
        for child_id in area.children:
            child = forest.areas.get(child_id)
            if child is not None:
                assert child.parent == area.id and child.level == area.level - 1


def test_level_one_areas_follow_the_regions(scene_memory):
    memory, regions = scene_memory
    memory.areas.build()
    pure = total = 0
    for area in memory.areas.forest.at_level(1):
        names = [regions[c] for c in area.children]
        pure += max(names.count(n) for n in set(names))
        total += len(names)
    assert pure / total >= 0.9


def test_rebuild_replaces_the_area_gists_and_their_vectors(scene_memory):
    memory, _ = scene_memory
    first = memory.areas.build()
    old = set(memory.areas.forest.areas)
    second = memory.areas.build()
    new = set(memory.areas.forest.areas)
    assert first.created == len(old) and second.deleted == len(old)
    assert not old & new
    assert memory._store.vectors.existing_ids(list(old)) == set()
    assert all(memory._store.get_gist(i) is None for i in old)
    assert set(load_forest(memory._store).areas) == new


# --- incremental update ------------------------------------------------------------------------


def test_adding_observations_in_one_room_changes_only_that_branch(scene_memory):
    memory, _ = scene_memory
    memory.areas.build()
    before = snapshot(memory)
    kitchen = next(r for r in REGIONS if r.name == "kitchen")
    x0, _, y0, _ = kitchen.box
    for i in range(4):
        memory.add("a new espresso grinder beside the kettle", x0 + 2 + 0.3 * i, y0 + 2,
                   timestamp=START + 10_000 + i)  # fmt: skip
    report = memory.areas.update()
    after = snapshot(memory)
    assert set(after) == set(before), "no area was created or deleted"
    changed = {i for i in before if before[i] != after[i]}
    kitchen_area = memory.areas.areas_at(x0 + 2, y0 + 2, 0.0)[0]
    branch = {a.id for a in memory.areas.forest.chain(kitchen_area.id)}
    assert changed == branch
    # Only the branch was rewritten in the graph (not rewritten with the same text elsewhere).
    assert report is not None and (report.created, report.updated) == (0, len(branch))
    assert memory.areas.update() is None, "nothing new: nothing written"
    assert "espresso grinder" in memory.areas.forest.areas[kitchen_area.id].text.lower() or (
        after[kitchen_area.id][1] == before[kitchen_area.id][1] + 4
    )
    # The graph holds the same forest (update in place, new SUMMARIZES edges only).
    stored = load_forest(memory._store)
    assert stored.leaf_parent == memory.areas.forest.leaf_parent
    assert {i: a.text for i, a in stored.areas.items()} == {
        i: a.text for i, a in memory.areas.forest.areas.items()
    }


def test_observations_far_from_every_area_start_a_new_tree(scene_memory):
    memory, _ = scene_memory
    memory.areas.build()
    before = snapshot(memory)
    roots_before = {r.id for r in memory.areas.forest.roots()}
    for i in range(3):
        memory.add("a lighthouse on a rocky shore", 900.0 + i, 900.0, timestamp=START + 20_000 + i)
    report = memory.areas.update()
    assert report is not None and report.created == 3 and report.updated == 0
    after = snapshot(memory)
    assert all(after[i] == before[i] for i in before)
    new_roots = {r.id for r in memory.areas.forest.roots()} - roots_before
    assert len(new_roots) == 1
    answer = memory.global_search("where is the sea?")
    assert "lighthouse" in answer.splitlines()[1]


def test_reopened_memory_catches_up_with_observations_written_after_the_last_update(
    tmp_path, minilm, small_scene
):
    from emem_graph import MemoryConfig, SpatioTemporalMemory

    config = MemoryConfig(
        db_path=str(tmp_path / "m"), flush_batch_size=200, maintenance_interval=None
    )
    with SpatioTemporalMemory(config=config, embedding_provider=minilm) as memory:
        remember_scene(memory, small_scene)
        memory.areas.build()
        areas = set(memory.areas.forest.areas)
        late = memory.add("a vending machine with cold drinks", 70.0, 65.0, timestamp=START + 9e4)
    with SpatioTemporalMemory(config=config, embedding_provider=minilm) as memory:
        assert set(memory.areas.forest.areas) == areas
        assert late not in memory.areas.forest.leaf_parent
        report = memory.areas.update()
        assert report is not None and report.created == 0 and report.updated >= 1
        assert late in memory.areas.forest.leaf_parent
        assert memory.areas.update() is None


# --- the tools ---------------------------------------------------------------------------------


def test_global_search_resolves_implicit_questions_to_their_room(scene_memory):
    memory, regions = scene_memory
    answer = memory.global_search("where can I get coffee?")
    lines = answer.splitlines()
    assert lines[0].startswith("Global search for 'where can I get coffee?': 3 chains")
    assert re.match(r"1\. \[captions|detections\] \(-?\d+\.\d,-?\d+\.\d\) \[", lines[1]) or (
        lines[1].startswith("1. [")
    )
    # The first chain: a memory, then level 1, 2 and 3 areas, each with its extent.
    assert [ln.split("[area/")[1][:2] for ln in lines[2:5]] == ["L1", "L2", "L3"]
    assert all(re.search(r"\[x -?\d+\.\d\.\.-?\d+\.\d, y -?\d+\.\d\.\.-?\d+\.\d\]", ln)
               for ln in lines[2:5])  # fmt: skip
    best = memory.areas.last_walk.chains[0]
    assert regions[best.leaf.id] == "kitchen"
    names = [regions[c] for c in best.areas[0].children]
    assert max(set(names), key=names.count) == "kitchen"
    assert memory.areas.last_walk.visited <= 3 * (2 + 6 + 12) + 3 * 24


def test_describe_area_by_concept_point_and_overview(scene_memory):
    memory, _ = scene_memory
    by_concept = memory.describe_area("somewhere to lift weights", n_results=2)
    assert by_concept.startswith("Areas for 'somewhere to lift weights' (best first):")
    assert "1. [area/L1]" in by_concept and "   in [area/L2]" in by_concept
    gym = next(r for r in REGIONS if r.name == "gym")
    first = by_concept.splitlines()[1]
    centre = re.search(r"\((-?\d+\.\d),(-?\d+\.\d)\)", first)
    assert centre and gym.contains(float(centre.group(1)), float(centre.group(2)))
    at_point = memory.dispatch_tool_call(
        "describe_area", {"near_x": 16.0, "near_y": 3.0, "spatial_radius": 0.0}
    )
    assert at_point.startswith("Areas at (16.0, 3.0) within 0m:")
    assert memory.describe_area(near_x=500.0, near_y=500.0).startswith("No areas found within")


def test_area_tools_are_served_and_validate_their_arguments(make_memory):
    memory = make_memory()
    names = [d["function"]["name"] for d in memory.get_tool_definitions()]
    assert "describe_area" in names and "global_search" in names
    assert memory.describe_area() == "No areas found."
    assert memory.global_search("coffee") == "No memories found for: coffee"
    assert memory.dispatch_tool_call("describe_area", {"near_x": 1.0}).startswith(
        "Error: describe_area: give both near_x and near_y"
    )
    assert memory.dispatch_tool_call("global_search", {"query": ""}).startswith("Error:")
    assert "n_walks" in memory.dispatch_tool_call("global_search", {"query": "x", "n_walks": 0})
    assert (
        memory.dispatch_tool_call("describe_area", {"near_x": float("nan"), "near_y": 0})[:6]
        == "Error:"
    )


def test_body_state_never_becomes_part_of_an_area(make_memory):
    memory = make_memory(maintenance_interval=None)
    clock = SimClock()
    for i in range(5):
        memory.add(f"a red chair number {i}", 1.0 + i * 0.2, 1.0, timestamp=clock() + i)
    body = memory.add_body_state("battery at 80%", "battery", x=1.0, y=1.0, timestamp=clock())
    memory.areas.build()
    assert body not in memory.areas.forest.leaf_parent
    memory.add_body_state("battery at 70%", "battery", x=1.0, y=1.0, timestamp=clock() + 9)
    memory.flush()
    assert memory.areas.update() is None


class _LaundryLover:
    """An LLM client that only chooses areas: always the one whose summary mentions laundry
    things (no other method: summaries stay extractive)."""

    def __init__(self) -> None:
        self.asked = 0

    def choose_area(self, question: str, summaries: list[str]) -> int:
        self.asked += 1
        marks = ("washing machine", "tumble dryer", "ironing board", "drying rack")
        for index, summary in enumerate(summaries):
            if any(mark in summary.lower() for mark in marks):
                return index
        return 0


def test_the_walk_follows_the_llm_choice_when_one_is_configured(
    tmp_path, minilm, small_scene, scene_vectors
):
    from emem_graph import MemoryConfig, SpatioTemporalMemory

    results = {}
    for name, client in (("similarity", None), ("llm", _LaundryLover())):
        config = MemoryConfig(
            db_path=str(tmp_path / name), flush_batch_size=200, maintenance_interval=None
        )
        with SpatioTemporalMemory(
            config=config, embedding_provider=minilm, llm_client=client
        ) as memory:
            regions = remember_scene(memory, small_scene, scene_vectors)
            memory.global_search("where can I take a nap?", n_results=1, n_walks=1)
            walk = memory.areas.last_walk
            results[name] = regions[walk.chains[0].leaf.id], walk.chosen_by_llm
            assert client is None or client.asked >= 1
    assert results["similarity"] == ("bedroom", 0)
    assert results["llm"][0] == "laundry room" and results["llm"][1] >= 1


def test_semantic_search_and_recall_have_a_global_scope_that_walks_the_areas(scene_memory):
    memory, _ = scene_memory
    question = "where can I get coffee?"
    walked = memory.global_search(question, n_results=3)
    assert walked.startswith("Global search for")
    assert memory.semantic_search(question, scope="global") == walked
    assert memory.recall(question, scope="global") == walked
    assert memory.semantic_search(question, n_results=1, scope="global") == (
        memory.global_search(question, n_results=1)
    )
    # JSON tool calls reach it too; the local scope is unchanged and is the default.
    assert (
        memory.dispatch_tool_call("semantic_search", {"query": question, "scope": "global"})
        == walked
    )
    assert memory.semantic_search(question) == memory.semantic_search(question, scope="local")
    assert not memory.semantic_search(question).startswith("Global search")
    refused = memory.dispatch_tool_call(
        "semantic_search", {"query": question, "scope": "global", "layer": "captions"}
    )
    assert refused.startswith("Error:") and "takes no filters (got layer)" in refused
    bad = memory.dispatch_tool_call("recall", {"query": question, "scope": "everywhere"})
    assert bad.startswith("Error:") and "scope" in bad
