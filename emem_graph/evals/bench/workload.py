"""The synthetic patrol every benchmark figure is measured on.

A robot patrols a 100 m x 100 m floor of nine rooms: lanes 10 m apart, back and forth, then
back to the start along the left wall (one lap is 1,080 m, 2,700 observations, 18 minutes).
It moves at 1 m/s and records one observation every 0.4 s, cycling through five layers:
VLM captions, detector labels, OCR of signs, sounds, and the battery level (body state, every
20th observation). Every 100th observation is also an entity sighting, and every lap is an
episode. Vectors are given: each distinct text embedded once (HashingEmbedder by default) plus
a little per-observation noise, as a camera seeing the same thing twice never gives exactly the
same caption embedding; body-state vectors are the exact embedding of their text, since the
memories embed body state themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from emem_graph.ingest.embeddings import EmbeddingProvider, HashingEmbedder

FLOOR = (100.0, 100.0)
"""Width and height of the floor in metres."""
LANE_SPACING = 10.0
SPEED = 1.0
"""Metres per second along the patrol."""
PERIOD = 0.4
"""Seconds between two observations."""
START = 1_700_000_000.0
"""Time of the first observation (a real clock: eMEM reads a timestamp of 0.0 as "now")."""
ENTITY_EVERY = 100
VECTOR_NOISE = 0.3
"""Norm of the per-observation noise added to a perception vector (before normalising)."""
AREA_FRACTION = 0.01
AREA_RADIUS = math.sqrt(AREA_FRACTION * FLOOR[0] * FLOOR[1] / math.pi)
"""Radius of the circle covering 1% of the floor (5.6 m): the area prefilter."""
SPATIAL_RADIUS = 5.0
RECENT_MINUTES = 10.0
BODY_LAYER = "battery"
INTEROCEPTION = "interoception"

ROOMS = (
    "kitchen", "hallway", "lab", "office", "storage room", "workshop", "lobby",
    "meeting room", "server room",
)  # fmt: skip
COLOURS = ("red", "blue", "green", "yellow", "white", "black", "grey", "orange")
OBJECTS = (
    "chair", "table", "door", "box", "person", "cup", "laptop", "plant",
    "shelf", "bottle", "bag", "robot", "window", "lamp", "trolley", "fire extinguisher",
)  # fmt: skip
RELATIONS = ("near", "next to", "in front of", "behind", "on the left of", "on the right of")
SIGNS = ("EXIT", "NO ENTRY", "FIRE DOOR KEEP SHUT", "AUTHORISED STAFF ONLY", "WET FLOOR")
SOUNDS = ("a door closing", "footsteps", "a phone ringing", "an alarm beeping", "people talking")
# Twenty slots per cycle: 8 captions, 7 detections, 2 OCR, 2 sounds, 1 battery reading.
LAYER_OF_SLOT = ("captions",) * 8 + ("detections",) * 7 + ("ocr",) * 2 + ("audio",) * 2
LAYERS = ("captions", "detections", "ocr", "audio", BODY_LAYER)
SOURCE_OF_LAYER = {
    "captions": "vlm",
    "detections": "detector",
    "ocr": "ocr",
    "audio": "microphone",
    BODY_LAYER: INTEROCEPTION,
}
QUERIES = tuple(f"where is the {c} {o}?" for c in COLOURS for o in OBJECTS)


@dataclass(frozen=True)
class PatrolWorkload:
    """n observations of a patrol, the entity sightings along it, and the query set.

    Observation columns are parallel arrays/lists of length n; ``lap`` numbers the episode each
    observation belongs to. Entity sightings are given by observation index (``entity_rows``)
    and name. ``query_points`` are positions on the route (centres of spatial queries and of
    the area prefilter).
    """

    texts: list[str]
    x: np.ndarray
    y: np.ndarray
    t: np.ndarray
    layers: list[str]
    source_types: list[str]
    lap: np.ndarray
    vectors: np.ndarray
    entity_rows: np.ndarray
    entity_names: list[str]
    query_points: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def body(self) -> np.ndarray:
        """Boolean mask of the body-state (interoception) observations."""
        return np.asarray([s == INTEROCEPTION for s in self.source_types], dtype=bool)

    @property
    def now(self) -> float:
        """The time of the last observation: "now" for every query."""
        return float(self.t[-1]) if len(self) else START

    def head(self, m: int) -> PatrolWorkload:
        """The first m observations (and their entity sightings)."""
        keep = self.entity_rows < m
        return PatrolWorkload(
            texts=self.texts[:m],
            x=self.x[:m],
            y=self.y[:m],
            t=self.t[:m],
            layers=self.layers[:m],
            source_types=self.source_types[:m],
            lap=self.lap[:m],
            vectors=self.vectors[:m],
            entity_rows=self.entity_rows[keep],
            entity_names=[n for n, k in zip(self.entity_names, keep, strict=True) if k],
            query_points=self.query_points,
        )


def route() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The patrol's closed polyline: (x, y, cumulative length) of its vertices."""
    width, height = FLOOR
    margin = LANE_SPACING / 2
    lanes = np.arange(margin, height, LANE_SPACING)
    xs: list[float] = []
    ys: list[float] = []
    for k, lane_y in enumerate(lanes):
        ends = (margin, width - margin) if k % 2 == 0 else (width - margin, margin)
        xs.extend(ends)
        ys.extend((lane_y, lane_y))
    xs.extend((xs[-1], xs[0]))  # back to the start along the wall
    ys.extend((ys[0], ys[0]))
    x, y = np.asarray(xs), np.asarray(ys)
    length = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
    return x, y, length


