"""Objects-move evaluation: a robot patrols a house for hours while its objects are
moved, swapped, taken away and brought back; the memory is asked where each object is now.

The house has ten places (pieces of furniture, 3 to 18.5 m apart, several pairs closer than the
resolver's 5 m merge radius) and fourteen movable objects with distinctive names ("red cup",
"blue backpack"), among them two alike pairs ("white mug" x2, "blue towel" x2) that stand at two
places at the same time from the start. The robot walks every place once per round (a round
every 20 simulated minutes, the route alternately forwards and backwards); at each place it
stores, in an episode of its own, what it sees there, through the public API only:

- a detection per thing seen, ``add("1 red cup", x, y, layer_name="camera",
  source_type="detector")``, at the thing's position plus a noise of at most 0.28 m;
- a sighting of the same thing, ``add_entity("red cup", x, y, layer_name="camera")``, with a
  noise of its own;
- the place's piece of furniture ("1 kitchen table") every time, so that a visit to a place an
  object has left stores what is there now: the absence evidence. The detector misses a movable
  object in 10% of the visits.

Between rounds (from the third on) events happen, deterministic from the seed: a ``move`` (an
object carried at least 6 m away), a ``near move`` (2 to 5 m: within the merge radius), a
``swap`` of the two white mugs (identical, so nothing changes to an observer), an ``exchange``
of two different objects' places, an ``alike move`` (one of an alike pair carried away while the
other stays), a ``removal`` (the object leaves the house), a ``return`` (an object carried back
to a former place) and a ``comeback`` (a removed object brought back: to a former place other
than the one it left, or else at least 6 m from it).

Ground truth is kept per *track*: the object as an ideal observer can tell it. A swap of
identical objects exchanges their tracks (each track stays at its place), every other event
moves the object's track with it. The figures, after every round (a checkpoint):

- locate error: ``locate(name)`` for every name of an object in the house that the robot has
  seen at least once; the "Location: (x,
  y, z)" line of the answer is parsed and its distance to the nearest true position of an object
  of that name is the error (no answer: an infinite error). Also split by the object: "just
  moved" (an object of that name changed place since the previous checkpoint), "moved before"
  (earlier) and "never moved"; "seen there" are the questions whose objects the robot has seen
  at their current place since they got there (the others it missed there, 10% a visit: no
  memory can answer them); and the share of "just moved" answers that say "moved". Objects
  out of the house are asked too: the share of answers that say they were not seen (or are
  missing, gone, no longer there) is reported.
- wrong merges (at the end): entities whose sightings (the ids ``add_entity`` returned, and the
  OBSERVED_IN edges of the detections' observations) come from two different tracks, over the
  entities with any sighting; ``strict`` counts physical objects instead of tracks (a swap of
  identical objects is then counted too, though no observer could tell).
- missed moves: for every true move, at the first checkpoint after the object was seen at its
  new place: ``followed`` (the entity of its last sighting before the move is the entity of its
  sighting there, and its position estimate is within 1 m of the new position), ``dragged``
  (the same entity, but its estimate is more than 1 m away: averaged between the places),
  ``missed`` (another entity took the sighting while the old one still stands elsewhere as
  current: it exists, its estimate is more than 1 m from the new position and, where the memory
  keeps position histories, its last position is still open) or ``split`` (another entity, and
  the old one is gone or closed: the history is split over two entities).
- history (only when ``reads.positions_of`` exists): for every tracked object, the positions of
  the entity of its last sighting, each named by its nearest place, consecutive repeats
  collapsed, compared with the places the object was seen at, in order.
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.consolidation import reads
from emem_graph.errors import InvalidInputError
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.memory import SpatioTemporalMemory

GOAL_METRES = 1.0
GOAL_SHARE = 0.95
"""The goal: locate within GOAL_METRES of the true current position in this share of
the questions (reported, not asserted)."""
START_TIME = 1_795_000_000.0
"""The patrol's simulated start (December 2026)."""
ROUND_SECONDS = 20 * 60.0
VISIT_SECONDS = 45.0
MAX_NOISE = 0.28
"""Metres: the farthest a stored position lies from the thing's true position."""
NOISE_SD = 0.1
MISS_SHARE = 0.1
"""Share of the visits in which the detector misses a movable object that is there."""
FAR_MOVE = 6.0
"""Metres: the least distance of a ``move``, ``alike move`` or ``return``'s new place..."""
NEAR_MOVE = (2.0, 5.0)
"""...and the range of a ``near move`` (within the resolver's merge radius)."""
CLAIM_METRES = 1.0
"""An entity whose position estimate is this close to a place claims to be there."""
ROUNDS = 24
QUICK_ROUNDS = 10
DEFAULT_SEED = 0

