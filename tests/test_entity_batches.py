"""Entity writes in batches: the entities, stays, sighting edges and co-occurrences
of an extraction batch are written with one statement per kind of change (``UNWIND $rows``
over the batch's rows) instead of one statement per row. The graph they leave must be the one the
statements per row leave: the same patrol written both ways, with the same ids, gives the same
entities, stays, sighting edges and co-occurrence counts."""

from __future__ import annotations

import itertools
import math
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from emem_graph.consolidation import entities, entity_tracking, entity_writes
from emem_graph.evals.bench.drive import SimClock, emem_graph_subject, ingest
from emem_graph.evals.bench.workload import START, patrol_workload
from emem_graph.ingest.embeddings import HashingEmbedder

E = "e.name, e.first_seen, e.x, e.y"
"""An entity by what it is (its id is drawn at random, and the two runs draw differently)."""
QUERIES = {
    "entities": f"MATCH (e:Entity) RETURN {E}, e.entity_type, e.z, e.last_seen, "
    "e.observation_count, e.confidence, e.layer, e.metadata",
    "stays": f"MATCH (e:Entity)-[:WAS_AT]->(p:Position) RETURN {E}, p.entity_id = e.id, p.x, "
    "p.y, p.z, p.first_seen, p.last_seen, p.count, p.ended",
    "sightings": f"MATCH (e:Entity)-[r:OBSERVED_IN]->(o:Observation) RETURN {E}, o.timestamp, "
    "o.text, r.confidence",
    "together": "MATCH (a:Entity)-[c:COOCCURS_WITH]->(b:Entity) RETURN a.name, a.first_seen, "
    "a.x, a.y, b.name, b.first_seen, b.x, b.y, a.id < b.id, c.count, c.first_seen, c.last_seen",
}


def _graph_after_patrol(
    directory: Path, n: int, monkeypatch: pytest.MonkeyPatch
) -> dict[str, list[tuple[Any, ...]]]:
    """Write the bench's patrol (n observations, entity extraction on) and return every
    entity-side row of the graph, sorted. Entity and stay ids come from a counter: the
    resolver visits entities in sets, whose order follows the ids."""
    counter = itertools.count(1)
    ids = types.SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(counter)))
    monkeypatch.setattr(entities, "uuid", ids)
    monkeypatch.setattr(entity_tracking, "uuid", ids)  # stays
    embedder = HashingEmbedder(384)
    work = patrol_workload(n, embedder=embedder, queries=2)
    clock = SimClock(START)
    # One flush, at the end: which sightings and detections share a flush decides what the
    # extraction learns first, and with flushes by count on the flush thread that is the
    # machine's timing (CI: two runs of this test wrote different batches, 'blue door' merged
    # 3 sightings in one and 1 in the other). The writes compared here are the same.
    subject = emem_graph_subject(directory, embedder, clock, n + 1, extract=True)
    memory = subject.open()
    try:
        ingest(memory, work, clock, subject.settle)
        graph = memory.store.graph
        return {
            name: sorted(tuple(row.values()) for row in graph.query_text(cypher))
            for name, cypher in QUERIES.items()
        }
    finally:
        memory.close()


def test_batched_entity_writes_leave_the_graph_the_statements_per_row_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batched = _graph_after_patrol(tmp_path / "batched", 1200, monkeypatch)
    assert len(batched["entities"]) > 50  # the patrol's sightings made many entities
    assert len(batched["sightings"]) > len(batched["entities"])
    assert batched["together"] and batched["stays"]

    def per_row(change: Any, query: str, batch: str, rows: Any, *args: Any, **kw: Any) -> None:
        change.run_each(query, rows)

    monkeypatch.setattr(entity_writes, "batched", per_row)
    monkeypatch.setattr(entity_writes, "ROWS_PER_SCAN", math.inf)  # the sightings' edges too
    one_by_one = _graph_after_patrol(tmp_path / "per_row", 1200, monkeypatch)

    for name in QUERIES:
        assert batched[name] == one_by_one[name], name


def test_a_sighting_of_an_observation_the_graph_lacks_holds_nothing_back(tmp_path: Path) -> None:
    """An OBSERVED_IN edge to an observation the graph does not hold is not written, and the
    batch's other entities and edges are."""
    embedder = HashingEmbedder(384)
    clock = SimClock(START)
    subject = emem_graph_subject(tmp_path / "m", embedder, clock, 50, extract=False)
    memory = subject.open()
    try:
        ids = [memory.add(f"a crate number {i}", float(i), 0.0) for i in range(40)]
        memory.flush()
        resolver = memory._consolidation.resolver
        sightings = [
            entities.Sighting(
                name=f"crate {i}", x=float(i), y=0.0, z=0.0, timestamp=START, observation_id=oid
            )
            for i, oid in enumerate([*ids, "never-written"])
        ]
        resolved = resolver.resolve(sightings)
        rows = memory.store.graph.query_text(
            "MATCH (e:Entity)-[:OBSERVED_IN]->(o:Observation) RETURN o.id AS id"
        )
        assert sorted(r["id"] for r in rows) == sorted(ids)
        written = memory.store.graph.query_text("MATCH (e:Entity) RETURN e.id AS id")
        assert {r["id"] for r in written} == set(resolved)
    finally:
        memory.close()
