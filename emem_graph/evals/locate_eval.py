"""Locate evaluation: a robot patrols an office flat with known object positions; locate(name) is
asked for every object and its answer is compared with the truth.

The flat has seven rooms and 39 objects, some with multi-word names ("first aid kit", "large
potted plant") and some alike ("red chair" in the kitchen, "blue chair" in the office, "black
chair" in the meeting room; "coffee table" and "coffee machine"; "desk lamp" and "floor lamp").
The robot walks its route several times, stopping at one to three poses per room; at every pose
it perceives the objects of the room:

- detections ("1 red chair", layer "detections"): one per object seen (a detector with depth
  projects each box into the map), at the true position plus an error from that pose: N(0, 0.35 m)
  along the viewing ray, N(0, 0.15 m) across it; 5% of them are off by a further 1.5 m along the
  ray (depth through a doorway); 20% of the objects within 4 m are missed in a frame, 10% more
  per metre beyond (at most 70%);
- subject captions ("a red chair next to the kitchen door", layer "captions"): one object per
  pose, in turn, at its position plus N(0, 0.4 m) per axis;
- relational captions that name a second object ("a refrigerator across from the red chair"),
  at the first object's position: they must not drag the second object's location;
- a scene caption per room visit naming three objects ("the kitchen: a refrigerator, a dining
  table and a red chair"), at the robot's pose.

Each room visit is an episode (its gists are written when it ends); entities are extracted from
the observations (detections by rule, captions by the labels the detector taught). Then
locate(name) is asked for every object, and locate(paraphrase) for 23 of them ("the red seat",
"the fridge"); the answered position is read from the "Location: (x, y, z)" line and the error
is its horizontal distance to the truth.

The full run walks three patrols (seeds 10-12: different noise, misses and scene captions; the
locate constants were chosen on seeds 0-2), the quick one a single patrol of three rounds. Two
estimates are reported over the same dense hits (the memory's store, the query's embedding,
the perception prefilter and n_results=10, as the locate tool reads them): "strong-hit mean", the
locate of commit 142c463 (the similarity-weighted mean of every hit within 0.1 of the best), and
"locate", the memory's locate tool as it is now (its answer text is what is parsed).
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.filters import perception_filter
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.models import Entity, Gist, Observation

GOAL_METRES = 1.0
"""An answer within this horizontal distance of the truth counts as located."""
GOAL_SHARE = 0.95
"""The share of objects to locate within GOAL_METRES (the goal: every known entity;
the tests allow one miss in twenty)."""
START_TIME = 1_790_000_000.0
"""The patrol's simulated start (November 2026)."""
SECONDS_PER_POSE = 20.0
RANGE_NOISE = 0.35
"""Metres: standard deviation of a detection's error along the viewing ray."""
LATERAL_NOISE = 0.15
"""Metres: standard deviation of a detection's error across the viewing ray."""
OUTLIER_SHARE = 0.05
OUTLIER_METRES = 1.5
CAPTION_NOISE = 0.4
"""Metres: standard deviation per axis of a caption's position around its subject."""
MISS_SHARE = 0.2
"""Share of the objects within CLEAR_RANGE that the detector misses in a frame..."""
CLEAR_RANGE = 4.0
"""...metres; beyond it the miss share grows by FARTHER_MISS per metre, up to MAX_MISS."""
FARTHER_MISS = 0.1
MAX_MISS = 0.7
VIEW_RANGE = 9.0
"""Metres: objects of the robot's room within this distance are perceived."""
N_RESULTS = 10
"""Hits the locate tool reads by default."""
SEEDS = (10, 11, 12)
"""Patrols of the full run (their noise, misses and scene captions differ). The estimate's
constants were chosen on seeds 0-2; these are kept apart from them."""
QUICK_SEEDS = (10,)


@dataclass(frozen=True)
class Room:
    name: str
    poses: tuple[tuple[float, float], ...]
    """Where the robot stops in the room, in order."""


