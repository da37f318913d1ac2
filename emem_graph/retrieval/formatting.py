"""Line formats of API.md: how observations, entities and gists read in tool output.

Every record a formatter renders is also noted for ``collect_records()``, so a caller (the ROS
bridge's result_json) can return the structured records behind a tool's text without the tools
changing their output.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any, TypeVar

from emem_graph.models import Entity, Episode, Gist, Observation

Rendered = Observation | Gist | Entity | Episode
"""A record a tool's text shows."""
R = TypeVar("R", Observation, Gist, Entity, Episode)
Record = TypeVar("Record", bound=Observation | Gist | Entity)

_collector: ContextVar[tuple[list[Rendered], set[tuple[str, str]]] | None] = ContextVar(
    "emem_rendered_records", default=None
)


@contextmanager
def collect_records() -> Iterator[list[Rendered]]:
    """Collect, in this thread's context, every record the formatters render inside the
    ``with`` block, in order of first rendering (each once).

    Yields:
        The list the records are appended to.
    """
    records: list[Rendered] = []
    token = _collector.set((records, set()))
    try:
        yield records
    finally:
        _collector.reset(token)


def noted(records: Iterable[R]) -> list[R]:
    """``records`` as a list, noted as rendered (for lines a tool writes itself)."""
    listed = list(records)
    collection = _collector.get()
    if collection is not None:
        collected, seen = collection
        for record in listed:
            key = (type(record).__name__, record.id)
            if key not in seen:
                seen.add(key)
                collected.append(record)
    return listed


def record_fields(record: Rendered) -> dict[str, Any]:
    """The structured form of a rendered record: ``kind``, ``id``, ``text``, ``x``, ``y``,
    ``z``, ``timestamp``, ``layer`` and the fields of its kind (JSON-ready values)."""
    if isinstance(record, Observation):
        return {
            "kind": "observation",
            "id": record.id,
            "text": record.text,
            "x": record.x,
            "y": record.y,
            "z": record.z,
            "timestamp": record.timestamp,
            "layer": record.layer_name,
            "source_type": record.source_type,
            "confidence": record.confidence,
            "episode_id": record.episode_id,
            "tier": record.tier,
        }
    if isinstance(record, Gist):
        return {
            "kind": "gist",
            "id": record.id,
            "text": record.text,
            "x": record.x,
            "y": record.y,
            "z": record.z,
            "timestamp": record.time_end,
            "layer": record.layer_name,
            "radius": record.radius,
            "time_start": record.time_start,
            "time_end": record.time_end,
            "source_observation_count": record.source_observation_count,
            "episode_id": record.episode_id,
            "level": record.level,
        }
    if isinstance(record, Entity):
        return {
            "kind": "entity",
            "id": record.id,
            "text": record.name,
            "x": record.x,
            "y": record.y,
            "z": record.z,
            "timestamp": record.last_seen,
            "layer": record.layer_name,
            "name": record.name,
            "entity_type": record.entity_type,
            "first_seen": record.first_seen,
            "last_seen": record.last_seen,
            "observation_count": record.observation_count,
        }
    return {
        "kind": "episode",
        "id": record.id,
        "text": record.gist or "",
        "x": None,
        "y": None,
        "z": None,
        "timestamp": record.start_time,
        "layer": None,
        "name": record.name,
        "status": record.status,
        "start_time": record.start_time,
        "end_time": record.end_time,
        "parent_episode_id": record.parent_episode_id,
    }


_FAST_TIME_RANGE = (-30_610_224_000.0, 253_402_300_798.0)
"""Years 1000 to 9999, where format_time's arithmetic path prints what datetime prints (years
before 1000 print unpadded through strftime: they take datetime's path)."""


_CONTROL_RUN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def one_line(text: str) -> str:
    """``text`` as it may stand in one line of a tool's answer: each run of line breaks and
    other control characters (CR, LF, vertical tab, U+2028, a terminal's ESC colour codes)
    read as one space. What is stored keeps them; only the answer a planner reads is one line
    per record, so that a stored text cannot forge another record's line."""
    if text.isprintable():
        return text
    return _CONTROL_RUN.sub(" ", text)


@functools.lru_cache(maxsize=1 << 16)
def format_time(timestamp: float) -> str:
    """UTC ``YYYY-mm-dd HH:MM:SS`` (simulation time 0.0 reads as 1970-01-01 00:00:00). Kept
    per timestamp: the tools' answers repeat their records' times call after call.

    The same text as ``datetime.fromtimestamp(t, timezone.utc).strftime(...)`` (fractions
    rounded half-even to the microsecond first, as datetime does), in a third of its time for
    a time not asked before (every new record a tool prints: ~0.8 against 2.4 us)."""
    low, high = _FAST_TIME_RANGE
    if not low <= timestamp <= high:  # NaN fails too: datetime's path says what is wrong
        return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    fraction, whole = math.modf(timestamp)
    micro = round(fraction * 1e6)
    seconds = int(whole) + (1 if micro >= 1_000_000 else -1 if micro < 0 else 0)
    t = time.gmtime(seconds)
    return "%04d-%02d-%02d %02d:%02d:%02d" % t[:6]  # noqa: UP031  (the fastest of the forms)


