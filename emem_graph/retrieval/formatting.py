"""Line formats of API.md: how observations, entities and gists read in tool output."""

from __future__ import annotations

from datetime import datetime, timezone

from emem_graph.models import Entity, Gist, Observation


def format_time(timestamp: float) -> str:
    """UTC ``YYYY-mm-dd HH:MM:SS`` (simulation time 0.0 reads as 1970-01-01 00:00:00)."""
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def format_observation(o: Observation) -> str:
    """``[{layer}] ({x},{y}) [{time}] {text}``"""
    return f"[{o.layer_name}] ({o.x:.1f},{o.y:.1f}) [{format_time(o.timestamp)}] {o.text}"


def format_entity(e: Entity) -> str:
    """``[entity/{type or 'object'}] ({x},{y}) [seen {count}x] {name}``"""
    kind = e.entity_type or "object"
    return f"[entity/{kind}] ({e.x:.1f},{e.y:.1f}) [seen {e.observation_count}x] {e.name}"


def format_gist(g: Gist) -> str:
    """``[gist/{layer or 'cross-layer'}] ({x},{y}) [{n} obs] {text}``"""
    layer = g.layer_name or "cross-layer"
    return f"[gist/{layer}] ({g.x:.1f},{g.y:.1f}) [{g.source_observation_count} obs] {g.text}"


def format_record(record: Observation | Gist | Entity) -> str:
    """The line of any record."""
    if isinstance(record, Observation):
        return format_observation(record)
    if isinstance(record, Gist):
        return format_gist(record)
    return format_entity(record)


def numbered(lines: list[str]) -> str:
    """Lines numbered ``1. ``, ``2. `` ..."""
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
