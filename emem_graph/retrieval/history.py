"""Present first: what the tools say about a thing that moved.

An entity's stays (consolidation/whereabouts.py, read through a StayReader: retrieval sits
below consolidation, the memory passes its reads in) say where it is now and where it was.
The tools read them here:

- **subject**: the thing a locate answer rests on is the best-matching entity among the
  strong hits (locate.strong_hits) that has stays.
- **old evidence**: the observations and summaries of a former stay (older than the current
  stay's first sighting, within CLUSTER_RADIUS of a stay the thing has left that lies beyond
  the entity radius from the current one, and farther than CLUSTER_RADIUS from where it is
  now) are left out of the votes: the five sightings on the kitchen
  table before the cup was carried to the sink must not bring the answer back to the table.
- **the answer**: the estimate of the evidence left (locate.estimate_location: it gathers
  hits within CLUSTER_RADIUS only, so it never lands between two stays farther apart), when
  it is at the current stay; a time (locate's ``at_time``, or time words in the concept)
  picks the stay whose [first_seen, ended or last_seen] holds it, else the latest stay that
  began before it, answered at that stay's mean.
- **absence**: whereabouts.missed_at (StayReader.missed_at) says when the robot looked at
  the current stay after the last sighting there without seeing the thing; the answer says so.

Time words in a locate concept: "at 10:00" / "at 10:00:30" (UTC, the latest such time not
after now), "N minutes/hours/days ago", and "before" / "previously" / "used to be" (the stay
before the current one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from emem_graph.models import Entity, EntityPosition, Gist, Observation
from emem_graph.retrieval.formatting import format_time, one_line
from emem_graph.retrieval.locate import (
    CLUSTER_RADIUS,
    MIN_RADIUS,
    Hit,
    LocationEstimate,
    estimate_location,
    strong_hits,
)
from emem_graph.retrieval.search import record_time
from emem_graph.retrieval.timeparse import TimeParseError, parse_time
from emem_graph.validation import MAX_TIMESTAMP, MIN_TIMESTAMP

DAY = 86_400.0


class StayReader(Protocol):
    """What the tools read of the stays (the memory passes consolidation's reads and
    whereabouts rules in: retrieval sits below consolidation)."""

    def positions_of(self, entity_ids: Sequence[str]) -> dict[str, list[EntityPosition]]:
        """Each entity's stays, oldest first (reads.positions_of), in fresh lists; the stays
        themselves may be shared with the store: read them, never change them."""
        ...

    def landmark(self, x: float, y: float) -> str | None:
        """The name of what best says where (x, y) is (reads.landmark)."""
        ...

    def missed_at(self, stay: EntityPosition, layer: str | None, until: float) -> float | None:
        """The latest look at ``stay`` that missed the thing, up to ``until``
        (whereabouts.missed_at)."""
        ...


class NoStays:
    """A reader for a memory without stays: no entity has any."""

    def positions_of(self, entity_ids: Sequence[str]) -> dict[str, list[EntityPosition]]:
        return {}

    def landmark(self, x: float, y: float) -> str | None:
        return None

    def missed_at(self, stay: EntityPosition, layer: str | None, until: float) -> float | None:
        return None


def distance(stay: EntityPosition, x: float, y: float) -> float:
    """Metres from a stay's mean to (x, y), in the plane."""
    return math.hypot(stay.x - x, stay.y - y)


