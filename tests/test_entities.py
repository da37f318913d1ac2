"""Entity merging on a real memory (Kuzu, LanceDB, MiniLM), through add_entity and through
extraction: a re-sighting nearby updates the entity in place (same id, one vector row, running
position estimate), the same name far away is another entity, and a detector's label and a
caption's description of the same thing at the same place become one entity."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import numpy as np
import pytest

from emem_graph import SpatioTemporalMemory
from emem_graph.errors import BackendUnavailableError
from emem_graph.filters import VectorFilter

QUIET = {
    "maintenance_interval": None,
    "entity_extract_flush_interval": 10_000,  # extraction runs when the test calls it
    "entity_extract_time_interval": 1e9,
}
ENTITY_ROWS = VectorFilter(kinds=("entity",))


def entity_rows(mem: SpatioTemporalMemory) -> Counter[str]:
    """How many vector rows each entity id has in LanceDB."""
    return Counter(mem.store.vectors.all_ids(ENTITY_ROWS))


def all_entities(mem: SpatioTemporalMemory) -> list[Any]:
    rows = mem.store.graph.query_text("MATCH (e:Entity) RETURN e.id AS id")
    return [mem.store.get_entity(row["id"]) for row in rows]


def sightings(mem: SpatioTemporalMemory) -> set[tuple[str, str]]:
    """(entity name, observation id) of every OBSERVED_IN edge."""
    rows = mem.store.graph.query_text(
        "MATCH (e:Entity)-[:OBSERVED_IN]->(o:Observation) RETURN e.name AS name, o.id AS id"
    )
    return {(row["name"], row["id"]) for row in rows}


def test_resighting_nearby_updates_the_entity_in_place(make_memory: Any, clock: Any) -> None:
    mem = make_memory(clock=clock, **QUIET)
    radius = mem.config.entity_spatial_radius
    chair = mem.add_entity("red chair", 2.0, 2.0, timestamp=10.0)

    assert mem.add_entity("red chair", 3.0, 2.0, timestamp=20.0) == chair
    assert mem.add_entity("red chair", 2.5, 3.5, timestamp=30.0) == chair
    assert mem.add_entity("red chair", 2.5, 2.5, timestamp=5.0) == chair  # reported late

    entity = mem.store.get_entity(chair)
    assert entity.observation_count == 4
    # The running mean of the four sightings, not the latest one (2.5, 2.5 is also the mean).
    assert (entity.x, entity.y) == pytest.approx((2.5, 2.5))
    assert (entity.first_seen, entity.last_seen) == (5.0, 30.0)
    assert entity_rows(mem) == {chair: 1}  # replaced in place: no dead vectors

    # The same name 10 m away is another red chair.
    other = mem.add_entity("red chair", 12.5, 2.5, timestamp=40.0)
    assert other != chair and radius < 12.5 - 2.5
    # A sighting next to the second one merges there, not into the first.
    assert mem.add_entity("red chair", 12.0, 2.5, timestamp=50.0) == other
    assert mem.store.get_entity(chair).observation_count == 4
    second = mem.store.get_entity(other)
    assert second.observation_count == 2
    assert (second.x, second.y) == pytest.approx((12.25, 2.5))
    assert entity_rows(mem) == {chair: 1, other: 1}
    assert mem.store.counts()["entities"] == 2


def test_a_moving_estimate_is_the_mean_not_the_latest(make_memory: Any, clock: Any) -> None:
    mem = make_memory(clock=clock, **QUIET)
    lamp = mem.add_entity("floor lamp", 0.0, 0.0, timestamp=1.0)
    for t, x in ((2.0, 1.0), (3.0, 2.0), (4.0, 4.0)):  # each within the radius of the estimate
        assert mem.add_entity("floor lamp", x, 0.0, timestamp=t) == lamp
    entity = mem.store.get_entity(lamp)
    assert entity.x == pytest.approx(7.0 / 4)  # mean of 0, 1, 2, 4 (the latest is 4)
    assert entity.observation_count == 4 and entity.last_seen == 4.0


def test_detection_text_is_extracted_into_chair_and_person_entities(
    make_memory: Any, clock: Any
) -> None:
    mem = make_memory(clock=clock, **QUIET)
    body = mem.add_body_state("battery 80%", "battery", 5.0, 5.0, timestamp=1.0)
    seen = mem.add("2 chairs, 1 person", 5.0, 5.0, timestamp=2.0, layer_name="detections")

    assert mem.extract_entities() == 2

    entities = {e.name: e for e in all_entities(mem)}
    assert set(entities) == {"chair", "person"}
    assert entities["person"].entity_type == "person"
    assert all((e.x, e.y, e.first_seen) == (5.0, 5.0, 2.0) for e in entities.values())
    assert sightings(mem) == {("chair", seen), ("person", seen)}
    assert body not in {o for _, o in sightings(mem)}
    [(a, b, count)] = [
        (r["a"], r["b"], r["count"]) for r in mem.store.graph.query("cooccurrence_counts")
    ]
    assert {a, b} == {e.id for e in entities.values()} and count == 1
    assert entity_rows(mem) == {e.id: 1 for e in entities.values()}
    assert mem.extract_entities() == 0  # nothing is extracted twice


def test_with_extraction_off_only_add_entity_makes_entities(make_memory: Any, clock: Any) -> None:
    mem = make_memory(clock=clock, entity_extraction=False, maintenance_interval=None)
    mem.start_episode("patrol")
    mem.add("2 chairs, 1 person", 5.0, 5.0, timestamp=2.0, layer_name="detections")
    lamp = mem.add_entity("lamp", 1.0, 1.0, timestamp=3.0)
    mem.end_episode(wait=True)  # ending an episode extracts what is pending: nothing here

    assert mem.extract_entities() == 0
    assert [e.id for e in all_entities(mem)] == [lamp]
    assert "lamp" in mem.entity_query(name="lamp")


@pytest.mark.parametrize("together", [True, False], ids=["one-batch", "two-batches"])
def test_a_detected_chair_and_a_captioned_red_chair_at_one_place_are_one_entity(
    make_memory: Any, clock: Any, together: bool
) -> None:
    mem = make_memory(clock=clock, **QUIET)
    detection = mem.add("chair", 2.0, 2.0, timestamp=10.0, layer_name="detections")
    if not together:
        mem.extract_entities()
        [first] = all_entities(mem)
        assert first.name == "chair"
    caption = mem.add("a red chair by the door", 2.3, 2.1, timestamp=20.0, layer_name="captions")
    mem.extract_entities()

    [chair] = all_entities(mem)
    assert chair.name == "red chair"  # the more specific name wins
    assert chair.observation_count == 2
    assert (chair.first_seen, chair.last_seen) == (10.0, 20.0)
    assert (chair.x, chair.y) == pytest.approx((2.15, 2.05))
    assert sightings(mem) == {("red chair", detection), ("red chair", caption)}
    assert entity_rows(mem) == {chair.id: 1}
    # Its one vector is the new name's, not the old one's.
    stored = mem.store.vectors.vectors_of([chair.id])[chair.id]
    named, bare = mem.embed(["red chair", "chair"])
    assert float(np.dot(stored, named)) == pytest.approx(1.0, abs=1e-4)
    assert float(np.dot(stored, bare)) < 0.99


def graph_entity_ids(mem: SpatioTemporalMemory) -> set[str]:
    """Entity ids in the graph now, without flushing (store.graph, not mem.store)."""
    rows = mem._store.graph.query_text("MATCH (e:Entity) RETURN e.id AS id")
    return {row["id"] for row in rows}


def test_add_entity_is_staged_and_written_with_the_flushes(
    make_memory: Any, clock: Any, tmp_path: Any
) -> None:
    # Hand-given sightings are merged in memory at once and written by the flushes that write
    # observations: by count (flush_batch_size items) and by time, on flush() and on close().
    mem = make_memory(clock=clock, flush_batch_size=3, flush_interval=3600.0, **QUIET)
    chair = mem.add_entity("red chair", 2.0, 2.0, timestamp=10.0)
    assert mem.add_entity("red chair", 2.4, 2.0, timestamp=11.0) == chair  # staged, merged
    assert graph_entity_ids(mem) == set()
    assert mem.consolidation.resolver.staged == 1

    mem.add_entity("blue door", 9.0, 9.0, timestamp=12.0)  # the third item: a full batch
    deadline = time.monotonic() + 10.0
    while mem.consolidation.resolver.staged and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mem.consolidation.resolver.staged == 0
    assert len(graph_entity_ids(mem)) == 2

    lamp = mem.add_entity("lamp", 20.0, 20.0, timestamp=13.0)
    assert lamp not in graph_entity_ids(mem)
    assert "lamp" in mem.entity_query(name="lamp")  # a tool flushes first
    assert lamp in graph_entity_ids(mem)

    sofa = mem.add_entity("grey sofa", 30.0, 30.0, timestamp=14.0)
    mem.add_entity("grey sofa", 30.5, 30.0, timestamp=15.0)
    mem.close()  # writes what is staged
    reopened = make_memory(clock=clock, **QUIET)
    entity = reopened.store.get_entity(sofa)
    assert entity.observation_count == 2
    assert (entity.x, entity.y) == pytest.approx((30.25, 30.0))
    assert reopened.store.get_entity(chair).observation_count == 2
    assert entity_rows(reopened) == {e.id: 1 for e in all_entities(reopened)}
    # After a reopen the entities are read back and merged into, not duplicated.
    assert reopened.add_entity("red chair", 2.2, 2.0, timestamp=16.0) == chair
    reopened.flush()
    assert reopened.store.get_entity(chair).observation_count == 3


class _CountingEmbedder:
    """The hashing embedder, with every batch it was asked to embed; fails while ``down``."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim, self.calls, self.down = inner, inner.dim, [], False

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.down:
            raise RuntimeError("embedder down")
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_names_are_embedded_to_be_compared_or_with_the_entities_written(
    make_memory: Any, hashing: Any
) -> None:
    """add_entity() embeds a name only to compare it with an entity of another name within
    the radius; the names of entities to write are embedded together at the flush (a lone
    name took 16-26 ms of MiniLM on 2 cores). Every written entity has its vector row and is
    found by name; an embedder down at the flush loses no sighting (written by the next)."""
    embedder = _CountingEmbedder(hashing)
    mem = make_memory("names", embedder=embedder, **QUIET)
    cup = mem.add_entity("Red cup", 1.0, 1.0, timestamp=10.0)
    kettle = mem.add_entity("blue kettle", 30.0, 30.0, timestamp=11.0)
    assert mem.add_entity("red cup", 1.2, 1.0, timestamp=12.0) == cup  # compatible: no vector
    assert not [c for c in embedder.calls if "red cup" in c or "blue kettle" in c]
    mem.flush()
    named = [c for c in embedder.calls if "red cup" in c or "blue kettle" in c]
    assert [sorted(c) for c in named] == [["blue kettle", "red cup"]], embedder.calls  # one call
    assert entity_rows(mem) == Counter({cup: 1, kettle: 1})
    # Another name within the radius is compared by its vector: embedded at the sighting.
    embedder.calls.clear()
    mug = mem.add_entity("green mug", 2.0, 1.0, timestamp=13.0)
    assert mug != cup and embedder.calls == [["green mug"]]
    mem.flush()
    assert entity_rows(mem) == Counter({cup: 1, kettle: 1, mug: 1})
    # Down at the flush: the sighting stays staged, and the next flush writes it.
    embedder.down = True
    box = mem.add_entity("yellow box", 60.0, 60.0, timestamp=14.0)
    with pytest.raises(BackendUnavailableError, match="RuntimeError: embedder down"):
        mem.flush()  # the staged change is retried, and an explicit flush says why it failed
    assert box not in mem._store.vectors.all_ids(ENTITY_ROWS)  # .store would flush again
    embedder.down = False
    mem.flush()
    assert entity_rows(mem)[box] == 1
    assert "yellow box" in mem.entity_query(name="yellow")
    vector = mem.embed(["yellow box"])[0]
    assert mem.store.vectors.search(vector, 1, ENTITY_ROWS)[0].id == box