@dataclass(frozen=True)
class Thing:
    name: str
    room: str
    x: float
    y: float
    caption: str
    """What the captioner says when the thing is the subject."""
    paraphrase: str | None = None
    """Another way a person names it (None: none asked)."""


ROOMS = (
    Room("kitchen", ((2.0, 2.5), (6.0, 4.5))),
    Room("living room", ((10.0, 3.0), (15.0, 2.5), (13.0, 5.5))),
    Room("bathroom", ((21.0, 3.5),)),
    Room("hallway", ((3.0, 8.0), (9.0, 8.0), (16.0, 8.0))),
    Room("office", ((4.5, 11.0), (5.0, 15.0))),
    Room("meeting room", ((11.0, 12.0), (15.0, 14.5))),
    Room("bedroom", ((20.0, 12.0), (21.5, 15.0))),
)
ROUTE = ("kitchen", "living room", "bathroom", "hallway", "office", "meeting room", "bedroom")

THINGS = (
    # kitchen (0-8, 0-7)
    Thing("red chair", "kitchen", 2.0, 5.5, "a red chair next to the kitchen door", "the red seat"),
    Thing(
        "refrigerator",
        "kitchen",
        7.0,
        6.3,
        "a tall white refrigerator with magnets on it",
        "the fridge",
    ),
    Thing(
        "coffee machine",
        "kitchen",
        1.0,
        1.0,
        "a silver coffee machine on the counter",
        "the espresso maker",
    ),
    Thing("microwave oven", "kitchen", 3.0, 0.5, "a microwave oven above the counter"),
    Thing("kitchen sink", "kitchen", 5.0, 0.5, "a steel kitchen sink full of dishes"),
    Thing("dining table", "kitchen", 4.0, 3.5, "a wooden dining table with four places set"),
    Thing("trash can", "kitchen", 7.3, 1.0, "a grey trash can by the back door", "the rubbish bin"),
    Thing("toaster", "kitchen", 1.8, 0.6, "a chrome toaster with two slots"),
    # living room (8-18, 0-7)
    Thing("grey sofa", "living room", 12.0, 6.0, "a grey sofa with two cushions", "the grey couch"),
    Thing("television", "living room", 12.0, 1.0, "a television mounted on the wall", "the TV"),
    Thing(
        "green armchair",
        "living room",
        15.5,
        5.0,
        "a green armchair in the corner",
        "the green easy chair",
    ),
    Thing("floor lamp", "living room", 16.8, 6.3, "a tall floor lamp with a paper shade"),
    Thing(
        "large potted plant",
        "living room",
        9.0,
        6.2,
        "a large potted plant with broad leaves",
        "the big plant",
    ),
    Thing("coffee table", "living room", 12.0, 3.8, "a low glass coffee table"),
    Thing("bookshelf", "living room", 17.5, 1.5, "a bookshelf full of paperbacks", "the bookcase"),
    # bathroom (18-24, 0-7)
    Thing(
        "washing machine", "bathroom", 19.0, 0.8, "a washing machine in the corner", "the washer"
    ),
    Thing("bathtub", "bathroom", 22.5, 3.0, "a white bathtub with a shower curtain", "the bath"),
    Thing("wall mirror", "bathroom", 20.5, 6.5, "a round wall mirror with a wooden frame"),
    Thing(
        "first aid kit",
        "bathroom",
        23.5,
        6.0,
        "a first aid kit on a shelf",
        "the medical kit",
    ),
    # hallway (0-24, 7-9)
    Thing("front door", "hallway", 0.3, 8.0, "the front door, closed", "the main entrance"),
    Thing("coat rack", "hallway", 2.0, 8.6, "a coat rack with a black jacket"),
    Thing("shoe rack", "hallway", 4.5, 8.6, "a shoe rack with two pairs of boots"),
    Thing("umbrella stand", "hallway", 1.2, 7.4, "an umbrella stand with a green umbrella"),
    Thing(
        "fire extinguisher",
        "hallway",
        12.0,
        8.7,
        "a red fire extinguisher on the wall",
        "the extinguisher",
    ),
    # office (0-9, 9-17)
    Thing("blue chair", "office", 3.0, 12.0, "a blue chair at the desk", "the blue office seat"),
    Thing("office desk", "office", 3.0, 13.2, "an office desk with papers on it"),
    Thing(
        "laptop",
        "office",
        2.4,
        13.4,
        "an open laptop showing a spreadsheet",
        "the notebook computer",
    ),
    Thing("printer", "office", 7.5, 15.5, "a laser printer on a small cabinet"),
    Thing("desk lamp", "office", 1.2, 14.0, "a desk lamp with a green shade"),
    Thing("filing cabinet", "office", 8.3, 10.0, "a grey filing cabinet with three drawers"),
    Thing(
        "small potted plant",
        "office",
        0.8,
        16.2,
        "a small potted plant on the windowsill",
        "the little plant on the windowsill",
    ),
    # meeting room (9-17, 9-17)
    Thing(
        "whiteboard",
        "meeting room",
        13.0,
        16.8,
        "a whiteboard covered in diagrams",
        "the marker board",
    ),
    Thing(
        "meeting table",
        "meeting room",
        13.0,
        13.0,
        "a long meeting table",
        "the conference table",
    ),
    Thing(
        "projector",
        "meeting room",
        13.0,
        10.5,
        "a projector hanging from the ceiling",
        "the beamer",
    ),
    Thing(
        "water dispenser",
        "meeting room",
        9.8,
        9.8,
        "a water dispenser by the door",
        "the water cooler",
    ),
    Thing("black chair", "meeting room", 16.0, 13.0, "a black chair at the end of the table"),
    # bedroom (17-24, 9-17)
    Thing("double bed", "bedroom", 21.0, 14.5, "a double bed with a white duvet"),
    Thing("wardrobe", "bedroom", 23.5, 10.5, "a tall wooden wardrobe", "the closet"),
    Thing(
        "alarm clock",
        "bedroom",
        19.0,
        16.0,
        "an alarm clock on the nightstand",
        "the clock by the bed",
    ),
)