PLACES: dict[str, tuple[float, float]] = {
    "kitchen table": (2.0, 2.0),
    "stove": (5.0, 1.0),
    "hallway shelf": (9.0, 4.0),
    "sofa": (13.0, 2.5),
    "washing machine": (17.0, 6.0),
    "bathroom sink": (14.0, 9.0),
    "desk": (8.0, 10.0),
    "bookshelf": (11.0, 13.5),
    "bedside table": (16.0, 14.0),
    "porch bench": (1.0, 11.0),
}
ROUTE = tuple(PLACES)
"""The order the robot walks the places in (backwards on odd rounds)."""


@dataclass(frozen=True)
class Thing:
    key: str
    """Unique: the name, with "#2" for the second of an alike pair."""
    name: str
    start: str


THINGS = (
    Thing("red cup", "red cup", "kitchen table"),
    Thing("silver keys", "silver keys", "kitchen table"),
    Thing("white mug#1", "white mug", "stove"),
    Thing("blue backpack", "blue backpack", "hallway shelf"),
    Thing("yellow umbrella", "yellow umbrella", "hallway shelf"),
    Thing("orange basketball", "orange basketball", "sofa"),
    Thing("brown teddy bear", "brown teddy bear", "sofa"),
    Thing("blue towel#1", "blue towel", "bathroom sink"),
    Thing("pink hairbrush", "pink hairbrush", "bathroom sink"),
    Thing("black laptop", "black laptop", "desk"),
    Thing("white mug#2", "white mug", "desk"),
    Thing("purple scarf", "purple scarf", "bedside table"),
    Thing("blue towel#2", "blue towel", "bedside table"),
    Thing("green watering can", "green watering can", "porch bench"),
)
ALIKE = (("white mug#1", "white mug#2"), ("blue towel#1", "blue towel#2"))
EVENT_KINDS = (
    "move",
    "swap",
    "near move",
    "removal",
    "alike move",
    "exchange",
    "return",
    "comeback",
)
"""The order events come in, one per slot (the full run adds a second event to some slots)."""

_LOCATION_RE = re.compile(r"Location: \((-?[\d.]+), (-?[\d.]+)")


def parse_location(answer: str) -> tuple[float, float] | None:
    """The (x, y) of a locate answer's "Location: (x, y, z)" line, or None (no answer)."""
    match = _LOCATION_RE.search(answer)
    return None if match is None else (float(match.group(1)), float(match.group(2)))


@dataclass
class Spot:
    place: str
    x: float
    y: float

    @property
    def xy(self) -> tuple[float, float]:
        return (self.x, self.y)


@dataclass
class Move:
    """A true move of a track, waiting for the checkpoint that judges it."""

    track: str
    kind: str
    round: int
    """The round after which it happened."""
    old: Spot
    new: Spot
    entity_before: str | None
    outcome: str | None = None
    """followed / dragged / missed / split; None until judged, "superseded" when the object
    moved again before it was seen at its new place."""


@dataclass
class World:
    """The house's true state and what the robot stored, with the ground truth of every id."""

    rng: np.random.Generator
    spots: dict[str, Spot | None] = field(default_factory=dict)
    """Physical object key -> where it is (None: out of the house)."""
    track_of: dict[str, str] = field(default_factory=dict)
    """Physical object key -> its track."""
    seen_places: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Track -> the places it was seen at, in order (consecutive repeats collapsed)."""
    last_entity: dict[str, str] = field(default_factory=dict)
    """Track -> the entity add_entity returned at its latest sighting."""
    observation_truth: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Observation id -> (track, physical key)."""
    entity_truth: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))
    """Entity id add_entity returned -> {(track, physical key)}."""
    events: list[dict[str, Any]] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    confirmed: set[str] = field(default_factory=set)
    """Tracks seen at their current place since they got there (what the memory can know)."""
    busy: set[str] = field(default_factory=set)
    """Objects an event of this round already took part in (not picked again until the
    robot has walked a round)."""
    removed_from: dict[str, Spot] = field(default_factory=dict)
    """Physical object key -> where it was when it left the house."""
    observations: int = 0
    sightings: int = 0

    def see(self, track: str, place: str) -> None:
        """Note that ``track`` was seen at ``place``."""
        places = self.seen_places[track]
        if not places or places[-1] != place:
            places.append(place)

    def name_of(self, key: str) -> str:
        return key.split("#")[0]

    def in_house(self) -> list[str]:
        return [k for k, s in self.spots.items() if s is not None]

    def track_spots(self) -> dict[str, tuple[float, float] | None]:
        return {
            self.track_of[k]: (None if s is None else s.xy)
            for k, s in self.spots.items()
            if not k.startswith("furniture:")
        }


