"""memory_stats: what a memory holds and what it costs on disk, read without changing it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import get_args

from pydantic import BaseModel

from emem_graph.explore.readonly import ReadOnlyMemory
from emem_graph.explore.selection import (
    CAPABILITY_NODE_TABLES,
    CAPABILITY_REL_TABLES,
    CORE_REL_TABLES,
)
from emem_graph.filters import VectorFilter
from emem_graph.ingest.rejected import count_rejected
from emem_graph.ingest.unwritten import count_unwritten
from emem_graph.models import AGENT_NOTE, INTEROCEPTION, NodeKind, Tier
from emem_graph.storage.health import read_health
from emem_graph.storage.vectors import TABLE

_NODE_COUNT_KEYS = {
    "observations": "Observation",
    "episodes": "Episode",
    "gists": "Gist",
    "entities": "Entity",
}
"""Columns of queries/node_counts.cypher and the node tables they count."""
SOURCES = ("perception", "body_state", "agent_note")
"""How observations are grouped by source_type: body state is ``interoception``, notes the
agent stored are ``agent_note``, everything else is perception."""


class DiskUse(BaseModel):
    """Bytes on disk (file sizes) of each store of a memory and of its whole directory."""

    graph: int
    """The Kuzu file and its write-ahead log."""
    vectors: int
    """The LanceDB directory (vectors, indexes, versions)."""
    pending_vectors: int
    """Vectors journalled but not yet in LanceDB (the pending_vectors directory)."""
    total: int
    """Every file under the memory's directory."""


class MemoryStats(BaseModel):
    """Counts, time span and disk use of one memory (``memory_stats``)."""

    directory: str
    schema_version: str | None
    embedding_dim: int
    nodes: dict[str, int]
    """Per node table: Observation, Episode, Gist, Entity, then the capabilities' tables (Place;
    User, Knowledge, Pattern, ProfileObject, ProfileLocation)."""
    edges: dict[str, int]
    """Per rel table: BELONGS_TO, FOLLOWS, SUBTASK_OF, SUMMARIZES, OBSERVED_IN, COOCCURS_WITH,
    then the capabilities' (CONNECTS, AT_PLACE; REFERS_TO, ENTAILS, TARGET, COMPOSED_OF,
    BEFORE, GROUNDED_AS)."""
    observations_by_tier: dict[str, int]
    observations_by_layer: dict[str, int]
    observations_by_source: dict[str, int]
    """perception / body_state / agent_note (see SOURCES)."""
    first_observation_time: float | None
    last_observation_time: float | None
    first_observation_utc: str | None
    last_observation_utc: str | None
    disk: DiskUse
    vector_rows: dict[str, int]
    """Rows of the vector table per kind (observation, gist, entity)."""
    pending_vectors: int
    """Nodes whose vector work is journalled but not yet in LanceDB (redone on the next
    read-write open)."""
    vector_table_missing: bool = False
    """The vector table is not there (removed, or something else in its place): its rows read
    0 here, and the next read-write open rebuilds it from the graph."""
    rejected_observations: int = 0
    """Observations accepted at the door that the store could not write, set aside in
    rejected.jsonl (never retried in front of the others)."""
    unwritten_observations: int = 0
    """Observations and add_entity() sightings a failed close kept in unwritten.jsonl: the
    next read-write open writes them (until then a read-only open is refused)."""

    health: dict[str, int] = {}
    """Damage found on opening the memory and repaired or reported (storage/health.py):
    vector_rebuilds, graph_losses (flushed observations a damaged graph WAL dropped),
    damage_reports (every report)."""

    def to_json(self) -> str:
        """The JSON form (what ``emem-graph stats --json`` prints)."""
        return self.model_dump_json(indent=2)


