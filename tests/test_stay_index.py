"""The stays (Position nodes) the store keeps in process (storage/entity_index.py) against the
graph's own, differentially: random sightings of a few things moving between a few spots
(moves, returns, small moves folded, second objects split off), written in random batches;
after every write, and after a reopen, the in-process stays equal a Cypher read of every
Position node, and entity_query answers alike from both."""

from __future__ import annotations

import random
from typing import Any

import pytest

from emem_graph.consolidation import reads
from emem_graph.ingest.embeddings import HashingEmbedder

T = 1_000_000.0
QUIET = {"maintenance_interval": None, "entity_extraction": False}
NAMES = ("red cup", "blue box", "green chair", "cup", "black bag")
SPOTS = ((1.0, 1.0), (1.4, 1.2), (3.2, 1.1), (12.0, 9.0), (14.1, 9.3), (30.0, 2.0), (5.0, 20.0))


def _graph_stays(mem: Any) -> dict[str, list[Any]]:
    return reads.all_positions(mem.store)


def _kept_stays(mem: Any) -> dict[str, list[Any]]:
    ids = [e.id for e in mem.store.entities.find(limit=10_000)]
    return mem.store.entities.stays_of(ids)


@pytest.mark.parametrize("seed", range(4))
def test_kept_stays_equal_the_graph_after_every_write_and_a_reopen(
    make_memory: Any, seed: int
) -> None:
    rng = random.Random(seed)
    clock = [T]
    embedder = HashingEmbedder(384)
    mem = make_memory(clock=lambda: clock[0], embedder=embedder, **QUIET)
    at = {name: rng.choice(SPOTS) for name in NAMES}
    t = T
    for step in range(160):
        t += rng.choice((5.0, 60.0, 900.0))
        name = rng.choice(NAMES)
        if rng.random() < 0.25:
            at[name] = rng.choice(SPOTS)  # it moves (a small move, away, or back)
        x, y = at[name]
        mem.add(f"a {name} here", x, y, timestamp=t)
        mem.add_entity(name, x + rng.uniform(-0.2, 0.2), y + rng.uniform(-0.2, 0.2), timestamp=t)
        if rng.random() < 0.2 or step == 159:
            mem.flush()
            assert _kept_stays(mem) == _graph_stays(mem), f"after step {step}"
    clock[0] = t + 60.0
    moves = mem.store.entities.stay_count()
    assert moves > len(mem.store.entities)  # some things moved: more stays than entities
    questions = [{"name": n} for n in NAMES] + [{}]
    answers = [mem.entity_query(**q) for q in questions]
    path = mem.config.db_path
    mem.close()
    again = make_memory(
        name=path.rsplit("/", 1)[-1], clock=lambda: clock[0], embedder=embedder, **QUIET
    )
    assert _kept_stays(again) == _graph_stays(again)
    assert [again.entity_query(**q) for q in questions] == answers
