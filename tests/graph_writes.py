"""Test-only writers for what the library does not write yet through its own API: gists with
SUMMARIZES edges, OBSERVED_IN and COOCCURS_WITH edges, archival of observations.

They use the graph's public bulk-load calls (COPY from Arrow) inside one write transaction and
add the vector rows directly, so the retrieval tools can be tested against real Kuzu and
LanceDB files before consolidation exists.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa

from emem_graph import Gist, SpatioTemporalMemory
from emem_graph.storage.changes import GraphChange
from emem_graph.storage.records import gist_vector


def write_gist(
    mem: SpatioTemporalMemory,
    text: str,
    x: float,
    y: float,
    *,
    time_start: float,
    time_end: float,
    observation_ids: Sequence[str] = (),
    layer: str | None = None,
    radius: float = 2.0,
    episode_id: str | None = None,
) -> str:
    """A gist node summarizing ``observation_ids`` (SUMMARIZES edges) and its vector row."""
    mem.flush()
    gist = Gist(
        id=uuid.uuid4().hex,
        text=text,
        x=x,
        y=y,
        radius=radius,
        time_start=time_start,
        time_end=time_end,
        source_observation_count=len(observation_ids),
        layer_name=layer,
        episode_id=episode_id,
    )
    row = {
        "id": gist.id,
        "text": gist.text,
        "x": gist.x,
        "y": gist.y,
        "z": gist.z,
        "radius": gist.radius,
        "extent_wkt": None,
        "time_start": gist.time_start,
        "time_end": gist.time_end,
        "source_observation_count": gist.source_observation_count,
        "layer": gist.layer_name,
        "episode_id": gist.episode_id,
        "level": 0,
        "tier": gist.tier,
        "created_at": gist.time_end,
    }
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("x", pa.float64()),
            ("y", pa.float64()),
            ("z", pa.float64()),
            ("radius", pa.float64()),
            ("extent_wkt", pa.string()),
            ("time_start", pa.float64()),
            ("time_end", pa.float64()),
            ("source_observation_count", pa.int64()),
            ("layer", pa.string()),
            ("episode_id", pa.string()),
            ("level", pa.int64()),
            ("tier", pa.string()),
            ("created_at", pa.float64()),
        ]
    )
    with mem._store.graph.write() as tx:
        tx.copy_nodes("Gist", pa.Table.from_pylist([row], schema=schema))
        if observation_ids:
            edges = pa.table(
                {"from": [gist.id] * len(observation_ids), "to": list(observation_ids)}
            )
            tx.copy_edges("SUMMARIZES", edges, from_table="Gist", to_table="Observation")
    mem._store.vectors.add([gist_vector(gist, mem.embed([text])[0])])
    return gist.id


def link_observed_in(
    mem: SpatioTemporalMemory, entity_id: str, observation_ids: Sequence[str]
) -> None:
    """OBSERVED_IN edges from an entity to observations (through the store, as the entity
    resolver writes them, so its in-process entity index sees them too)."""
    mem.flush()
    change = GraphChange().run_each(
        "link_observed_in",
        [{"entity_id": entity_id, "observation_id": o, "confidence": 0.9} for o in observation_ids],
    )
    change.follow_entities([], [(entity_id, o) for o in observation_ids])
    mem._store.apply(change)


def link_cooccurs(
    mem: SpatioTemporalMemory, a: str, b: str, count: int, first_seen: float, last_seen: float
) -> None:
    """One COOCCURS_WITH edge for the unordered pair (a, b)."""
    mem.flush()  # entities from add_entity() are written by the flushes
    edges = pa.table(
        {
            "from": [a],
            "to": [b],
            "count": pa.array([count], type=pa.int64()),
            "first_seen": [first_seen],
            "last_seen": [last_seen],
        }
    )
    with mem._store.graph.write() as tx:
        tx.copy_edges("COOCCURS_WITH", edges, from_table="Entity", to_table="Entity")


def archive_window(mem: SpatioTemporalMemory, after: float, before: float) -> list[str]:
    """Mark the observations of a time window archived with their text emptied (what archival
    does), and drop their vectors. Returns their ids."""
    mem.flush()
    ids = [
        o.id
        for o in mem._store.observations_in_time(
            after, before, limit=100_000, include_body_state=True
        )
    ]
    # Literal numbers from the test itself (the graph API takes parameters only in named files).
    with mem._store.graph.write() as tx:
        tx.run_text(
            f"MATCH (o:Observation) WHERE o.timestamp >= {float(after)!r} "
            f"AND o.timestamp <= {float(before)!r} SET o.tier = 'archived', o.text = ''"
        )
    mem._store.vectors.delete(ids)
    mem._store.index.set_tier(ids, "archived")  # what the store does after an archival change
    return ids