_CLOCK = re.compile(r"\b(?:at|around|by)\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\b", re.IGNORECASE)
_BARE_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_AGO = re.compile(
    r"\b(?:an?|one|\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|"
    r"hours?|d|days?|w|weeks?)\s+ago\b",
    re.IGNORECASE,
)
_BEFORE = re.compile(
    r"\b(?:before|previously|earlier|formerly|used\s+to\s+be|prior)\b", re.IGNORECASE
)
_WHERE = re.compile(r"^\s*where\s+(?:was|were|is|are|did)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Asked:
    """A locate concept with its time words taken out: the concept to search, the time it
    asks about (None: now) and whether it asks for the stay before the current one."""

    concept: str
    at: float | None
    before: bool


def parse_at_time(value: str | float, now: float) -> float:
    """A time argument (timeparse.parse_time's forms) or a clock time "10:00" / "10:00:30"
    (UTC, the latest such time not after ``now``).

    Raises:
        TimeParseError: none of those forms, a clock time past 23:59:59, or a time outside
            the years every tool can print (validation.MIN_TIMESTAMP..MAX_TIMESTAMP).
    """
    if isinstance(value, str):
        match = _BARE_CLOCK.match(value.strip())
        if match:
            return _clock_time(match, now)
    return _printable(parse_time(value, now, name="at_time"), value)


def _printable(at: float, given: object) -> float:
    if not MIN_TIMESTAMP <= at <= MAX_TIMESTAMP:
        raise TimeParseError(
            f"at_time: {given!r} is outside the years 2 to 9998 (seconds {MIN_TIMESTAMP:.0f} "
            f"to {MAX_TIMESTAMP:.0f})"
        )
    return at


def asked(concept: str, now: float) -> Asked:
    """The time words of a locate concept ("where was the red cup at 10:00", "... before")."""
    at: float | None = None
    text = concept
    # Words that only look like a time ("at 99:99", "1e30 days ago") are left in the concept.
    match = _CLOCK.search(text)
    ago = _AGO.search(text) if match is None else None
    try:
        if match:
            at = _clock_time(match, now)
            text = text[: match.start()] + text[match.end() :]
        elif ago:
            at = _printable(parse_time(ago.group(0), now, name="at_time"), ago.group(0))
            text = text[: ago.start()] + text[ago.end() :]
    except TimeParseError:
        at, text = None, concept
    before = bool(_BEFORE.search(text))
    if before:
        text = _BEFORE.sub(" ", text)
    if at is not None or before:
        text = _WHERE.sub("", text)
        text = " ".join(text.replace("?", " ").split()) or concept
    return Asked(text if (at is not None or before) else concept, at, before)


def _clock_time(match: re.Match[str], now: float) -> float:
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise TimeParseError(
            f"at_time: {match.group(0).strip()!r} is not a clock time (00:00 to 23:59:59)"
        )
    day = math.floor(now / DAY) * DAY
    at = day + hours * 3600.0 + minutes * 60.0 + seconds
    return at - DAY if at > now else at


def stay_at(stays: Sequence[EntityPosition], t: float) -> EntityPosition | None:
    """The stay whose [first_seen, ended or last_seen] holds ``t``, else the latest stay that
    began before it; None when the thing was first seen after ``t``."""
    holding = [
        s for s in stays if s.first_seen <= t <= (s.ended if s.ended is not None else s.last_seen)
    ]
    if holding:
        return holding[-1]
    began = [s for s in stays if s.first_seen <= t]
    return began[-1] if began else None


def current_stay(stays: Sequence[EntityPosition]) -> EntityPosition | None:
    """The open stay (the last one when the memory predates positions)."""
    open_stays = [s for s in stays if s.current]
    return open_stays[-1] if open_stays else (stays[-1] if stays else None)


def subject(reader: StayReader, hits: Sequence[Hit]) -> tuple[Entity, list[EntityPosition]] | None:
    """The best-matching entity among the strong hits that has stays, with its stays."""
    entities = [r for r, _ in strong_hits(hits) if isinstance(r, Entity)]
    if not entities:
        return None
    found = reader.positions_of([e.id for e in entities])
    for entity in entities:
        if found.get(entity.id):
            return entity, found[entity.id]
    return None


def _near(record: Observation | Gist | Entity, stay: EntityPosition) -> bool:
    return distance(stay, record.x, record.y) <= CLUSTER_RADIUS


def present_evidence(hits: Sequence[Hit], stays: Sequence[EntityPosition], far: float) -> list[Hit]:
    """``hits`` without the texts of a former stay farther than ``far`` from the current one
    (see the module's "old evidence"; a stay closer than that was the same place seen again
    a few metres off, and its texts still place the thing)."""
    now_stay = current_stay(stays)
    left = [
        s
        for s in stays
        if s is not now_stay and now_stay is not None and distance(now_stay, s.x, s.y) > far
    ]
    if now_stay is None or not left:
        return list(hits)
    return [
        (record, score)
        for record, score in hits
        if isinstance(record, Entity)
        or record_time(record) >= now_stay.first_seen
        or _near(record, now_stay)
        or not any(_near(record, s) for s in left)
    ]


def evidence_of_stay(hits: Sequence[Hit], stay: EntityPosition) -> list[Hit]:
    """The texts of ``stay`` (near it, from its span) and every entity hit."""
    end = stay.ended if stay.ended is not None else math.inf
    return [
        (record, score)
        for record, score in hits
        if isinstance(record, Entity)
        or (_near(record, stay) and stay.first_seen - 1.0 <= record_time(record) <= end)
    ]


def place_name(reader: StayReader, entity: Entity, stay: EntityPosition) -> str:
    """``(x, y)`` of a stay, with `` near {landmark}`` when there is one (not the thing)."""
    where = f"({stay.x:.1f}, {stay.y:.1f})"
    name = reader.landmark(stay.x, stay.y)
    if name and name.strip().lower() != entity.name.strip().lower():
        where += f" near {one_line(name)}"
    return where


def span(stay: EntityPosition) -> str:
    """``{first}–{last}`` of a stay's sightings (the day once when both are on it)."""
    first, last = format_time(stay.first_seen), format_time(stay.last_seen)
    if first == last:
        return first
    return f"{first}–{last[11:] if last[:10] == first[:10] else last}"


def sightings(count: int) -> str:
    return f"{count} sighting{'' if count == 1 else 's'}"


def former_stay(reader: StayReader, entity: Entity, stay: EntityPosition) -> str:
    """``{name} was at {place} ({sightings}, {span}); it moved on at {time}.``"""
    moved_on = stay.ended if stay.ended is not None else stay.last_seen
    return (
        f"{one_line(entity.name)} was at {place_name(reader, entity, stay)} "
        f"({sightings(stay.count)}, {span(stay)}); it moved on at {format_time(moved_on)}."
    )


def missed(reader: StayReader, entity: Entity, stay: EntityPosition, until: float) -> float | None:
    """When a look at the entity's current stay missed it (None: not since, or not current)."""
    if not stay.current:
        return None
    return reader.missed_at(stay, entity.layer_name, until)


def history_line(entity: Entity, stays: Sequence[EntityPosition]) -> str:
    """``now at (12.0, 9.0) since {t}; before: (1.0, 1.0) {first}–{last}, ...`` (newest
    former stay first); "" for a thing that never moved."""
    now_stay = current_stay(stays)
    if now_stay is None or len(stays) < 2:
        return ""
    former = [s for s in stays if s is not now_stay]
    before = "; ".join(f"({s.x:.1f}, {s.y:.1f}) {span(s)}" for s in reversed(former))
    return (
        f"now at ({now_stay.x:.1f}, {now_stay.y:.1f}) since {format_time(now_stay.first_seen)}; "
        f"before: {before}"
    )


@dataclass(frozen=True)
class Placed:
    """A locate answer: the estimate (position, radius, the hits it rests on), the lines that
    say present and past, and the thing and stay it rests on (None: no thing with stays)."""

    estimate: LocationEstimate
    notes: list[str]
    entity: Entity | None = None
    stays: tuple[EntityPosition, ...] = ()
    stay: EntityPosition | None = None


def place(
    reader: StayReader,
    hits: Sequence[Hit],
    now: float,
    at: float | None,
    before: bool,
    far: float,
) -> Placed | None:
    """Where the hits say the thing is now (``at`` None and not ``before``), was at ``at``, or
    was before its current stay; None when there are no hits. ``far``: metres between stays
    beyond which a former stay's texts are left out of the votes (the entity radius: a
    thing seen again farther than that was carried there)."""
    found = subject(reader, hits)
    if found is None:
        return _plain(hits, at)
    entity, stays = found
    now_stay = current_stay(stays)
    assert now_stay is not None  # subject() returns entities with stays only
    if at is not None:
        stay = stay_at(stays, at)
        if stay is None:
            first = stays[0]
            return _at_stay(
                reader,
                hits,
                entity,
                stays,
                first,
                now,
                [
                    f"Not seen before {format_time(at)}: {one_line(entity.name)} was first seen at "
                    f"{format_time(first.first_seen)}, at {place_name(reader, entity, first)}."
                ],
            )
        if stay is not now_stay:
            return _at_stay(
                reader,
                hits,
                entity,
                stays,
                stay,
                now,
                [f"At {format_time(at)}: {former_stay(reader, entity, stay)}"],
            )
        prefix = [f"At {format_time(at)}: at its current position."]
    elif before:
        if len(stays) < 2:
            prefix = [f"{one_line(entity.name)} has not moved since it was first seen."]
        else:
            stay = stays[-2]
            return _at_stay(
                reader,
                hits,
                entity,
                stays,
                stay,
                now,
                [f"Before its current position: {former_stay(reader, entity, stay)}"],
            )
    else:
        prefix = []
    estimate = estimate_location(present_evidence(hits, stays, far))
    if estimate is None:
        return None
    on_stay = distance(now_stay, estimate.x, estimate.y) <= CLUSTER_RADIUS
    if not on_stay:
        # The evidence agrees on another place (another thing of that name, a caption
        # about something else): the answer does not rest on this entity.
        return Placed(estimate, [])
    return Placed(
        estimate,
        prefix + present_notes(reader, entity, stays, now),
        entity,
        tuple(stays),
        now_stay,
    )


def present_notes(
    reader: StayReader, entity: Entity, stays: Sequence[EntityPosition], now: float
) -> list[str]:
    """``Last seen there: ...``, ``Not seen at its last position at ...`` (absence) and
    ``Moved from ... at ...`` / ``Earlier: ...`` for the stays it left."""
    now_stay = current_stay(stays)
    if now_stay is None:
        return []
    near = reader.landmark(now_stay.x, now_stay.y)
    near = f" near {near}" if near and near.strip().lower() != entity.name.lower() else ""
    notes = [
        f"Last seen there: {format_time(now_stay.last_seen)} ({one_line(entity.name)}{near}, "
        f"{sightings(now_stay.count)} at this position since "
        f"{format_time(now_stay.first_seen)})"
    ]
    absent = missed(reader, entity, now_stay, now)
    if absent is not None:
        notes.append(
            f"Not seen at its last position at {format_time(absent)} (the robot looked there "
            f"after its last sighting): it may have moved since."
        )
    former = [s for s in stays if s is not now_stay]
    if former:
        last = former[-1]
        moved = last.ended if last.ended is not None else now_stay.first_seen
        notes.append(
            f"Moved from {place_name(reader, entity, last)} at {format_time(moved)} "
            f"({sightings(last.count)} there, {span(last)})"
        )
        older = former[:-1][-MAX_EARLIER:]
        if older:
            notes.append(
                "Earlier: "
                + "; ".join(f"({s.x:.1f}, {s.y:.1f}) {span(s)}" for s in reversed(older))
            )
    return notes


MAX_EARLIER = 3
"""Former stays before the last one a locate answer lists at most."""


def _at_stay(
    reader: StayReader,
    hits: Sequence[Hit],
    entity: Entity,
    stays: Sequence[EntityPosition],
    stay: EntityPosition,
    now: float,
    notes: list[str],
) -> Placed:
    """The answer at a given stay (a history question): its mean, the evidence of its span."""
    evidence = estimate_location(evidence_of_stay(hits, stay))
    radius = MIN_RADIUS
    used: list[Hit] = []
    if evidence is not None and distance(stay, evidence.x, evidence.y) <= CLUSTER_RADIUS:
        radius, used = evidence.radius, evidence.hits
    if not used:
        used = [(entity, 1.0)]
    now_stay = current_stay(stays)
    if now_stay is not None and stay is not now_stay:
        notes = [
            *notes,
            f"Now: at ({now_stay.x:.1f}, {now_stay.y:.1f}), last seen there "
            f"{format_time(now_stay.last_seen)}",
        ]
        absent = missed(reader, entity, now_stay, now)
        if absent is not None:
            notes.append(f"Not seen at its last position at {format_time(absent)}.")
    estimate = LocationEstimate(stay.x, stay.y, stay.z, radius, used)
    return Placed(estimate, notes, entity, tuple(stays), stay)


def _plain(hits: Sequence[Hit], at: float | None) -> Placed | None:
    """No thing with stays: the estimate of the hits (up to ``at`` when there are such)."""
    if at is not None:
        earlier = [(r, s) for r, s in hits if record_time(r) <= at]
        if earlier:
            hits = earlier
    estimate = estimate_location(hits)
    return None if estimate is None else Placed(estimate, [])