def _noise(rng: np.random.Generator) -> tuple[float, float]:
    dx, dy = rng.normal(0.0, NOISE_SD, 2)
    norm = math.hypot(dx, dy)
    if norm > MAX_NOISE:
        dx, dy = dx * MAX_NOISE / norm, dy * MAX_NOISE / norm
    return float(dx), float(dy)


def _spot_at(rng: np.random.Generator, place: str) -> Spot:
    """A position on (beside) a place: 0.2-0.6 m from its centre."""
    px, py = PLACES[place]
    angle = rng.uniform(0.0, 2 * math.pi)
    radius = rng.uniform(0.2, 0.6)
    return Spot(place, px + radius * math.cos(angle), py + radius * math.sin(angle))


def new_world(seed: int) -> World:
    """The house at the start: every thing at its start place, furniture at every place."""
    world = World(rng=np.random.default_rng(seed))
    for thing in THINGS:
        world.spots[thing.key] = _spot_at(world.rng, thing.start)
        world.track_of[thing.key] = thing.key
    for place, (x, y) in PLACES.items():
        key = f"furniture:{place}"
        world.spots[key] = Spot(place, x, y)
        world.track_of[key] = key
    return world


# --- events -----------------------------------------------------------------------------------


def _distance(a: str, b: str) -> float:
    return math.dist(PLACES[a], PLACES[b])


def _movable(world: World) -> list[str]:
    return [k for k in world.in_house() if not k.startswith("furniture:")]


def _alike_keys() -> set[str]:
    return {k for pair in ALIKE for k in pair}


def _move(world: World, key: str, place: str, kind: str, round_: int) -> None:
    """Carry ``key`` to ``place`` (its track goes with it)."""
    old = world.spots[key]
    new = _spot_at(world.rng, place)
    track = world.track_of[key]
    for pending in world.moves:
        if pending.track == track and pending.outcome is None:
            pending.outcome = "superseded"
    if old is not None:
        world.moves.append(
            Move(track, kind, round_, old, new, world.last_entity.get(track), outcome=None)
        )
    else:  # a comeback: judged from where it was when it left
        gone = world.removed_from.get(key, new)
        world.moves.append(Move(track, kind, round_, gone, new, world.last_entity.get(track)))
    world.spots[key] = new
    world.confirmed.discard(track)


def _pick(world: World, options: list[Any]) -> Any:
    return options[int(world.rng.integers(len(options)))]


def _happened(world: World, record: dict[str, Any]) -> dict[str, Any]:
    world.events.append(record)
    world.busy.update(record["objects"])
    return record


