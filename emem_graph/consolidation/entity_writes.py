"""How EntityResolver's changes are written: one GraphChange per batch, with statements per
row or one ``UNWIND $rows`` statement over the batch, whichever the batch is worth
(ROWS_PER_SCAN)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from emem_graph.consolidation.entity_tracking import Tracked, tracked_vector
from emem_graph.models import Entity
from emem_graph.storage.changes import GraphChange
from emem_graph.storage.records import entity_params, entity_vector, position_params

if TYPE_CHECKING:
    from emem_graph.storage.observation_index import ObservationIndex

ROWS_PER_SCAN = 1 / 64
"""Rows of a batch worth one scan of the table its statement joins: a batched statement
(``UNWIND $rows``, one statement for every row) matches its rows by a scan and hash join over
the Entity or Position table (~3 us a table row), where one statement per row looks each up by
primary key (~0.3-0.5 ms a row, most of it the call). Measured on Kuzu 0.11.3."""
ENTITY_ARROW = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("entity_type", pa.string()),
        ("x", pa.float64()),
        ("y", pa.float64()),
        ("z", pa.float64()),
        ("first_seen", pa.float64()),
        ("last_seen", pa.float64()),
        ("observation_count", pa.int64()),
        ("confidence", pa.float64()),
        ("layer", pa.string()),
        ("metadata", pa.string()),
    ]
)
POSITION_ARROW = pa.schema(
    [
        ("id", pa.string()),
        ("entity_id", pa.string()),
        ("x", pa.float64()),
        ("y", pa.float64()),
        ("z", pa.float64()),
        ("first_seen", pa.float64()),
        ("last_seen", pa.float64()),
        ("count", pa.int64()),
        ("ended", pa.float64()),
    ]
)
COOCCURRENCE_ARROW = pa.schema(
    [
        ("a", pa.string()),
        ("b", pa.string()),
        ("n", pa.int64()),
        ("first_seen", pa.float64()),
        ("last_seen", pa.float64()),
    ]
)


def entity_change(
    tracked: list[Tracked],
    links: dict[tuple[str, str], float],
    together: dict[str, tuple[set[str], float]],
    *,
    known: int,
    splits: list[dict[str, Any]],
    index: ObservationIndex,
) -> GraphChange:
    """The graph change that writes ``tracked`` (new and changed entities and their stays),
    the sightings' OBSERVED_IN ``links`` (entity, observation) -> confidence, the
    COOCCURS_WITH counts of the entities seen ``together`` in one observation, and the
    relinked edges of ``splits``; ``known``: entities the graph holds already."""
    pairs: dict[tuple[str, str], list[float]] = {}
    for members, seen in together.values():
        ordered = sorted(members)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                count, first, last = pairs.get((a, b), [0.0, seen, seen])
                pairs[(a, b)] = [count + 1, min(first, seen), max(last, seen)]
    new = [t for t in tracked if t.new]
    updated = [t for t in tracked if t.changed and not t.new]
    change = GraphChange()
    entities = known + len(new)
    batched(
        change,
        "create_entity",
        "create_entities",
        [entity_params(t.entity) for t in new],
        ENTITY_ARROW,
    )
    batched(
        change,
        "update_entity",
        "update_entities",
        [update_params(t.entity) for t in updated],
        ENTITY_ARROW,
        joined=entities,
    )
    stays = {s.id: s for t in tracked for s in t.stays}
    change.run_each(
        "relink_position",
        [{"id": i, "entity_id": t.entity.id} for t in tracked for i in sorted(t.taken_stays)],
    )
    batched(
        change,
        "update_position",
        "update_positions",
        [
            position_params(stays[i])
            for t in tracked
            for i in sorted(t.changed_stays | t.taken_stays)
        ],
        POSITION_ARROW,
        joined=entities,  # about one stay per entity
    )
    batched(
        change,
        "create_position",
        "create_positions",
        [position_params(stays[i]) for t in tracked for i in sorted(t.new_stays)],
        POSITION_ARROW,
        joined=entities,
    )
    change.run_each(
        "delete_position", [{"id": i} for t in tracked for i in sorted(t.dropped_stays)]
    )
    change.run_each("split_observed_in", list(splits))
    batched(
        change,
        "merge_cooccurrence",
        "merge_cooccurrences",
        [
            {"a": a, "b": b, "n": int(n), "first_seen": first, "last_seen": last}
            for (a, b), (n, first, last) in pairs.items()
        ],
        COOCCURRENCE_ARROW,
        joined=entities,
    )
    link_sightings(change, links, index)
    change.upsert([entity_vector(t.entity, tracked_vector(t)) for t in new + updated])
    change.follow_entities(
        [t.entity for t in new + updated],
        list(links),
        [stays[i] for t in tracked for i in sorted(t.new_stays | t.changed_stays | t.taken_stays)],
        [i for t in tracked for i in sorted(t.dropped_stays)],
    )
    return change


def link_sightings(
    change: GraphChange, links: dict[tuple[str, str], float], index: ObservationIndex
) -> None:
    """The OBSERVED_IN edges of the sightings. Those of observations the store's index
    holds (every committed one: it is appended under the store's write lock) go in one
    statement whose scan of the Observation table keeps the rows from the earliest of
    their times on (the observations just flushed, at any table size), when the batch is
    worth that scan (ROWS_PER_SCAN); the others one statement each, by primary key (one
    of an observation the graph lacks creates nothing). One statement per edge cost
    ~0.5 ms, most of what extraction cost; a rel-table COPY cost as much with
    its commit, and a rollback after one loses every edge of its table."""
    edges = [(e, o, float(c)) for (e, o), c in links.items()]
    times = index.times_of([o for _, o, _ in edges])
    known = ~np.isnan(times)
    if known.any():
        since = float(times[known].min())
        batch = [edge for edge, k in zip(edges, known.tolist(), strict=True) if k]
        if len(batch) >= index.count_since(since) * ROWS_PER_SCAN:
            edges = [edge for edge, k in zip(edges, known.tolist(), strict=True) if not k]
            table = pa.table(
                {
                    "entity_id": pa.array([e for e, _, _ in batch], type=pa.string()),
                    "observation_id": pa.array([o for _, o, _ in batch], type=pa.string()),
                    "confidence": pa.array([c for _, _, c in batch], type=pa.float64()),
                }
            )
            change.run("link_observed_in_since", {"rows": table, "since": since})
    change.run_each(
        "link_observed_in",
        [{"entity_id": e, "observation_id": o, "confidence": c} for e, o, c in edges],
    )


def batched(
    change: GraphChange,
    query: str,
    batch: str,
    rows: list[dict[str, Any]],
    schema: pa.Schema,
    *,
    joined: int = 0,
) -> None:
    """Add ``query`` for ``rows``: once per row (its primary-key form), or as one ``UNWIND
    $rows`` statement (its batch form, ``batch``; the rows are built as an Arrow table of
    ``schema`` and reach the engine as a list, storage/graph.py: rows_as_list) when the batch
    is worth a scan of the ``joined`` rows of the table it matches (ROWS_PER_SCAN; 0: no
    join)."""
    if not rows:
        return
    if len(rows) < joined * ROWS_PER_SCAN:
        change.run_each(query, rows)
        return
    change.run(batch, {"rows": pa.Table.from_pylist(rows, schema=schema)})


def update_params(e: Entity) -> dict[str, Any]:
    """update_entity's parameters: every property but the layer an entity was first seen by."""
    return {k: v for k, v in entity_params(e).items() if k != "layer"}
