"""Every tool answers on a memory of 10,000 observations (real Kuzu, LanceDB, MiniLM vectors)."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from sim_clock import SimClock

N = 10_000
COLOURS = ("red", "blue", "green", "black", "white")
THINGS = ("chair", "cup", "door", "box", "plant", "laptop", "lamp", "bottle")
ROOMS = ("kitchen", "hallway", "office", "lab", "garage")


@pytest.fixture(scope="module")
def big(tmp_path_factory, minilm):
    from emem_graph import MemoryConfig, SpatioTemporalMemory

    rng = np.random.default_rng(11)
    texts = [f"a {c} {t} in the {r}" for c in COLOURS for t in THINGS for r in ROOMS]
    vectors = minilm.embed(texts)  # one batch for the 200 distinct texts
    clock = SimClock(0.0)
    config = MemoryConfig(
        db_path=str(tmp_path_factory.mktemp("big") / "m"),
        flush_batch_size=2000,
        flush_interval=1e9,
        entity_extract_flush_interval=10**6,
        entity_extract_time_interval=1e9,
        maintenance_interval=None,
    )
    mem = SpatioTemporalMemory(config=config, embedding_provider=minilm, get_current_time=clock)
    started = time.perf_counter()
    xy = rng.uniform(0.0, 100.0, size=(N, 2))
    picks = rng.integers(0, len(texts), size=N)
    for i in range(N):
        if i % 1000 == 0:
            if i:
                mem.end_episode(consolidate=i == N - 1000)  # the rest keeps this test fast
            mem.start_episode(f"patrol {i // 1000}")
        clock.now = float(i)
        x, y = float(xy[i, 0]), float(xy[i, 1])
        if i % 50 == 0:
            mem.add_body_state(f"battery {100 - i // 200}%", "battery", x=x, y=y)
        else:
            layer = "captions" if i % 3 else "detections"
            mem.add(texts[picks[i]], x, y, layer_name=layer, embedding=vectors[picks[i]])
        if i % 500 == 0:
            mem.add_entity(
                f"{THINGS[i // 500 % len(THINGS)]} {i // 500}", x, y, entity_type="object"
            )
    mem.end_episode(wait=True)
    clock.now = float(N)
    built = time.perf_counter() - started
    yield mem, built
    mem.close()


def test_every_tool_answers_on_ten_thousand_observations(big):
    mem, built = big
    assert mem.store.counts()["observations"] == N
    answers = {
        "semantic_search": mem.semantic_search("a green plant in the office"),
        "spatial_query": mem.spatial_query(50.0, 50.0, radius=5.0),
        "temporal_query": mem.temporal_query(last_n_minutes=10),
        "episode_summary": mem.episode_summary(last_n=3),
        "get_current_context": mem.get_current_context(),
        "search_gists": mem.search_gists("a lamp in the garage"),
        "entity_query": mem.entity_query(name="lamp"),
        "locate": mem.locate("a black bottle in the lab"),
        "recall": mem.recall("the blue door in the hallway, then the red cup"),
        "body_status": mem.body_status(),
    }
    for name, out in answers.items():
        assert out and not out.startswith(("Error", "No ", "Could not")), (name, out)
    assert len(answers["semantic_search"].splitlines()) == 10
    assert "green plant" in answers["semantic_search"].splitlines()[0]
    assert len(answers["spatial_query"].splitlines()) == 10
    assert answers["temporal_query"].splitlines()[0].startswith("1. [")
    assert answers["episode_summary"].count("observations from") == 3
    assert answers["get_current_context"].splitlines()[-2:][0].startswith(("Body Status:", "  ["))
    assert answers["body_status"] == "Body Status:\n  [battery] battery 51% (50s ago)"
    assert re.match(r"Location: \(.+\)\nRadius: .+m\nBased on: \d+ memories", answers["locate"])
    assert answers["recall"].count("About '") == 2
    assert built < 120, built


def test_filters_stay_prefilters_at_scale(big):
    mem, _ = big
    rows = mem.semantic_search(
        "a red chair in the kitchen", n_results=10, near_x=20.0, near_y=20.0, spatial_radius=5.65
    ).splitlines()
    assert len(rows) == 10  # ~100 observations lie in that 1% of the floor
    rows = mem.semantic_search("a red chair", n_results=10, time_before=200.0).splitlines()
    assert len(rows) == 10
    assert all("battery" not in row for row in rows)