def apply_event(world: World, kind: str, round_: int) -> dict[str, Any] | None:
    """Make one event of ``kind`` happen (falling back to a ``move`` when nothing qualifies);
    returns its record, or None when not even a move could be made."""
    movable = [k for k in _movable(world) if k not in world.busy]
    alike = _alike_keys()
    record: dict[str, Any] = {"round": round_, "kind": kind}

    def spot(key: str) -> Spot:
        found = world.spots[key]
        assert found is not None
        return found

    if kind == "swap":
        pairs = [(a, b) for a, b in ALIKE if a in movable and b in movable]
        pairs = [(a, b) for a, b in pairs if spot(a).place != spot(b).place]
        if pairs:
            a, b = _pick(world, pairs)
            world.spots[a], world.spots[b] = world.spots[b], world.spots[a]
            # Identical things: each track stays where it was seen (nothing moved to observe).
            world.track_of[a], world.track_of[b] = world.track_of[b], world.track_of[a]
            record.update(objects=[a, b], places=[spot(b).place, spot(a).place])
            return _happened(world, record)
        kind = "exchange"
        record["kind"] = kind
    if kind == "exchange":
        distinct = [k for k in movable if k not in alike]
        pairs = [(a, b) for a in distinct for b in distinct if a < b]
        pairs = [(a, b) for a, b in pairs if spot(a).place != spot(b).place]
        if pairs:
            a, b = _pick(world, pairs)
            place_a, place_b = spot(a).place, spot(b).place
            _move(world, a, place_b, kind, round_)
            _move(world, b, place_a, kind, round_)
            record.update(objects=[a, b], places=[place_a, place_b])
            return _happened(world, record)
        kind = "move"
    if kind == "removal":
        gone = [k for k, s in world.spots.items() if s is None]
        leaving = [k for k in movable if k not in alike] if len(gone) < 2 else []
        if leaving:
            key = _pick(world, leaving)
            record.update(objects=[key], places=[spot(key).place, None])
            world.removed_from[key] = spot(key)
            world.spots[key] = None
            return _happened(world, record)
        kind = "move"
    if kind in ("return", "comeback"):
        removed = [k for k, s in world.spots.items() if s is None and k not in world.busy]
        if kind == "comeback" and removed:
            key = _pick(world, removed)
            left = world.removed_from[key].place
            former = [p for p in world.seen_places[world.track_of[key]] if p != left]
            far = [p for p in PLACES if _distance(p, left) >= FAR_MOVE]
            place = former[-1] if former else _pick(world, far)
            _move(world, key, place, kind, round_)
            record.update(objects=[key], places=[None, place])
            return _happened(world, record)
        options: list[tuple[str, str]] = []
        for key in movable:
            here = spot(key).place
            former = [p for p in world.seen_places[world.track_of[key]] if p != here]
            if former and _distance(former[-1], here) >= FAR_MOVE:
                options.append((key, former[-1]))
        if options:
            key, place = _pick(world, options)
            record.update(kind="return", objects=[key], places=[spot(key).place, place])
            _move(world, key, place, "return", round_)
            return _happened(world, record)
        kind = "move"
    if kind == "alike move":
        options = []
        for a, b in ALIKE:
            for key, other in ((a, b), (b, a)):
                if key in movable and other in movable:
                    here, there = spot(key).place, spot(other).place
                    options.extend(
                        (key, p)
                        for p in PLACES
                        if p not in (here, there) and _distance(p, here) >= FAR_MOVE
                    )
        if options:
            key, place = _pick(world, options)
            record.update(objects=[key], places=[spot(key).place, place])
            _move(world, key, place, kind, round_)
            return _happened(world, record)
        kind = "move"
    low, high = NEAR_MOVE if kind == "near move" else (FAR_MOVE, math.inf)
    options = [
        (key, p)
        for key in movable
        if key not in alike
        for p in PLACES
        if low <= _distance(p, spot(key).place) <= high
    ]
    if not options:
        return None
    key, place = _pick(world, options)
    record.update(kind=kind, objects=[key], places=[spot(key).place, place])
    _move(world, key, place, kind, round_)
    return _happened(world, record)


def schedule(rounds: int, seed: int, *, quick: bool) -> dict[int, list[str]]:
    """Round -> the kinds of the events that happen after it: one per round from the second
    to the one before last, in EVENT_KINDS order; the full run adds a second (a random kind)
    to about a third of them."""
    rng = np.random.default_rng(seed + 1_000)
    plan: dict[int, list[str]] = {}
    for i, round_ in enumerate(range(2, rounds)):
        kinds = [EVENT_KINDS[i % len(EVENT_KINDS)]]
        if not quick and rng.random() < 1 / 3:
            kinds.append(EVENT_KINDS[int(rng.integers(len(EVENT_KINDS)))])
        plan[round_] = kinds
    return plan


# --- the patrol -------------------------------------------------------------------------------