def memory_stats(directory: str | Path) -> MemoryStats:
    """Count what the memory in ``directory`` holds, opened read-only.

    Raises:
        InvalidInputError: the directory holds no memory.
        StorageError: the memory cannot be opened (e.g. another process writes it).
    """
    with ReadOnlyMemory(directory) as memory:
        graph = memory.graph
        node_row = graph.query("node_counts")[0]
        edge_row = graph.query("stats_edge_counts")[0]
        capability = {
            (row["kind"], row["name"]): int(row["n"]) for row in graph.query("capability_counts")
        }
        groups = graph.query("stats_observation_groups")
        span = graph.query("observation_time_span")[0]
        pending = int(graph.query("count_vector_journal")[0]["n"])
        vector_rows = dict.fromkeys(get_args(NodeKind), 0)
        if memory.vectors is not None:
            vectors = memory.vectors
            vector_rows = {k: vectors.count(VectorFilter(kinds=(k,))) for k in vector_rows}
        disk = DiskUse(
            graph=_bytes(memory.graph_path) + _bytes(Path(f"{memory.graph_path}.wal")),
            vectors=_bytes(memory.vector_path),
            pending_vectors=_bytes(memory.pending_path),
            total=_bytes(memory.root),
        )
        by_tier = dict.fromkeys(get_args(Tier), 0)
        by_layer: dict[str, int] = {}
        by_source = dict.fromkeys(SOURCES, 0)
        for group in groups:
            n = int(group["n"])
            by_tier[group["tier"]] = by_tier.get(group["tier"], 0) + n
            by_layer[group["layer"]] = by_layer.get(group["layer"], 0) + n
            by_source[_source(group["source_type"])] += n
        return MemoryStats(
            directory=str(memory.root),
            schema_version=memory.info.get("schema_version"),
            embedding_dim=memory.embedding_dim,
            nodes={
                **{table: int(node_row[key]) for key, table in _NODE_COUNT_KEYS.items()},
                **{table: capability[("node", table)] for table in CAPABILITY_NODE_TABLES},
            },
            edges={
                **{rel: int(edge_row[rel]) for rel in CORE_REL_TABLES},
                **{rel: capability[("edge", rel)] for rel in CAPABILITY_REL_TABLES},
            },
            observations_by_tier=by_tier,
            observations_by_layer=dict(sorted(by_layer.items(), key=lambda kv: (-kv[1], kv[0]))),
            observations_by_source=by_source,
            first_observation_time=span["first_time"],
            last_observation_time=span["last_time"],
            first_observation_utc=_utc(span["first_time"]),
            last_observation_utc=_utc(span["last_time"]),
            disk=disk,
            vector_rows=vector_rows,
            pending_vectors=pending,
            vector_table_missing=memory.vectors is None,
            health={k: v for k, v in read_health(memory.root).items() if k != "reports"},
            rejected_observations=count_rejected(memory.root),
            unwritten_observations=count_unwritten(memory.root),
        )


def format_stats(stats: MemoryStats) -> str:
    """The stats as aligned text sections, for people."""
    lines = [
        f"memory {stats.directory} (schema {stats.schema_version}, "
        f"{stats.embedding_dim}-dimensional vectors)"
    ]
    _section(lines, f"nodes ({sum(stats.nodes.values())})", stats.nodes)
    _section(lines, f"edges ({sum(stats.edges.values())})", stats.edges)
    _section(lines, "observations by tier", stats.observations_by_tier)
    _section(lines, "observations by layer", stats.observations_by_layer or {"(none)": 0})
    _section(lines, "body state vs perception", stats.observations_by_source)
    first, last = stats.first_observation_time, stats.last_observation_time
    span = (
        {"(no observations)": ""}
        if first is None or last is None
        else {
            "first": f"{stats.first_observation_utc}  ({first:.3f})",
            "last": f"{stats.last_observation_utc}  ({last:.3f})",
            "span": _duration(last - first),
        }
    )
    _section(lines, "time span (UTC)", span)
    disk = stats.disk
    _section(
        lines,
        "disk use",
        {
            "graph (file + wal)": _size(disk.graph),
            "vectors": _size(disk.vectors),
            "pending vectors": _size(disk.pending_vectors),
            "total": _size(disk.total),
        },
    )
    _section(
        lines,
        f"vector rows ({sum(stats.vector_rows.values())})",
        {**stats.vector_rows, "pending (not yet indexed)": stats.pending_vectors},
    )
    if stats.vector_table_missing:
        lines.append(
            f"vector table missing: vectors/{TABLE}.lance is not there (removed, or not a table); "
            "the next read-write open rebuilds it from the graph"
        )
    if stats.rejected_observations:
        _section(
            lines,
            "set aside (could not be written)",
            {"rejected.jsonl": stats.rejected_observations},
        )
    if stats.unwritten_observations:
        _section(
            lines,
            "left unwritten by a failed close (the next read-write open writes them)",
            {"unwritten.jsonl": stats.unwritten_observations},
        )
    if any(stats.health.values()):
        _section(lines, "damage repaired or reported (health.json)", stats.health)
    return "\n".join(lines)


def _source(source_type: str | None) -> str:
    if source_type == INTEROCEPTION:
        return "body_state"
    if source_type == AGENT_NOTE:
        return "agent_note"
    return "perception"


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return 0


def _utc(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    try:
        moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(seconds: float) -> str:
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{days}d {text}" if days else text


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def _section(lines: list[str], title: str, values: Mapping[str, object]) -> None:
    lines.append("")
    lines.append(title)
    width = max((len(name) for name in values), default=0)
    for name, value in values.items():
        lines.append(f"  {name:<{width}}  {value}")