def format_observation(o: Observation) -> str:
    """``[{layer}] ({x},{y}) [{time}] {text}``"""
    noted([o])
    return (
        f"[{one_line(o.layer_name)}] ({o.x:.1f},{o.y:.1f}) [{format_time(o.timestamp)}] "
        f"{one_line(o.text)}"
    )


def format_entity(e: Entity) -> str:
    """``[entity/{type or 'object'}] ({x},{y}) [seen {count}x] {name}``"""
    noted([e])
    kind = one_line(e.entity_type or "object")
    return f"[entity/{kind}] ({e.x:.1f},{e.y:.1f}) [seen {e.observation_count}x] {one_line(e.name)}"


def format_gist(g: Gist) -> str:
    """``[gist/{layer or 'cross-layer'}] ({x},{y}) [{n} obs] {text}``"""
    noted([g])
    layer = one_line(g.layer_name or "cross-layer")
    count = g.source_observation_count
    return f"[gist/{layer}] ({g.x:.1f},{g.y:.1f}) [{count} obs] {one_line(g.text)}"


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


def format_by_layer(observations: list[Observation], *, with_coordinates: bool) -> list[str]:
    """One ``  [{layer}] {text}`` line per distinct text of a layer (layers sorted; within a
    layer in the order given), ``  [{layer}] ({x},{y}) {text}`` with the position of its first
    observation when ``with_coordinates``; a text observed several times reads once, with
    ``(x{n})`` — a planner reads no line twice. With coordinates, a text is one line per
    place (as collapse_records groups: the same square metre, or the same position as shown),
    never one line naming one of two places."""
    by_layer: dict[str, list[list[Observation]]] = {}
    keys: dict[tuple[object, ...], list[Observation]] = {}
    for o in noted(observations):
        if with_coordinates:
            group, cell, shown = _placed_group(keys, o)
            if group is None:
                keys[cell] = keys[shown] = group = []
                by_layer.setdefault(o.layer_name, []).append(group)
        else:
            key = ("text", o.layer_name, text_key(o.text))
            group = keys.get(key)
            if group is None:
                keys[key] = group = []
                by_layer.setdefault(o.layer_name, []).append(group)
        group.append(o)
    lines: list[str] = []
    for layer in sorted(by_layer):
        for group in by_layer[layer]:
            first = group[0]
            where = f"({first.x:.1f},{first.y:.1f}) " if with_coordinates else ""
            text = one_line(first.text)
            lines.append(f"  [{one_line(layer)}] {where}{text}{times_suffix(len(group))}")
    return lines


def text_key(text: str) -> str:
    """What makes two texts the same line: case, spacing and a final full stop ignored. Kept
    for texts of up to CACHED_KEY_CHARS characters (the tools' answers repeat their records'
    texts call after call; a long text is not kept, so none can fill the cache with bulk)."""
    if len(text) > CACHED_KEY_CHARS:
        return _text_key(text)
    return _cached_text_key(text)


def _text_key(text: str) -> str:
    # Control characters read as a space (one_line): texts that print alike are one text.
    return " ".join(one_line(text).split()).lower().rstrip(".")


CACHED_KEY_CHARS = 256
_cached_text_key = functools.lru_cache(maxsize=1 << 14)(_text_key)


def times_suffix(count: int, start: float | None = None, end: float | None = None) -> str:
    """`` (x{count})``, with the time span when given (`` (x8, 08:00:02–08:06:22)``); "" for
    a count of 1."""
    if count <= 1:
        return ""
    if start is None or end is None or int(start) == int(end):
        return f" (x{count})"
    first, last = format_time(start), format_time(end)
    tail = last[11:] if last[:10] == first[:10] else last
    return f" (x{count}, {first[11:]}–{tail})"


def collapse_records(
    records: Iterable[Observation | Gist | Entity],
) -> list[tuple[Observation | Gist | Entity, int, float, float]]:
    """Records with the same text (observations: of the same layer, within the same square
    metre; gists: any) as one item: the first of them (in the order given), how many, and the
    first and last time they were observed. Entities are distinct things and stay one item
    each. Observations of one text at different places stay apart: each line gives a place
    the robot can go to (grouping every "a coffee mug" of an area into one line left one
    position of ten)."""
    groups: dict[tuple[object, ...], list[Observation | Gist | Entity]] = {}
    ordered: list[list[Observation | Gist | Entity]] = []
    for record in records:
        if isinstance(record, Observation):
            group, cell, shown = _placed_group(groups, record)
            if group is None:
                groups[cell] = groups[shown] = group = []
                ordered.append(group)
        else:
            key = ("g", text_key(record.text)) if isinstance(record, Gist) else ("e", record.id)
            group = groups.get(key)
            if group is None:
                groups[key] = group = []
                ordered.append(group)
        group.append(record)
    items = []
    for group in ordered:
        times = [_time_of(r) for r in group]
        items.append((group[0], len(group), min(times), max(times)))
    return items