class Clock:
    """The memory's simulated time, advanced by the patrol."""

    def __init__(self, start: float = START_TIME) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def patrol_round(
    memory: SpatioTemporalMemory, world: World, clock: Clock, round_: int
) -> dict[str, list[tuple[str, str]]]:
    """Walk every place once, storing what is there; returns track -> [(place, entity id)]
    of this round's add_entity sightings."""
    seen: dict[str, list[tuple[str, str]]] = defaultdict(list)
    route = ROUTE if round_ % 2 == 0 else tuple(reversed(ROUTE))
    start = clock.now
    for place in route:
        memory.start_episode(f"patrol {place}")
        here = [k for k, s in world.spots.items() if s is not None and s.place == place]
        here.sort(key=lambda k: (not k.startswith("furniture:"), k))
        for key in here:
            furniture = key.startswith("furniture:")
            if not furniture and world.rng.random() < MISS_SHARE:
                continue
            at = world.spots[key]
            assert at is not None
            name = place if furniture else world.name_of(key)
            track = world.track_of[key]
            dx, dy = _noise(world.rng)
            observation_id = memory.add(
                f"1 {name}",
                at.x + dx,
                at.y + dy,
                timestamp=clock.now,
                layer_name="camera",
                source_type="detector",
            )
            world.observation_truth[observation_id] = (track, key)
            dx, dy = _noise(world.rng)
            entity_id = memory.add_entity(
                name,
                at.x + dx,
                at.y + dy,
                timestamp=clock.now + 0.1,
                entity_type="furniture" if furniture else "object",
                layer_name="camera",
            )
            world.entity_truth[entity_id].add((track, key))
            world.last_entity[track] = entity_id
            world.see(track, place)
            world.confirmed.add(track)
            seen[track].append((place, entity_id))
            world.observations += 1
            world.sightings += 1
            clock.now += 0.5
        memory.end_episode(wait=True)
        clock.now += VISIT_SECONDS
    clock.now = start + ROUND_SECONDS
    memory.extract_entities()
    memory.flush()
    return seen


# --- reading the memory -----------------------------------------------------------------------


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    x: float
    y: float


def entity_rows(memory: SpatioTemporalMemory) -> dict[str, EntityRow]:
    """Every entity the memory holds, with its current position estimate."""
    rows = memory.store.graph.query_text(
        "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.x AS x, e.y AS y"
    )
    return {r["id"]: EntityRow(r["id"], r["name"] or "", r["x"], r["y"]) for r in rows}


def position_histories(memory: SpatioTemporalMemory, ids: list[str]) -> dict[str, list[Any]] | None:
    """reads.positions_of for these entities, or None where the memory keeps no history."""
    positions_of = getattr(reads, "positions_of", None)
    if positions_of is None or not ids:
        return None
    found: dict[str, list[Any]] = positions_of(memory.store, ids)
    return found


def _still_open(history: list[Any] | None) -> bool:
    """Whether the last position of a history is still the current one (no history: True)."""
    if not history:
        return True
    return getattr(history[-1], "ended", None) is None


STATUSES = ("just moved", "moved before", "never moved")
"""A question's object: moved since the previous checkpoint, moved earlier, or never."""


def ask_locate(
    memory: SpatioTemporalMemory, world: World, status: dict[str, str], round_: int
) -> list[dict[str, Any]]:
    """locate(name) for every name of an object in the house the robot has seen at least once;
    the error to the nearest object of that name."""
    truths: dict[str, list[tuple[float, float]]] = defaultdict(list)
    unconfirmed: set[str] = set()
    for key in _movable(world):
        track = world.track_of[key]
        if not world.seen_places[track]:
            continue
        found = world.spots[key]
        assert found is not None
        truths[world.name_of(key)].append(found.xy)
        if track not in world.confirmed:
            unconfirmed.add(world.name_of(key))
    rows = []
    for name in sorted(truths):
        answer = memory.locate(name)
        at = parse_location(answer)
        error = None if at is None else min(math.dist(at, t) for t in truths[name])
        rows.append(
            {
                "round": round_,
                "name": name,
                "status": status.get(name, "never moved"),
                "seen_there": name not in unconfirmed,
                "error": error,
                "answer": None if at is None else [round(at[0], 2), round(at[1], 2)],
                "says_moved": "moved" in answer.lower(),
            }
        )
    return rows


ABSENCE_WORDS = ("not seen", "no longer", "missing", "gone")
"""Words by which an answer about a removed object says it is not where it was last seen."""


