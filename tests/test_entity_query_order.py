"""entity_query lists the most recently seen matches first, whatever their number: checked
against a brute-force ranking of every entity the index holds. Before, it read the 100 most
often seen matches and ranked those by last sighting, so with more than 100 matches a thing
seen once, lately, was left out behind things seen often, long ago."""

from __future__ import annotations

import math
import random
import re
from typing import Any

import pytest

from emem_graph.ingest.embeddings import HashingEmbedder

QUIET = {"maintenance_interval": None, "entity_extraction": False}
_NAME = re.compile(r"^\d+\. \[entity/[^\]]*\] \([^)]*\) \[seen \d+x\] (.+?) \[last seen", re.M)


def _listed(answer: str) -> list[str]:
    return _NAME.findall(answer)


def _expected(mem: Any, k: int, name: str | None, circle: tuple[float, float, float] | None):
    every = mem.store.entities.find(limit=1_000_000)
    kept = [
        e
        for e in every
        if (name is None or name.lower() in e.name.lower())
        and (circle is None or math.hypot(e.x - circle[0], e.y - circle[1]) <= circle[2])
    ]
    kept.sort(key=lambda e: (-e.last_seen, e.id))
    return [e.name for e in kept[:k]]


@pytest.mark.parametrize("seed", range(3))
def test_entity_query_lists_the_latest_seen_of_every_match(make_memory: Any, seed: int) -> None:
    rng = random.Random(seed)
    mem = make_memory(embedder=HashingEmbedder(384), **QUIET)
    # 160 boxes seen often long ago, 40 seen once lately (and some ties in time), 30 chairs,
    # each on its own spot of a 40 m grid (far enough apart that no two are merged).
    spots = [(40.0 * (i % 16), 40.0 * (i // 16)) for i in range(230)]
    rng.shuffle(spots)
    t = 1_000.0
    for i in range(160):
        for _ in range(rng.randint(3, 6)):
            t += 1.0
            mem.add_entity(f"box {i}", *spots[i], timestamp=t)
    late = t + 10_000.0
    for i in range(160, 200):
        stamp = late + rng.choice((0.0, 0.0, 5.0, 7.0, 30.0))  # ties by time, then by id
        mem.add_entity(f"box {i}", *spots[i], timestamp=stamp)
    for i in range(30):
        mem.add_entity(f"chair {i}", *spots[200 + i], timestamp=t + i)
    mem.flush()
    assert len(mem.store.entities.find(name="box", limit=1_000)) == 200
    questions: list[dict[str, Any]] = [
        {"name": "box", "n_results": 10},
        {"name": "BOX", "n_results": 45},
        {"name": "chair", "n_results": 7},
        {"n_results": 25},
        {"name": "box", "near_x": 300.0, "near_y": 240.0, "spatial_radius": 200.0, "n_results": 12},
    ]
    for question in questions:
        circle = None
        if "near_x" in question:
            circle = (question["near_x"], question["near_y"], question["spatial_radius"])
        want = _expected(mem, question["n_results"], question.get("name"), circle)
        assert _listed(mem.entity_query(**question)) == want, question
    # A box seen once, lately, is listed first although 160 boxes were seen more often.
    [first] = _listed(mem.entity_query(name="box", n_results=1))
    assert int(first.split()[1]) >= 160
