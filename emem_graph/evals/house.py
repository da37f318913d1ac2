"""The demo's simulated house: its rooms, the things in them, the patrol route and the morning
it is walked. The demo (demo.py) and the patrol bag (patrol_bag.py) both show this world."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

START_TIME = datetime(2026, 11, 22, 8, 0, tzinfo=timezone.utc).timestamp()
"""The patrol's simulated morning."""


@dataclass(frozen=True)
class Thing:
    name: str
    kind: str
    label: str
    """What the object detector calls it."""
    x: float
    y: float
    caption: str


ROOMS: dict[str, tuple[float, float]] = {
    "kitchen": (2.5, 2.5),
    "hallway": (10.0, 1.0),
    "living room": (18.5, 4.0),
    "office": (8.5, 8.5),
}
THINGS = [
    Thing(
        "coffee machine",
        "appliance",
        "coffee machine",
        1.0,
        4.5,
        "a silver coffee machine on the counter",
    ),
    Thing(
        "fridge", "appliance", "refrigerator", 4.5, 4.5, "a tall white fridge next to the window"
    ),
    Thing("red cup", "object", "cup", 2.0, 1.0, "a red cup left on the kitchen table"),
    Thing("shoe rack", "furniture", "shoe rack", 9.0, 0.3, "a shoe rack with two pairs of boots"),
    Thing("front door", "door", "door", 12.0, 0.0, "the front door, closed and locked"),
    Thing("sofa", "furniture", "sofa", 18.0, 6.5, "a grey sofa with a blanket on it"),
    Thing("red chair", "furniture", "chair", 20.5, 2.0, "a red chair by the balcony door"),
    Thing("television", "appliance", "tv", 16.5, 6.0, "a television showing the news"),
    Thing("desk", "furniture", "desk", 8.0, 9.5, "a desk with a laptop and a stack of papers"),
    Thing("plant", "plant", "potted plant", 10.5, 10.5, "a potted plant with yellow leaves"),
]
ROUTE = ["kitchen", "hallway", "living room", "hallway", "office", "hallway", "kitchen"]
VIEW_RADIUS = 3.5