RELATIONS = (
    # (subject, other, caption at the subject's position naming the other)
    ("refrigerator", "red chair", "a refrigerator across from the red chair"),
    ("dining table", "red chair", "a dining table with the red chair pulled out"),
    ("trash can", "kitchen sink", "a trash can to the right of the kitchen sink"),
    ("microwave oven", "coffee machine", "a microwave oven near the coffee machine"),
    ("television", "grey sofa", "a television on the wall facing the grey sofa"),
    ("coffee table", "grey sofa", "a coffee table in front of the grey sofa"),
    ("bookshelf", "green armchair", "a bookshelf behind the green armchair"),
    ("large potted plant", "grey sofa", "a large potted plant at the end of the grey sofa"),
    ("floor lamp", "television", "a floor lamp across the room from the television"),
    ("bathtub", "washing machine", "a bathtub opposite the washing machine"),
    ("first aid kit", "wall mirror", "a first aid kit on a shelf beside the wall mirror"),
    ("coat rack", "front door", "a coat rack beside the front door"),
    ("fire extinguisher", "shoe rack", "a fire extinguisher down the hall from the shoe rack"),
    ("printer", "office desk", "a printer on a cabinet behind the office desk"),
    ("filing cabinet", "blue chair", "a filing cabinet behind the blue chair"),
    ("desk lamp", "laptop", "a desk lamp lighting the laptop"),
    ("whiteboard", "meeting table", "a whiteboard at the head of the meeting table"),
    ("projector", "whiteboard", "a projector pointed at the whiteboard"),
    ("water dispenser", "black chair", "a water dispenser across the room from the black chair"),
    ("wardrobe", "double bed", "a wardrobe to the left of the double bed"),
    ("alarm clock", "double bed", "an alarm clock next to the double bed"),
)