def room_of(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Index into ROOMS of the room (a 3 x 3 grid over the floor) containing each point."""
    col = np.clip((x / FLOOR[0] * 3).astype(int), 0, 2)
    row = np.clip((y / FLOOR[1] * 3).astype(int), 0, 2)
    return row * 3 + col


def patrol_workload(
    n: int,
    *,
    embedder: EmbeddingProvider | None = None,
    queries: int = 20,
    seed: int = 0,
    progress: bool = False,
) -> PatrolWorkload:
    """Generate n observations of the patrol (see the module docstring).

    Args:
        n: observations.
        embedder: embeds each distinct text once (default HashingEmbedder(384)).
        queries: query points to draw on the route.
        seed: random seed; the same seed gives the same workload.
        progress: show a progress bar.
    """
    embedder = embedder if embedder is not None else HashingEmbedder(384)
    rng = np.random.default_rng(seed)
    vx, vy, length = route()
    lap_length = float(length[-1])
    t = START + np.arange(n, dtype=np.float64) * PERIOD
    travelled = (t - START) * SPEED
    s = travelled % lap_length
    x = np.interp(s, length, vx) + rng.normal(0.0, 0.1, n)
    y = np.interp(s, length, vy) + rng.normal(0.0, 0.1, n)
    lap = (travelled // lap_length).astype(np.int64)
    room = room_of(x, y)
    picks = rng.integers(0, 1 << 30, size=(n, 4))
    texts: list[str] = []
    layers: list[str] = []
    for i in tqdm(range(n), desc="workload", unit="obs", disable=not progress, leave=False):
        slot = i % 20
        layer = LAYER_OF_SLOT[slot] if slot < len(LAYER_OF_SLOT) else BODY_LAYER
        texts.append(_text(layer, i, ROOMS[room[i]], picks[i]))
        layers.append(layer)
    distinct = sorted(set(texts))
    table = dict(zip(distinct, embedder.embed(distinct), strict=True))
    vectors = np.empty((n, embedder.dim), dtype=np.float32)
    for i, text in enumerate(texts):
        vectors[i] = table[text]
    sources = [SOURCE_OF_LAYER[layer] for layer in layers]
    perception = np.asarray([s != INTEROCEPTION for s in sources], dtype=bool)
    _add_noise(vectors, perception, rng)
    entity_rows = np.arange(0, n, ENTITY_EVERY)
    entity_names = [_entity_name(picks[i]) for i in entity_rows]
    points = rng.integers(0, max(n, 1), size=max(queries, 1))
    return PatrolWorkload(
        texts=texts,
        x=x,
        y=y,
        t=t,
        layers=layers,
        source_types=sources,
        lap=lap,
        vectors=vectors,
        entity_rows=entity_rows,
        entity_names=entity_names,
        query_points=np.stack([x[points], y[points]], axis=1) if n else np.zeros((1, 2)),
    )


def _text(layer: str, i: int, room: str, pick: np.ndarray) -> str:
    if layer == "captions":
        colour, thing = COLOURS[pick[0] % len(COLOURS)], OBJECTS[pick[1] % len(OBJECTS)]
        return f"a {colour} {thing} {RELATIONS[pick[2] % len(RELATIONS)]} the {room} door"
    if layer == "detections":
        first, second = OBJECTS[pick[0] % len(OBJECTS)], OBJECTS[pick[1] % len(OBJECTS)]
        return f"{1 + pick[2] % 3} {first}, {1 + pick[3] % 2} {second}"
    if layer == "ocr":
        return f"a sign reading '{SIGNS[pick[0] % len(SIGNS)]}' in the {room}"
    if layer == "audio":
        return f"{SOUNDS[pick[0] % len(SOUNDS)]} in the {room}"
    return f"battery at {100 - (i // 20) % 80} percent"


def _entity_name(pick: np.ndarray) -> str:
    return f"{COLOURS[pick[0] % len(COLOURS)]} {OBJECTS[pick[1] % len(OBJECTS)]}"


def _add_noise(vectors: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> None:
    """Add VECTOR_NOISE-norm Gaussian noise to the given rows and renormalise, in chunks."""
    index = np.flatnonzero(rows)
    dim = vectors.shape[1]
    for start in range(0, index.size, 65_536):
        chunk = index[start : start + 65_536]
        noise = rng.standard_normal((chunk.size, dim), dtype=np.float32)
        noise *= VECTOR_NOISE / math.sqrt(dim)
        block = vectors[chunk] + noise
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vectors[chunk] = block