def ask_removed(memory: SpatioTemporalMemory, world: World, round_: int) -> list[dict[str, Any]]:
    """locate(name) for every object out of the house (seen before, no alike one in the house):
    does the answer say it was not seen where it was?"""
    inside = {world.name_of(k) for k in _movable(world)}
    rows = []
    for key, spot in sorted(world.spots.items(), key=lambda item: item[0]):
        name = world.name_of(key)
        if spot is not None or name in inside or not world.seen_places[world.track_of[key]]:
            continue
        answer = memory.locate(name).lower()
        rows.append(
            {
                "round": round_,
                "name": name,
                "says_absent": any(word in answer for word in ABSENCE_WORDS),
            }
        )
    return rows


def judge_moves(
    memory: SpatioTemporalMemory,
    world: World,
    seen: dict[str, list[tuple[str, str]]],
    entities: dict[str, EntityRow],
) -> None:
    """Judge every pending move whose object was seen at its new place this round."""
    pending = [
        m
        for m in world.moves
        if m.outcome is None and any(p == m.new.place for p, _ in seen.get(m.track, []))
    ]
    if not pending:
        return
    olds = [m.entity_before for m in pending if m.entity_before]
    histories = position_histories(memory, [i for i in olds if i in entities]) or {}
    for move in pending:
        after = [e for p, e in seen[move.track] if p == move.new.place][-1]
        if move.entity_before is not None and after == move.entity_before:
            row = entities.get(after)
            near = row is not None and math.dist((row.x, row.y), move.new.xy) <= CLAIM_METRES
            move.outcome = "followed" if near else "dragged"
            continue
        old = entities.get(move.entity_before) if move.entity_before else None
        still_current = (
            old is not None
            and math.dist((old.x, old.y), move.new.xy) > CLAIM_METRES
            and _still_open(histories.get(old.id))
        )
        move.outcome = "missed" if still_current else "split"


def merges(memory: SpatioTemporalMemory, world: World, entities: dict[str, EntityRow]) -> Any:
    """Entities whose sightings come from more than one track (and physical object)."""
    attributed: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for entity_id, truths in world.entity_truth.items():
        if entity_id in entities:
            attributed[entity_id] |= truths
    for entity_id, observation_id in reads.entity_sightings(memory.store):
        truth = world.observation_truth.get(observation_id)
        if truth is not None and entity_id in entities:
            attributed[entity_id].add(truth)
    wrong = [e for e, t in attributed.items() if len({track for track, _ in t}) > 1]
    strict = [e for e, t in attributed.items() if len({key for _, key in t}) > 1]
    per_track: dict[str, set[str]] = defaultdict(set)
    for entity_id, truths in attributed.items():
        for track, _ in truths:
            per_track[track].add(entity_id)
    examples = [
        f"{entities[e].name}: " + ", ".join(sorted({track for track, _ in attributed[e]}))
        for e in wrong[:5]
    ]
    return {
        "entities": len(entities),
        "attributed": len(attributed),
        "wrong": len(wrong),
        "rate": len(wrong) / max(1, len(attributed)),
        "strict_wrong": len(strict),
        "strict_rate": len(strict) / max(1, len(attributed)),
        "vanished_ids": sum(1 for e in world.entity_truth if e not in entities),
        "tracks": len(per_track),
        "entities_per_track": sum(len(v) for v in per_track.values()) / max(1, len(per_track)),
        "examples": examples,
    }


def _nearest_place(x: float, y: float) -> str:
    place = min(PLACES, key=lambda p: math.dist(PLACES[p], (x, y)))
    return place if math.dist(PLACES[place], (x, y)) <= 1.5 else f"({x:.1f}, {y:.1f})"


def histories(memory: SpatioTemporalMemory, world: World) -> dict[str, Any]:
    """Each tracked movable object's entity history against the places it was seen at."""
    if getattr(reads, "positions_of", None) is None:
        return {"available": False}
    tracks = [t for t in world.last_entity if not t.startswith("furniture:")]
    found = position_histories(memory, sorted({world.last_entity[t] for t in tracks})) or {}
    rows = []
    for track in sorted(tracks):
        positions = found.get(world.last_entity[track], [])
        places: list[str] = []
        for position in positions:
            place = _nearest_place(float(position.x), float(position.y))
            if not places or places[-1] != place:
                places.append(place)
        truth = list(world.seen_places[track])
        rows.append(
            {
                "track": track,
                "moved": len(truth) > 1,
                "correct": places == truth,
                "memory": places,
                "truth": truth,
            }
        )
    moved = [r for r in rows if r["moved"]]
    return {
        "available": True,
        "n": len(rows),
        "correct": sum(r["correct"] for r in rows),
        "moved_n": len(moved),
        "moved_correct": sum(r["correct"] for r in moved),
        "wrong": [r for r in rows if not r["correct"]][:8],
    }


