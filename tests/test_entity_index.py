"""EntityIndex.find against a plain-Python reading of its contract."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from emem_graph.models import Entity
from emem_graph.storage.entity_index import EntityIndex

NAMES = ["red chair", "Chair", "grey chair", "table", "fire extinguisher", "door"]
TYPES = ["furniture", "Furniture", None, "safety"]


def _entities(rng: np.random.Generator, count: int) -> list[Entity]:
    return [
        Entity(
            id=f"e{int(rng.integers(0, 10**6)):06d}-{i}",
            name=NAMES[int(rng.integers(0, len(NAMES)))],
            entity_type=TYPES[int(rng.integers(0, len(TYPES)))],
            x=float(rng.integers(0, 20)),  # whole metres: ties in distance
            y=float(rng.integers(0, 20)),
            first_seen=0.0,
            last_seen=float(rng.integers(0, 5)),
            observation_count=int(rng.integers(1, 4)),
        )
        for i in range(count)
    ]


def _expected(entities: list[Entity], limit: int, **query: Any) -> list[str]:
    name, kind = query.get("name"), query.get("entity_type")
    circle, after = query.get("circle"), query.get("last_seen_after")
    kept = []
    for e in entities:
        if name is not None and name.lower() not in e.name.lower():
            continue
        if kind is not None and (e.entity_type or "").lower() != kind.lower():
            continue
        if after is not None and e.last_seen < after:
            continue
        d2 = 0.0
        if circle is not None:
            x, y, radius = circle
            d2 = (e.x - x) ** 2 + (e.y - y) ** 2
            if d2 > radius * radius:
                continue
        kept.append((d2, -e.observation_count, -e.last_seen, e.id))
    return [key[3] for key in sorted(kept)[:limit]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_find_ranks_like_its_contract_with_repeated_names_and_ties(seed: int) -> None:
    """Names are matched once per distinct name and ids ranked once per change; the answers
    are those of matching every entity's name and sorting by (distance, -count, -last seen,
    id), also after entities are renamed and added."""
    rng = np.random.default_rng(seed)
    entities = _entities(rng, 400)
    index = EntityIndex()
    index.put(entities[:300])
    queries: list[dict[str, Any]] = [
        {"name": "chair"},
        {"name": "CHAIR", "entity_type": "furniture"},
        {"name": "fire ext", "last_seen_after": 2.0},
        {"entity_type": "safety", "circle": (10.0, 10.0, 6.0)},
        {"name": "r", "circle": (3.0, 3.0, 9.0)},
        {"name": "sofa"},
        {"name": "\x00"},  # NumPy's str arrays would read it as "" (every name)
        {"name": "chair\x00"},
        {},
    ]
    for limit in (1, 10, 500):
        for query in queries * 2:  # the second time from the masks and order kept
            got = [e.id for e in index.find(limit=limit, **query)]
            assert got == _expected(entities[:300], limit, **query), query
    # Seen again (count and time change, names do not): the kept order must not outlive it.
    seen = [
        e.model_copy(update={"observation_count": e.observation_count + 5, "last_seen": 9.0})
        for e in entities[100:110]
    ]
    index.put(seen)
    entities[100:110] = seen
    for query in queries:
        got = [e.id for e in index.find(limit=10, **query)]
        assert got == _expected(entities[:300], 10, **query), query
    renamed = [e.model_copy(update={"name": "sofa"}) for e in entities[:20]]
    index.put(renamed + entities[300:])
    now = renamed + entities[20:]
    for query in queries:
        got = [e.id for e in index.find(limit=50, **query)]
        assert got == _expected(now, 50, **query), query
    assert len(index.find(name="sofa", limit=50)) == 20


def test_take_changed_gives_what_was_put_or_whose_stays_changed_latest_first_once() -> None:
    """The writer makes entity_query's lines of the entities a write changed
    (memory._warm_entity_lines): every entity put, or whose stays were put, moved away or
    deleted, once, most recently seen first, as the kept objects."""
    from emem_graph.models import EntityPosition

    index = EntityIndex()
    rng = np.random.default_rng(3)
    a, b, c = _entities(rng, 3)
    a.last_seen, b.last_seen, c.last_seen = 1.0, 3.0, 2.0
    index.put([a, b, c])
    taken = index.take_changed()
    assert [e.id for e in taken] == [b.id, c.id, a.id]
    assert index.take_changed() == []  # once
    kept = {e.id: e for e in index.find(limit=99, shared=True)}
    stay = EntityPosition(id="s1", entity_id=a.id, x=1.0, y=1.0, first_seen=0.0, last_seen=1.0)
    index.put_stays([stay])
    assert [e.id for e in index.take_changed()] == [a.id]
    moved = stay.model_copy(update={"entity_id": c.id})  # a split hands the stay to c
    index.put_stays([moved])
    changed = index.take_changed()
    assert {e.id for e in changed} == {a.id, c.id}
    assert all(e is kept[e.id] for e in changed)  # the kept objects, not copies
    index.put_stays([], deleted=["s1"])
    assert [e.id for e in index.take_changed()] == [c.id]
    index.prepare()  # derives find's columns now: find answers as before
    assert [e.id for e in index.find(limit=99, shared=True)] == list(kept)