def _placed_group(
    groups: dict[tuple[object, ...], list[Any]], o: Observation
) -> tuple[list[Any] | None, tuple[object, ...], tuple[object, ...]]:
    """The group ``o`` joins, with its two keys: the group started in its square metre (its
    text and layer there), else the one whose line reads as its own (its position rounded as
    a line shows it, 0.1 m: 0.99 and 1.01 lie in two square metres and both read "(1.0,0.0)").
    A group is registered under its first record's keys only, so it spans that square metre
    and what reads as that position, never a chain of metres. None: a new group."""
    key = text_key(o.text)
    cell = ("o", o.layer_name, key, math.floor(o.x), math.floor(o.y))
    shown = ("shown", o.layer_name, key, round(o.x, 1), round(o.y, 1))
    group = groups.get(cell)
    return (groups.get(shown) if group is None else group), cell, shown


LINE_FILL_MAX_RECORDS = 2_000
"""At most this many records are read to fill a tool's n lines (records_for_lines): past it a
robot parked for hours in front of one thing is answered with fewer lines, at bounded cost
(10,000 took semantic_search 1.3 s on 12,000 copies of one caption)."""


def records_for_lines(fetch: Callable[[int], Sequence[Record]], n_lines: int) -> Sequence[Record]:
    """The first records ``fetch(k)`` gives, with k grown (n, 3n, 9n...) until they make
    ``n_lines`` lines (collapse_records), ``fetch`` runs out, or LINE_FILL_MAX_RECORDS were read.

    A robot repeats itself: forty copies of "a red cup on the table" at one spot are one line,
    and asking for n records then answered fewer lines than the memory holds."""
    asked = n_lines
    records = fetch(asked)
    while (
        len(records) >= asked
        and asked < LINE_FILL_MAX_RECORDS
        and len(collapse_records(records)) < n_lines
    ):
        asked = min(LINE_FILL_MAX_RECORDS, asked * 3)
        records = fetch(asked)
    return records


def format_collapsed(
    records: Iterable[Observation | Gist | Entity], limit: int | None = None
) -> list[str]:
    """The line of each record (format_record), records with the same text once, with
    ``(x{n}, {span})`` (see collapse_records); the first ``limit`` lines when given."""
    lines = []
    for record, count, start, end in collapse_records(records)[:limit]:
        timed = isinstance(record, Observation)
        suffix = times_suffix(count, start, end) if timed else times_suffix(count)
        lines.append(format_record(record) + suffix)
    return lines


def unique_lines(lines: Iterable[str]) -> list[str]:
    """``lines`` with every repeated line kept once, at its first place, with ``(x{n})``."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    out = []
    for line, count in counts.items():
        out.append(line + times_suffix(count))
    return out


def _time_of(record: Observation | Gist | Entity) -> float:
    if isinstance(record, Observation):
        return record.timestamp
    if isinstance(record, Gist):
        return record.time_end
    return record.last_seen


def format_age(seconds: float) -> str:
    """An age as ``42s``, ``5min`` or ``1.5h`` (a reading from the future reads ``0s``)."""
    age = max(0.0, seconds)
    if age < 60:
        return f"{age:.0f}s"
    if age < 3600:
        return f"{age / 60:.0f}min"
    return f"{age / 3600:.1f}h"


def format_body_status(readings: list[Observation], now: float) -> str:
    """``Body Status:`` then ``  [{layer}] {text} ({age} ago)`` per reading, or
    ``No body state data available.``"""
    if not readings:
        return "No body state data available."
    lines = ["Body Status:"]
    lines.extend(
        f"  [{one_line(r.layer_name)}] {one_line(r.text)} ({format_age(now - r.timestamp)} ago)"
        for r in noted(readings)
    )
    return "\n".join(lines)


def format_episode(episode: Episode, count: int, first: float | None, last: float | None) -> str:
    """``[{name}] ({status}) {gist or '(no summary)'}`` and, when it holds observations,
    ``  ({n} observations from {t_first} to {t_last})``."""
    noted([episode])
    gist = one_line(episode.gist) if episode.gist else "(no summary)"
    line = f"[{one_line(episode.name)}] ({one_line(episode.status)}) {gist}"
    if count and first is not None and last is not None:
        line += f"\n  ({count} observations from {format_time(first)} to {format_time(last)})"
    return line


def source_label(record: Observation | Gist | Entity) -> str:
    """Where a record comes from, for counts: its layer, ``gist/{layer}`` or ``entity``."""
    if isinstance(record, Observation):
        return record.layer_name
    if isinstance(record, Gist):
        return f"gist/{record.layer_name or 'cross-layer'}"
    return "entity"