_LOCATION_RE = re.compile(r"^Location: \((-?[\d.]+), (-?[\d.]+), (-?[\d.]+)\)", re.MULTILINE)
_Hit = tuple[Observation | Gist | Entity, float]


@dataclass(frozen=True)
class Query:
    text: str
    thing: Thing
    kind: str
    """"name" or "paraphrase"."""


def queries() -> list[Query]:
    """locate(name) for every thing, locate(paraphrase) for those that have one."""
    asked = [Query(t.name, t, "name") for t in THINGS]
    asked.extend(Query(t.paraphrase, t, "paraphrase") for t in THINGS if t.paraphrase)
    return asked


def _things_in(room: str) -> list[Thing]:
    return [t for t in THINGS if t.room == room]


def _detection_position(
    rng: np.random.Generator, thing: Thing, pose: tuple[float, float]
) -> tuple[float, float]:
    ray = np.array([thing.x - pose[0], thing.y - pose[1]])
    length = float(np.linalg.norm(ray))
    along = ray / length if length > 1e-9 else np.array([1.0, 0.0])
    across = np.array([-along[1], along[0]])
    error = rng.normal(0.0, RANGE_NOISE)
    if rng.random() < OUTLIER_SHARE:
        error += OUTLIER_METRES * (1.0 if rng.random() < 0.5 else -1.0)
    point = np.array([thing.x, thing.y]) + error * along + rng.normal(0.0, LATERAL_NOISE) * across
    return float(point[0]), float(point[1])


def miss_share(distance: float) -> float:
    """The share of frames in which the detector misses an object this far away."""
    return min(MAX_MISS, MISS_SHARE + FARTHER_MISS * max(0.0, distance - CLEAR_RANGE))


def _scene_caption(room: str, things: Sequence[Thing]) -> str:
    named = [f"{'an' if t.name[0] in 'aeiou' else 'a'} {t.name}" for t in things]
    return f"the {room}: {', '.join(named[:-1])} and {named[-1]}"


@dataclass
class Patrol:
    """What was added: observation counts by kind."""

    detections: int = 0
    captions: int = 0
    relational: int = 0
    scene: int = 0

    def __iadd__(self, other: Patrol) -> Patrol:
        self.detections += other.detections
        self.captions += other.captions
        self.relational += other.relational
        self.scene += other.scene
        return self

    @property
    def observations(self) -> int:
        return self.detections + self.captions + self.relational + self.scene


class Clock:
    """The memory's simulated time, advanced by the patrol."""

    def __init__(self, start: float = START_TIME) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def patrol(memory: SpatioTemporalMemory, clock: Clock, *, rounds: int, seed: int = 0) -> Patrol:
    """Walk the route ``rounds`` times, adding what the robot perceives (``clock`` is the
    memory's clock; the patrol advances it). Ends with entity extraction."""
    rng = np.random.default_rng(seed)
    added = Patrol()
    turn = 0
    relations = {r[0]: r for r in RELATIONS}
    for _ in range(rounds):
        for room_name in ROUTE:
            room = next(r for r in ROOMS if r.name == room_name)
            things = _things_in(room_name)
            memory.start_episode(f"patrol {room_name}")
            for pose in room.poses:
                seen = [
                    t
                    for t in things
                    if math.dist((t.x, t.y), pose) <= VIEW_RANGE
                    and rng.random() >= miss_share(math.dist((t.x, t.y), pose))
                ]
                for thing in seen:
                    x, y = _detection_position(rng, thing, pose)
                    memory.add(
                        f"1 {thing.name}",
                        x,
                        y,
                        timestamp=clock.now,
                        layer_name="detections",
                        source_type="detector",
                    )
                    added.detections += 1
                    clock.now += 0.5
                if seen:
                    subject = seen[turn % len(seen)]
                    turn += 1
                    dx, dy = rng.normal(0.0, CAPTION_NOISE, 2)
                    memory.add(
                        subject.caption,
                        subject.x + dx,
                        subject.y + dy,
                        timestamp=clock.now,
                        layer_name="captions",
                        source_type="vlm",
                    )
                    added.captions += 1
                    relation = relations.get(subject.name)
                    if relation is not None:
                        dx, dy = rng.normal(0.0, CAPTION_NOISE, 2)
                        memory.add(
                            relation[2],
                            subject.x + dx,
                            subject.y + dy,
                            timestamp=clock.now + 1.0,
                            layer_name="captions",
                            source_type="vlm",
                        )
                        added.relational += 1
                clock.now += SECONDS_PER_POSE
            named = [things[i] for i in sorted(rng.choice(len(things), 3, replace=False))]
            memory.add(
                _scene_caption(room_name, named),
                room.poses[0][0],
                room.poses[0][1],
                timestamp=clock.now,
                layer_name="captions",
                source_type="vlm",
            )
            added.scene += 1
            clock.now += SECONDS_PER_POSE
            memory.end_episode(wait=True)
    memory.extract_entities()
    memory.flush()
    return added