# --- the run ----------------------------------------------------------------------------------


def distribution(errors: list[float | None]) -> dict[str, Any]:
    """n, the count and share within GOAL_METRES, p50, p90 and max (None: infinite)."""
    values = np.array([math.inf if e is None else e for e in errors], dtype=np.float64)
    if not len(values):
        return {"n": 0, "within": 0, "share": None, "p50": None, "p90": None, "max": None,
                "unanswered": 0}  # fmt: skip
    ordered = np.sort(values)

    def at(q: float) -> float | None:
        value = ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]
        return None if math.isinf(value) else float(value)

    return {
        "n": len(values),
        "within": int((values <= GOAL_METRES).sum()),
        "share": float((values <= GOAL_METRES).mean()),
        "p50": at(0.5),
        "p90": at(0.9),
        "max": at(1.0),
        "unanswered": int(np.isinf(values).sum()),
    }


@contextmanager
def _directory(directory: str | Path | None) -> Iterator[Path]:
    if directory is not None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        yield Path(directory)
        return
    with tempfile.TemporaryDirectory(prefix="emem-moves-") as made:
        yield Path(made)


def run(
    embedder: EmbeddingProvider | None = None,
    *,
    quick: bool = False,
    progress: bool = False,
    seed: int = DEFAULT_SEED,
    directory: str | Path | None = None,
) -> dict[str, Any]:
    """Play the scenario (QUICK_ROUNDS or ROUNDS rounds) into a new memory in ``directory``
    (a temporary one when None) and return every figure, the events and every question.

    Raises:
        InvalidInputError: ``directory`` already holds this seed's memory (a second run would
            add to it).
    """
    if embedder is None:
        from emem_graph.ingest.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    rounds = QUICK_ROUNDS if quick else ROUNDS
    plan = schedule(rounds, seed, quick=quick)
    world = new_world(seed)
    clock = Clock()
    started = time.perf_counter()
    questions: list[dict[str, Any]] = []
    absent: list[dict[str, Any]] = []
    with _directory(directory) as where:
        db_path = where / f"moves-{seed}"
        if db_path.exists():
            raise InvalidInputError(f"{db_path} exists: give a new --dir (or remove it)")
        config = MemoryConfig(
            db_path=str(db_path),
            maintenance_interval=None,
            embedding_dim=embedder.dim,
        )
        with SpatioTemporalMemory(
            config=config, embedding_provider=embedder, get_current_time=clock
        ) as memory:
            before = world.track_spots()
            ever_moved: set[str] = set()
            for round_ in tqdm(range(1, rounds + 1), desc="moves", disable=not progress):
                seen = patrol_round(memory, world, clock, round_)
                now = world.track_spots()
                just = {track.split("#")[0] for track, at in now.items() if at != before.get(track)}
                ever_moved |= just
                status = {name: "moved before" for name in ever_moved}
                status.update({name: "just moved" for name in just})
                before = now
                entities = entity_rows(memory)
                judge_moves(memory, world, seen, entities)
                questions.extend(ask_locate(memory, world, status, round_))
                absent.extend(ask_removed(memory, world, round_))
                world.busy.clear()
                for kind in plan.get(round_, []):
                    apply_event(world, kind, round_)
            entities = entity_rows(memory)
            merged = merges(memory, world, entities)
            history = histories(memory, world)
    judged = [m for m in world.moves if m.outcome not in (None, "superseded")]
    outcomes = Counter(m.outcome for m in judged)
    return {
        "seed": seed,
        "rounds": rounds,
        "places": len(PLACES),
        "objects": len(THINGS),
        "events": world.events,
        "event_counts": dict(Counter(e["kind"] for e in world.events)),
        "observations": world.observations,
        "sightings": world.sightings,
        "locate": {
            status: distribution([q["error"] for q in questions if status in ("all", q["status"])])
            for status in ("all", *STATUSES)
        }
        | {
            "seen there": distribution([q["error"] for q in questions if q["seen_there"]]),
            "just moved, seen there": distribution(
                [q["error"] for q in questions if q["seen_there"] and q["status"] == "just moved"]
            ),
        },
        "says_moved": {
            "moved_questions": sum(q["status"] == "just moved" for q in questions),
            "mentioning_a_move": sum(
                q["status"] == "just moved" and q["says_moved"] for q in questions
            ),
        },
        "removed": {
            "questions": len(absent),
            "saying_not_seen": sum(q["says_absent"] for q in absent),
        },
        "wrong_merge": merged,
        "moves": {
            "n": len(judged),
            "unjudged": sum(1 for m in world.moves if m.outcome in (None, "superseded")),
            **{k: outcomes.get(k, 0) for k in ("followed", "dragged", "missed", "split")},
            "missed_rate": outcomes.get("missed", 0) / max(1, len(judged)),
            "list": [
                {
                    "track": m.track,
                    "kind": m.kind,
                    "round": m.round,
                    "from": m.old.place,
                    "to": m.new.place,
                    "outcome": m.outcome,
                }
                for m in world.moves
            ],
            "by_kind": {
                kind: dict(Counter(m.outcome for m in judged if m.kind == kind))
                for kind in sorted({m.kind for m in judged})
            },
        },
        "history": history,
        "questions": questions,
        "embedder": str(getattr(embedder, "name", type(embedder).__name__)),
        "seconds": time.perf_counter() - started,
    }