@pytest.mark.parametrize("cache_size", [10_000, 0])
def test_a_flush_embeds_its_texts_and_its_new_names_in_one_model_call(
    make_memory: Any, hashing: Any, cache_size: int
) -> None:
    """The names of the entities a flush writes are embedded with the batch's observation
    texts, in one call of the model (a call of its own cost 20-40 ms of MiniLM for a few
    names), through the embedding cache; without a cache they get a call of their own. Either
    way every entity is written with its name's vector."""
    embedder = _CountingEmbedder(hashing)
    mem = make_memory(
        f"one-call-{cache_size}",
        embedder=embedder,
        embedding_cache_size=cache_size,
        flush_interval=3600.0,  # only the test's flush() writes, however loaded the machine
        **QUIET,
    )
    mem.add("a kettle on the counter", 1.0, 1.0, timestamp=10.0)
    kettle = mem.add_entity("Blue  kettle", 1.0, 1.0, timestamp=10.0)
    mem.add("a mug by the sink", 5.0, 1.0, timestamp=11.0)
    mug = mem.add_entity("green mug", 40.0, 1.0, timestamp=11.0)
    embedder.calls.clear()
    mem.flush()
    texts = ["a kettle on the counter", "a mug by the sink"]
    if cache_size:
        assert embedder.calls == [[*texts, "blue kettle", "green mug"]]
    else:
        assert embedder.calls == [texts, ["blue kettle", "green mug"]]
    assert entity_rows(mem) == Counter({kettle: 1, mug: 1})
    for name, entity_id in (("blue kettle", kettle), ("green mug", mug)):
        vector = hashing.embed([name])[0]
        assert mem.store.vectors.search(vector, 1, ENTITY_ROWS)[0].id == entity_id
    # Names already embedded are not asked again.
    embedder.calls.clear()
    mem.add("the kettle again", 1.1, 1.0, timestamp=12.0)
    assert mem.add_entity("blue kettle", 1.1, 1.0, timestamp=12.0) == kettle
    mem.flush()
    assert embedder.calls == [["the kettle again"]]