def strong_hit_mean(hits: Sequence[_Hit]) -> tuple[float, float] | None:
    """The locate of commit 142c463: every hit within 0.1 (and 80%) of the best one, weighted
    by exp((similarity - best) / 0.05)."""
    if not hits:
        return None
    ranked = sorted(hits, key=lambda hit: -hit[1])
    best = ranked[0][1]
    floor = max(best - 0.1, best * 0.8 if best > 0 else best)
    strong = [h for h in ranked if h[1] >= floor]
    weights = np.array([math.exp((s - best) / 0.05) for _, s in strong])
    points = np.array([[r.x, r.y] for r, _ in strong])
    centre = (weights[:, None] * points).sum(axis=0) / weights.sum()
    return float(centre[0]), float(centre[1])


def parse_location(answer: str) -> tuple[float, float] | None:
    """The (x, y) of a locate answer's "Location:" line, or None."""
    match = _LOCATION_RE.search(answer)
    return None if match is None else (float(match.group(1)), float(match.group(2)))


def distribution(errors: Sequence[float | None]) -> dict[str, float | None]:
    """p50, p90, max, mean and the share within GOAL_METRES of a list of errors (metres); a
    missing answer (None) counts as an infinite error, and a figure it makes infinite is None
    (the result stays JSON)."""
    values = np.array([math.inf if e is None else e for e in errors], dtype=np.float64)
    finite = values[np.isfinite(values)]

    def figure(value: float) -> float | None:
        return None if math.isinf(value) or math.isnan(value) else value

    if not len(values):
        return {"n": 0.0, "p50": None, "p90": None, "max": None, "mean": None,
                "within_goal": None, "unanswered": 0.0}  # fmt: skip
    ordered = np.sort(values)
    return {
        "n": float(len(values)),
        "p50": figure(_percentile(ordered, 50)),
        "p90": figure(_percentile(ordered, 90)),
        "max": figure(float(ordered[-1])),
        "mean": figure(float(finite.mean())) if len(finite) else None,
        "within_goal": float((values <= GOAL_METRES).mean()),
        "unanswered": float(len(values) - len(finite)),
    }


def _percentile(ordered: np.ndarray, q: float) -> float:
    """Linear-interpolated percentile of sorted values that may end in infinities."""
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    if low == high or ordered[low] == ordered[high]:
        return float(ordered[low])
    if math.isinf(ordered[high]):
        return math.inf
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


VARIANTS = ("strong-hit mean", "locate")
"""The estimate of commit 142c463, and the memory's locate tool."""


def ask(memory: SpatioTemporalMemory) -> list[dict[str, Any]]:
    """Every query's errors (metres; None when unanswered) per variant."""
    where = perception_filter()
    asked = queries()
    vectors = memory.embed([q.text for q in asked])
    rows: list[dict[str, Any]] = []
    for query, vector in zip(asked, vectors, strict=True):
        hits = [
            (record, hit.score) for hit, record in memory.store.nearest(vector, N_RESULTS, where)
        ]
        answers = {
            "strong-hit mean": strong_hit_mean(hits),
            "locate": parse_location(memory.locate(query.text, n_results=N_RESULTS)),
        }
        truth = (query.thing.x, query.thing.y)
        rows.append(
            {
                "query": query.text,
                "kind": query.kind,
                "thing": query.thing.name,
                "errors": {
                    name: None if at is None else math.dist(at, truth)
                    for name, at in answers.items()
                },
            }
        )
    return rows