def _share(count: int, n: int) -> str:
    return f"{100 * count / n:.1f}% ({count}/{n})" if n else "- (0/0)"


def _metres(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def describe(result: dict[str, Any]) -> list[str]:
    """The figures as lines of text."""
    events = ", ".join(f"{n} {k}" for k, n in sorted(result["event_counts"].items()))
    lines = [
        f"moves: {result['objects']} objects at {result['places']} places, "
        f"{result['rounds']} patrol rounds (seed {result['seed']}), {result['observations']} "
        f"detections + {result['sightings']} add_entity sightings, {result['embedder']}, "
        f"{result['seconds']:.0f} s; events: {events}",
        f"  locate (error to the true current position; goal <= {GOAL_METRES:g} m in "
        f">= {100 * GOAL_SHARE:.0f}%):",
    ]
    for status, d in result["locate"].items():
        lines.append(
            f"    {status:<22} within 1 m {_share(d['within'], d['n']):<18} "
            f"p50 {_metres(d['p50'])} m  p90 {_metres(d['p90'])} m  max {_metres(d['max'])} m"
            + (f"  unanswered {d['unanswered']}" if d["unanswered"] else "")
        )
    said = result["says_moved"]
    lines.append(
        "    answers about a just-moved object that say it moved: "
        + _share(said["mentioning_a_move"], said["moved_questions"])
    )
    gone = result["removed"]
    lines.append(
        "    answers about a removed object that say it was not seen where it was: "
        + _share(gone["saying_not_seen"], gone["questions"])
    )
    m = result["wrong_merge"]
    lines.append(
        f"  wrong merges: {_share(m['wrong'], m['attributed'])} of the entities hold sightings "
        f"of two objects (strict, counting swapped identical objects: "
        f"{_share(m['strict_wrong'], m['attributed'])}); {m['entities_per_track']:.2f} "
        f"entities per object"
    )
    if m["examples"]:
        lines.append("    e.g. " + "; ".join(m["examples"][:3]))
    mv = result["moves"]
    missed = [e for e in mv["list"] if e["outcome"] == "missed"]
    lines.append(
        f"  moves: missed {_share(mv['missed'], mv['n'])}, followed "
        f"{_share(mv['followed'], mv['n'])}, dragged (one entity averaged between places) "
        f"{_share(mv['dragged'], mv['n'])}, split {_share(mv['split'], mv['n'])}"
    )
    if missed:
        lines.append(
            "    missed: "
            + "; ".join(
                f"{e['track']} {e['from']} -> {e['to']} ({e['kind']}, round {e['round']})"
                for e in missed[:4]
            )
        )
    h = result["history"]
    if h.get("available"):
        lines.append(
            f"  history: {_share(h['correct'], h['n'])} of the objects' position histories "
            f"match the places they were seen at ({_share(h['moved_correct'], h['moved_n'])} "
            f"of those that moved)"
        )
    else:
        lines.append("  history: not measured (this memory keeps no position history)")
    return lines
