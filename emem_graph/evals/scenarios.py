"""Scripted worlds with known ground truth, for tests and for measuring consolidation.

A Scenario is a set of objects (each with a label, a modifier and a position) and the robot's
observations in episodes: detection lists of the objects within detection range and captions
that name objects, each step annotated with the objects its text mentions. Body-state readings
are interleaved (they must never reach gists or entities).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field

DETECTION_RANGE = 2.0
"""Metres within which the simulated detector lists an object."""


@dataclass(frozen=True)
class WorldObject:
    """A real object: its label (what a detector says), a modifier and its position."""

    key: str
    label: str
    modifier: str
    x: float
    y: float


@dataclass(frozen=True)
class Step:
    """One observation the robot makes: text, layer, position, time, and the objects named."""

    text: str
    layer: str
    x: float
    y: float
    t: float
    objects: tuple[str, ...] = ()
    body_state: bool = False


@dataclass
class EpisodePlan:
    """An episode: a name and its steps in time order."""

    name: str
    steps: list[Step] = field(default_factory=list)


@dataclass
class Scenario:
    """Objects and the episodes that observe them."""

    objects: dict[str, WorldObject]
    episodes: list[EpisodePlan]

    @property
    def steps(self) -> list[Step]:
        return [s for e in self.episodes for s in e.steps]

    def sightings(self) -> Counter[str]:
        """How many observations name each object (its expected entity count)."""
        return Counter(k for s in self.steps if not s.body_state for k in s.objects)

    def cooccurrences(self) -> Counter[frozenset[str]]:
        """How many observations name each pair of objects together."""
        pairs: Counter[frozenset[str]] = Counter()
        for step in self.steps:
            keys = sorted(set(step.objects))
            for i, a in enumerate(keys):
                for b in keys[i + 1 :]:
                    pairs[frozenset((a, b))] += 1
        return pairs


def detection_step(objects: dict[str, WorldObject], x: float, y: float, t: float) -> Step | None:
    """What a detector at (x, y) lists: "<n> <label>s" for the objects within range."""
    seen = [o for o in objects.values() if math.hypot(o.x - x, o.y - y) <= DETECTION_RANGE]
    if not seen:
        return None
    counts = Counter(o.label for o in seen)
    text = ", ".join(f"{n} {label}{'s' if n > 1 else ''}" for label, n in sorted(counts.items()))
    return Step(text, "detections", x, y, t, tuple(sorted(o.key for o in seen)))


def house_scenario() -> Scenario:
    """Three episodes in a house (kitchen, hallway, living room) seen by a detector and a
    captioner. The red chair (kitchen) is seen in all three; the blue chair stands 10 m from
    it; the delivery box is only in the first episode; the third has a pause longer than the
    default consolidation_window (1800 s), so it gets two gists."""
    objects = {
        o.key: o
        for o in (
            WorldObject("red_chair", "chair", "red", 2.0, 2.0),
            WorldObject("table", "table", "kitchen", 3.0, 2.5),
            WorldObject("fridge", "fridge", "white", 5.0, 5.0),
            WorldObject("box", "box", "delivery", 8.0, 2.4),
            WorldObject("door", "door", "front", 9.0, 3.0),
            WorldObject("plant", "plant", "potted", 11.0, 3.5),
            WorldObject("blue_chair", "chair", "blue", 12.0, 2.0),
            WorldObject("sofa", "sofa", "grey", 14.0, 4.0),
            WorldObject("tv", "tv", "large", 16.0, 2.0),
        )
    }
    waypoints = {
        "kitchen": (2.3, 2.2),
        "fridge": (4.6, 4.6),
        "hall": (8.5, 2.8),
        "plant": (11.0, 3.2),
        "living": (12.3, 2.3),
        "sofa": (14.5, 3.5),
        "tv": (15.8, 2.2),
    }
    captions: dict[str, list[tuple[str, tuple[str, ...]]]] = {
        "kitchen": [
            ("a red chair next to the kitchen table", ("red_chair", "table")),
            ("the red chair is pushed under the kitchen table", ("red_chair", "table")),
        ],
        "fridge": [("a white fridge humming quietly", ("fridge",))],
        "hall": [("the front door is closed", ("door",))],
        "plant": [("a potted plant in the hallway corner", ("plant",))],
        "living": [("a blue chair beside the sofa", ("blue_chair", "sofa"))],
        "sofa": [("a grey sofa facing the tv", ("sofa", "tv"))],
        "tv": [("a large tv mounted on the wall", ("tv",))],
    }
    box_captions = [
        ("a cardboard delivery box left by the front door", ("box", "door")),
        ("the delivery box by the front door is taped shut", ("box", "door")),
        ("a courier label on the delivery box", ("box",)),
    ]

    def visit(plan: EpisodePlan, place: str, t: float, variant: int, with_box: bool) -> float:
        x, y = waypoints[place]
        layout = dict(objects) if with_box else {k: o for k, o in objects.items() if k != "box"}
        detection = detection_step(layout, x, y, t)
        if detection is not None:
            plan.steps.append(detection)
            t += 10
        text, named = captions[place][variant % len(captions[place])]
        plan.steps.append(Step(text, "captions", x, y, t, named))
        t += 10
        if with_box and place == "hall":
            for text, named in box_captions:
                plan.steps.append(Step(text, "captions", x, y, t, named))
                t += 10
        battery = 90 - int(t // 600)
        plan.steps.append(Step(f"battery {battery}%", "battery", x, y, t, body_state=True))
        return t + 10

    morning = EpisodePlan("morning patrol")
    t = 0.0
    for place in ("kitchen", "fridge", "hall", "plant", "living", "sofa", "tv"):
        t = visit(morning, place, t, 0, with_box=True)
    fetch = EpisodePlan("fetch a cup")
    t = 3000.0
    for place in ("kitchen", "fridge", "kitchen"):
        t = visit(fetch, place, t, 1, with_box=False)
    evening = EpisodePlan("evening patrol")
    t = 6000.0
    for place in ("tv", "sofa", "living", "plant", "hall"):
        t = visit(evening, place, t, 0, with_box=False)
    t += 2000.0  # the robot waits, longer than consolidation_window: a second gist
    for place in ("fridge", "kitchen"):
        t = visit(evening, place, t, 1, with_box=False)
    return Scenario(objects, [morning, fetch, evening])


_LABEL_WORDS = "chair table sofa lamp plant door shelf bin box cabinet desk printer fridge bench"
LABELS = tuple(_LABEL_WORDS.split())
_MODIFIER_WORDS = "red blue green white black wooden metal small large old new grey"
MODIFIERS = tuple(_MODIFIER_WORDS.split())


def generated_scenario(
    n_objects: int = 60,
    min_sightings: int = 2000,
    *,
    seed: int = 7,
    size: float = 90.0,
    same_label_spacing: float = 9.0,
    visits_per_episode: int = 40,
) -> Scenario:
    """A random world of ``n_objects`` objects (same-label objects at least
    ``same_label_spacing`` metres apart) visited until at least ``min_sightings`` object
    mentions were made. Each visit stands near an object (0.7 m noise), records a detection
    list and, every other visit, a caption naming the object and maybe a neighbour."""
    rng = random.Random(seed)
    objects: dict[str, WorldObject] = {}
    while len(objects) < n_objects:
        label = LABELS[len(objects) % len(LABELS)]
        x, y = rng.uniform(0, size), rng.uniform(0, size)
        too_close = any(
            math.hypot(o.x - x, o.y - y) < (same_label_spacing if o.label == label else 1.0)
            for o in objects.values()
        )
        if not too_close:
            key = f"{label}_{len(objects)}"
            objects[key] = WorldObject(key, label, rng.choice(MODIFIERS), x, y)
    keys = sorted(objects)
    episodes: list[EpisodePlan] = []
    plan = EpisodePlan("episode 0")
    t, sightings, visits = 0.0, 0, 0
    while sightings < min_sightings:
        target = objects[rng.choice(keys)]
        x, y = target.x + rng.gauss(0, 0.7), target.y + rng.gauss(0, 0.7)
        detection = detection_step(objects, x, y, t)
        if detection is not None:
            plan.steps.append(detection)
            sightings += len(detection.objects)
            t += 5
        if visits % 2 == 0:
            near = [
                o
                for o in objects.values()
                if o.key != target.key and math.hypot(o.x - x, o.y - y) <= DETECTION_RANGE
            ]
            text = f"a {target.modifier} {target.label}"
            named: tuple[str, ...] = (target.key,)
            if near:
                other = near[0]
                text += f" near the {other.label}"
                named = (target.key, other.key)
            plan.steps.append(Step(text, "captions", x, y, t, named))
            sightings += len(named)
            t += 5
        if visits % 5 == 0:
            plan.steps.append(Step("battery ok", "battery", x, y, t, body_state=True))
            t += 5
        visits += 1
        t += 20
        if visits % visits_per_episode == 0:
            episodes.append(plan)
            plan = EpisodePlan(f"episode {len(episodes)}")
            t += 60
    if plan.steps:
        episodes.append(plan)
    return Scenario(objects, episodes)