def run(
    embedder: EmbeddingProvider | None = None, *, quick: bool = False, progress: bool = False
) -> dict[str, Any]:
    """Patrol the flat into a memory in a temporary directory and ask locate for every object:
    one patrol of 3 rounds when ``quick``, else 3 patrols (seeds) of 4 rounds. Returns the error
    figures per variant and query kind, and every query's errors."""
    if embedder is None:
        from emem_graph.ingest.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    rounds = 3 if quick else 4
    seeds = QUICK_SEEDS if quick else SEEDS
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    added = Patrol()
    entities = 0
    with tempfile.TemporaryDirectory(prefix="emem-locate-") as directory:
        for seed in tqdm(seeds, desc="locate", unit="patrol", disable=not progress):
            clock = Clock()
            config = MemoryConfig(
                db_path=str(Path(directory) / f"memory-{seed}"),
                maintenance_interval=None,
                embedding_dim=embedder.dim,
            )
            with SpatioTemporalMemory(
                config=config, embedding_provider=embedder, get_current_time=clock
            ) as memory:
                added += patrol(memory, clock, rounds=rounds, seed=seed)
                rows.extend({"seed": seed, **row} for row in ask(memory))
                listed = memory.entity_query(n_results=1000)
                entities += sum(1 for line in listed.splitlines() if "[entity/" in line)
    return {
        "variants": {
            variant: {
                kind: distribution(
                    [r["errors"][variant] for r in rows if kind in ("all", r["kind"])]
                )
                for kind in ("all", "name", "paraphrase")
            }
            for variant in VARIANTS
        },
        "queries": rows,
        "rounds": rounds,
        "seeds": list(seeds),
        "things": len(THINGS),
        "rooms": len(ROOMS),
        "observations": added.observations,
        "by_kind": {
            "detections": added.detections,
            "captions": added.captions,
            "relational captions": added.relational,
            "scene captions": added.scene,
        },
        "entities": entities,
        "embedder": str(getattr(embedder, "name", type(embedder).__name__)),
        "seconds": time.perf_counter() - started,
    }


def describe(result: dict[str, Any]) -> list[str]:
    """The error distribution per variant and query kind, as a table, and the worst answers."""
    lines = [
        f"locate: {result['things']} objects in {result['rooms']} rooms; "
        f"{len(result['seeds'])} patrol(s) of {result['rounds']} rounds, "
        f"{result['observations']} observations, {result['entities']} entities, "
        f"{result['embedder']}; error = horizontal distance (m) from the answer to the object",
        f"  {'variant':<16} {'queries':<10} {'n':>4} {'p50':>5} {'p90':>5} {'max':>5} {'<=1 m':>6}",
    ]
    for variant, kinds in result["variants"].items():
        for kind, d in kinds.items():
            share = "-" if d["within_goal"] is None else f"{100 * d['within_goal']:.1f}%"
            lines.append(
                f"  {variant:<16} {kind:<10} {int(d['n']):>4} {_metres(d['p50'])} "
                f"{_metres(d['p90'])} {_metres(d['max'])} {share:>6}"
            )
    worst = sorted(result["queries"], key=lambda r: -_error(r["errors"]["locate"]))[:3]
    lines.append(
        "  worst locate answers: "
        + "; ".join(f"{r['query']!r} {_metres(r['errors']['locate']).strip()} m" for r in worst)
    )
    return lines


def _error(value: float | None) -> float:
    return math.inf if value is None else value


def _metres(value: float | None) -> str:
    return f"{'-':>5}" if value is None else f"{value:>5.2f}"
