"""Records: how nodes read and write in Kuzu rows, LanceDB rows and Arrow tables.

Pure conversions between the typed models and the stores' row forms; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from emem_graph.models import Entity, EntityPosition, Episode, Gist, Observation
from emem_graph.storage.vector_schema import VectorRow

OBSERVATION_ARROW = pa.schema(
    [
        ("id", pa.string()),
        ("text", pa.string()),
        ("x", pa.float64()),
        ("y", pa.float64()),
        ("z", pa.float64()),
        ("timestamp", pa.float64()),
        ("layer", pa.string()),
        ("source_type", pa.string()),
        ("confidence", pa.float64()),
        ("tier", pa.string()),
        ("episode_id", pa.string()),
        ("metadata", pa.string()),
    ]
)


def observation_row(o: Observation) -> dict[str, Any]:
    return {
        "id": o.id,
        "text": o.text,
        "x": o.x,
        "y": o.y,
        "z": o.z,
        "timestamp": o.timestamp,
        "layer": o.layer_name,
        "source_type": o.source_type,
        "confidence": o.confidence,
        "tier": "short_term",
        "episode_id": o.episode_id,
        "metadata": json.dumps(o.metadata),
    }


def entity_params(e: Entity) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "entity_type": e.entity_type,
        "x": e.x,
        "y": e.y,
        "z": e.z,
        "first_seen": e.first_seen,
        "last_seen": e.last_seen,
        "observation_count": int(e.observation_count),
        "confidence": e.confidence,
        "layer": e.layer_name,
        "metadata": json.dumps(e.metadata),
    }


def journal_table(
    ids: Sequence[str], kind: str, vectors: Sequence[np.ndarray] | np.ndarray
) -> pa.Table:
    """VectorSync rows as Arrow (id, kind, op, vector), for the store's journal.

    The graph gets the id, kind and op (queries/journal_vectors.cypher through ``UNWIND``, or
    COPY for a bulk batch); the vectors never reach the engine: they wait in the pending-vector
    files (storage/pending.py) until LanceDB holds them.
    """
    flat = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
    if flat.shape[0] != len(ids):
        raise ValueError(f"{len(ids)} journal ids but {flat.shape[0]} vectors")
    return pa.table(
        {
            "id": pa.array(list(ids), type=pa.string()),
            "kind": pa.array([kind] * len(ids), type=pa.string()),
            "op": pa.array(["upsert"] * len(ids), type=pa.string()),
            "vector": pa.ListArray.from_arrays(
                pa.array(np.arange(0, flat.size + 1, max(flat.shape[1], 1)), type=pa.int32()),
                pa.array(flat.reshape(-1), type=pa.float32()),
            ),
        }
    )


def observation_vector(o: Observation, vector: np.ndarray) -> VectorRow:
    return VectorRow(
        id=o.id,
        kind="observation",
        vector=vector,
        x=o.x,
        y=o.y,
        z=o.z,
        t=o.timestamp,
        t_end=o.timestamp,
        layer=o.layer_name,
        source_type=o.source_type,
        episode_id=o.episode_id,
        tier="short_term" if o.tier == "working" else o.tier,
        text=o.text,
    )


def gist_vector(g: Gist, vector: np.ndarray) -> VectorRow:
    return VectorRow(
        id=g.id,
        kind="gist",
        vector=vector,
        x=g.x,
        y=g.y,
        z=g.z,
        t=g.time_start,
        t_end=g.time_end,
        layer=g.layer_name,
        source_type=None,
        episode_id=g.episode_id,
        tier=g.tier,
        text=g.text,
    )


def entity_vector(e: Entity, vector: np.ndarray) -> VectorRow:
    return VectorRow(
        id=e.id,
        kind="entity",
        vector=vector,
        x=e.x,
        y=e.y,
        z=e.z,
        t=e.first_seen,
        t_end=e.last_seen,
        layer=e.layer_name,
        source_type=None,
        episode_id=None,
        tier="long_term",
        text=vector_text(e),
    )


def vector_row(node: Observation | Gist | Entity, vector: np.ndarray) -> VectorRow:
    if isinstance(node, Observation):
        return observation_vector(node, vector)
    if isinstance(node, Gist):
        return gist_vector(node, vector)
    return entity_vector(node, vector)


def vector_text(node: Observation | Gist | Entity) -> str:
    """The text a node's vector embeds (an entity: its name)."""
    return node.name if isinstance(node, Entity) else node.text


def metadata_of(raw: str | None) -> dict[str, Any]:
    """The metadata dict stored as JSON text (a non-dict JSON value is wrapped)."""
    if not raw or raw == "{}":  # most observations' (no parse: temporal_query reads ten)
        return {}
    value = json.loads(raw)
    return value if isinstance(value, dict) else {"value": value}


def observation(n: dict[str, Any]) -> Observation:
    return Observation(
        id=n["id"],
        text=n["text"] or "",
        x=n["x"],
        y=n["y"],
        z=n["z"],
        timestamp=n["timestamp"],
        layer_name=n["layer"],
        source_type=n["source_type"],
        confidence=n["confidence"],
        episode_id=n["episode_id"],
        metadata=metadata_of(n["metadata"]),
        tier=n["tier"],
    )


def gist(n: dict[str, Any]) -> Gist:
    return Gist(
        id=n["id"],
        text=n["text"] or "",
        x=n["x"],
        y=n["y"],
        z=n["z"] or 0.0,
        radius=n["radius"] or 0.0,
        extent_wkt=n["extent_wkt"],
        time_start=n["time_start"],
        time_end=n["time_end"],
        source_observation_count=n["source_observation_count"] or 0,
        layer_name=n["layer"],
        episode_id=n["episode_id"],
        level=n["level"] or 0,
        tier=n["tier"] or "long_term",
        created_at=n["created_at"] or 0.0,
    )


def entity(n: dict[str, Any]) -> Entity:
    return Entity(
        id=n["id"],
        name=n["name"],
        entity_type=n["entity_type"],
        x=n["x"],
        y=n["y"],
        z=n["z"] or 0.0,
        first_seen=n["first_seen"],
        last_seen=n["last_seen"],
        observation_count=n["observation_count"],
        confidence=n["confidence"],
        layer_name=n["layer"] or "default",
        metadata=metadata_of(n["metadata"]),
    )


def position(n: dict[str, Any]) -> EntityPosition:
    return EntityPosition(
        id=n["id"],
        entity_id=n["entity_id"],
        x=n["x"],
        y=n["y"],
        z=n["z"] or 0.0,
        first_seen=n["first_seen"],
        last_seen=n["last_seen"],
        count=n["count"],
        ended=n["ended"],
    )


def position_params(p: EntityPosition) -> dict[str, Any]:
    return {
        "id": p.id,
        "entity_id": p.entity_id,
        "x": p.x,
        "y": p.y,
        "z": p.z,
        "first_seen": p.first_seen,
        "last_seen": p.last_seen,
        "count": int(p.count),
        "ended": p.ended,
    }


def episode(n: dict[str, Any]) -> Episode:
    return Episode(
        id=n["id"],
        name=n["name"],
        start_time=n["start_time"],
        end_time=n["end_time"],
        status=n["status"],
        gist=n["gist"],
        parent_episode_id=n["parent_episode_id"],
        metadata=metadata_of(n["metadata"]),
    )


CONVERT = {"observation": observation, "gist": gist, "entity": entity}


def nodes_by_id(rows: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    convert = CONVERT[kind]
    nodes = {}
    for row in rows:
        node = next(iter(row.values()))
        nodes[node["id"]] = convert(node)
    return nodes
