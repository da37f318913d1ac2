"""A generated multi-building scene with known regions, for the area forest's evaluation.

Three buildings (offices, a house, shops) and outdoor places (a food court, a park, a parking
lot), each region a rectangle with its own objects and activities. A simulated patrol walks the
regions in turn and writes captions and detections that mention objects, people and activities
but never a region's name (checked: ``region_words`` never occur in any text). Generic things
seen everywhere (doors, windows, lights, bins, people walking) make a share of every region's
observations, and corridors join the rooms.

Questions are implicit: a need ("where can I get coffee?") written by hand for the region that
meets it, two or three per region (``QUESTIONS``); the answer of a question is its region.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Region:
    """A named rectangle of the scene with what can be seen there."""

    name: str
    building: str
    box: tuple[float, float, float, float]
    """xmin, xmax, ymin, ymax"""
    things: tuple[str, ...]
    activities: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    """Words that name the region (never written in an observation)."""

    def contains(self, x: float, y: float) -> bool:
        x0, x1, y0, y1 = self.box
        return x0 <= x <= x1 and y0 <= y <= y1


@dataclass(frozen=True)
class Question:
    """An implicit question and the region that answers it."""

    text: str
    region: str


@dataclass(frozen=True)
class SceneObservation:
    """One generated observation and the region it was made in."""

    text: str
    x: float
    y: float
    timestamp: float
    layer: str
    region: str


@dataclass
class Scene:
    """Regions, observations in patrol order, and questions."""

    regions: list[Region]
    observations: list[SceneObservation] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def region_at(self, x: float, y: float) -> str | None:
        for region in self.regions:
            if region.contains(x, y):
                return region.name
        return None


def _room(name: str, building: str, x: float, y: float, w: float, h: float, **kw: object) -> Region:
    return Region(name, building, (x, x + w, y, y + h), **kw)  # type: ignore[arg-type]


GENERIC = (
    "a closed door",
    "a window with blinds",
    "a ceiling light",
    "a trash bin",
    "a person walking past",
    "a power outlet on the wall",
    "a smoke detector",
    "a plant in a pot",
)

CORRIDOR = (
    "a long hallway with doors on both sides",
    "an exit sign above a door",
    "a fire extinguisher on the wall",
    "a notice board with flyers",
    "an elevator door",
)

REGIONS: tuple[Region, ...] = (
    # Building A: offices, at (0, 0).
    _room(
        "office",
        "A",
        0,
        0,
        6,
        6,
        words=("office",),
        things=(
            "a desk with two monitors",
            "a laser printer",
            "an ergonomic chair",
            "a keyboard and a mouse",
            "a filing cabinet",
            "a stack of printed reports",
            "a laptop docking station",
            "a desk lamp",
            "a whiteboard with a to-do list",
        ),
        activities=(
            "a person typing on a keyboard",
            "someone answering emails at a desk",
            "a person collecting pages from the printer",
        ),
    ),
    _room(
        "meeting room",
        "A",
        6.5,
        0,
        6,
        6,
        words=("meeting room", "conference"),
        things=(
            "a long table with twelve chairs",
            "a ceiling projector",
            "a projection screen",
            "a speakerphone on the table",
            "a video conferencing camera",
            "a flip chart",
            "a wall display showing slides",
        ),
        activities=(
            "a group of people watching slides",
            "a person presenting to a group",
            "several people on a video call",
        ),
    ),
    _room(
        "kitchen",
        "A",
        13,
        0,
        6,
        6,
        words=("kitchen",),
        things=(
            "a coffee machine on the counter",
            "a kettle",
            "a microwave oven",
            "a fridge with magnets",
            "a sink with dirty plates",
            "a dishwasher",
            "a toaster",
            "mugs on a shelf",
            "a box of tea bags",
            "a bowl of fruit",
        ),
        activities=(
            "a person pouring coffee into a mug",
            "someone heating food in the microwave",
            "a person washing dishes",
        ),
    ),
    _room(
        "restroom",
        "A",
        19.5,
        0,
        6,
        6,
        words=("restroom", "bathroom", "toilet room", "wc"),
        things=(
            "a row of toilet stalls",
            "a urinal",
            "a hand dryer",
            "a paper towel dispenser",
            "a washbasin with a soap dispenser",
            "a mirror above the washbasins",
            "a toilet paper roll",
        ),
        activities=("a person drying hands",),
    ),
    Region("corridor A", "A", (0, 25.5, 6.5, 9.0), CORRIDOR),
    # Building B: a house, at (60, 0).
    _room(
        "living room",
        "B",
        60,
        0,
        6,
        6,
        words=("living room", "lounge"),
        things=(
            "a large sofa",
            "a television on the wall",
            "a coffee table with magazines",
            "a bookshelf with board games",
            "an armchair by the window",
            "a remote control",
            "a fireplace",
            "a rug",
        ),
        activities=("a family watching a film", "a person sitting on the couch"),
    ),
    _room(
        "bedroom",
        "B",
        66.5,
        0,
        6,
        6,
        words=("bedroom",),
        things=(
            "a double bed with pillows",
            "a wardrobe",
            "a nightstand with an alarm clock",
            "a reading lamp by the bed",
            "a chest of drawers",
            "folded blankets",
        ),
        activities=("a person sleeping", "someone making the bed"),
    ),
    _room(
        "laundry room",
        "B",
        73,
        0,
        6,
        6,
        words=("laundry",),
        things=(
            "a washing machine",
            "a tumble dryer",
            "an ironing board with an iron",
            "a basket of dirty clothes",
            "a drying rack with shirts",
            "a bottle of detergent",
        ),
        activities=("a person folding clothes", "someone ironing a shirt"),
    ),
    _room(
        "garage",
        "B",
        79.5,
        0,
        6,
        6,
        words=("garage", "workshop"),
        things=(
            "a workbench with tools",
            "a power drill",
            "a hammer on a pegboard",
            "a bicycle on a stand",
            "a toolbox",
            "a ladder",
            "cans of paint",
        ),
        activities=("a person repairing a bicycle", "someone sawing a plank"),
    ),
    Region("corridor B", "B", (60, 85.5, 6.5, 9.0), CORRIDOR),
    # Building C: shops, at (0, 60).
    _room(
        "pharmacy",
        "C",
        0,
        60,
        6,
        6,
        words=("pharmacy", "drugstore", "chemist"),
        things=(
            "shelves of medicine boxes",
            "a counter with a pharmacist",
            "painkillers and cough syrup",
            "a blood pressure monitor for sale",
            "a prescription drop-off window",
            "bandages",
        ),
        activities=("a customer handing over a prescription", "a pharmacist counting pills"),
    ),
    _room(
        "bookshop",
        "C",
        6.5,
        60,
        6,
        6,
        words=("bookshop", "bookstore", "library"),
        things=(
            "tall shelves of novels",
            "a table of bestsellers",
            "a rack of magazines",
            "children's picture books",
            "a cash register next to bookmarks",
            "a reading armchair",
        ),
        activities=("a person browsing paperbacks", "someone reading the back cover of a book"),
    ),
    _room(
        "electronics store",
        "C",
        13,
        60,
        6,
        6,
        words=("electronics store",),
        things=(
            "a wall of smartphones",
            "phone chargers and cables",
            "headphones on display",
            "laptops on a counter",
            "a rack of batteries",
            "smart watches in a glass case",
        ),
        activities=("a customer testing headphones", "a clerk demonstrating a phone"),
    ),
    _room(
        "gym",
        "C",
        19.5,
        60,
        6,
        6,
        words=("gym", "fitness"),
        things=(
            "a rack of dumbbells",
            "two treadmills",
            "a bench press",
            "yoga mats",
            "an exercise bike",
            "a kettlebell",
            "a mirror wall",
        ),
        activities=("a person lifting weights", "someone running on a treadmill"),
    ),
    Region("corridor C", "C", (0, 25.5, 66.5, 69.0), CORRIDOR),
    # Outdoors.
    Region(
        "food court",
        "outdoor",
        (60, 74, 60, 70),
        words=("food court", "canteen", "cafeteria"),
        things=(
            "a noodle stall",
            "a pizza counter",
            "trays on long tables",
            "a drinks kiosk",
            "a burger stand with a menu board",
            "people eating at shared tables",
            "a queue at a sandwich stall",
        ),
        activities=("a person carrying a tray of food", "a cook serving noodles"),
    ),
    Region(
        "park",
        "outdoor",
        (100, 120, 10, 30),
        words=("park",),
        things=(
            "tall oak trees",
            "a wooden bench",
            "a fountain",
            "a lawn of grass",
            "a flower bed",
            "a gravel path",
            "ducks at a pond",
        ),
        activities=(
            "a person walking a dog",
            "children playing on the grass",
            "someone jogging on the path",
        ),
    ),
    Region(
        "parking lot",
        "outdoor",
        (100, 116, 60, 72),
        words=("parking", "car park"),
        things=(
            "rows of parked cars",
            "a pay-and-display ticket machine",
            "an electric car charging station",
            "painted bays for cars",
            "a motorcycle",
            "a barrier at the exit",
        ),
        activities=("a person locking a car", "a car reversing into a space"),
    ),
)

QUESTIONS: tuple[Question, ...] = (
    Question("where can I print a document?", "office"),
    Question("where could I sit at a desk and answer emails?", "office"),
    Question("where can we hold a presentation for a group?", "meeting room"),
    Question("where could the team have a video call together?", "meeting room"),
    Question("where can I get coffee?", "kitchen"),
    Question("where could I heat up my lunch?", "kitchen"),
    Question("where can I make myself a cup of tea?", "kitchen"),
    Question("I need to use the toilet, where should I go?", "restroom"),
    Question("where can I dry my hands?", "restroom"),
    Question("where could I watch a film on the couch?", "living room"),
    Question("where can I warm up by the fire?", "living room"),
    Question("where can I take a nap?", "bedroom"),
    Question("where would I find a clean pillow?", "bedroom"),
    Question("where can I wash my clothes?", "laundry room"),
    Question("where could I iron a shirt?", "laundry room"),
    Question("where can I find a hammer or a drill?", "garage"),
    Question("where could I fix my bike?", "garage"),
    Question("where can I buy something for a headache?", "pharmacy"),
    Question("where could I get my prescription filled?", "pharmacy"),
    Question("where can I buy a novel?", "bookshop"),
    Question("where could I find a gift for someone who loves reading?", "bookshop"),
    Question("where can I buy a new phone charger?", "electronics store"),
    Question("where could I get a pair of headphones?", "electronics store"),
    Question("where can I lift weights?", "gym"),
    Question("where could I go for a run indoors?", "gym"),
    Question("where can I grab a quick meal?", "food court"),
    Question("where could I buy a slice of pizza?", "food court"),
    Question("where can I sit on a bench under the trees?", "park"),
    Question("where could I walk my dog on the grass?", "park"),
    Question("where can I see a fountain?", "park"),
    Question("where did people leave their cars?", "parking lot"),
    Question("where could I charge an electric car?", "parking lot"),
    Question("where can I pay for parking my car?", "parking lot"),
)

MARGIN = 0.6
"""Metres between a region's walls and the positions observed in it."""


def generate_scene(
    per_region: int = 30, *, seed: int = 0, start: float = 1_000_000.0, sites: int = 1
) -> Scene:
    """The scene with ``per_region`` observations in every region (corridors: half), taken
    along a patrol that visits the regions in turn, two passes. ``sites`` > 1 repeats the whole
    site every SITE_SPACING metres along x (regions of copy k are named "kitchen #k"; the
    questions are the first site's), for timing builds over larger worlds.

    Raises:
        ValueError: per_region or sites < 1.
    """
    if per_region < 1 or sites < 1:
        raise ValueError(f"per_region and sites must be >= 1, got {per_region}, {sites}")
    rng = random.Random(seed)
    regions = [_shifted(region, k) for k in range(sites) for region in REGIONS]
    scene = Scene(regions, questions=list(QUESTIONS))
    t = start
    for half in range(2):
        for region in regions:
            count = per_region // 2 if region.name.startswith("corridor") else per_region
            count = count // 2 + (count % 2 if half == 0 else 0)
            for _ in range(count):
                x, y = _position(rng, region)
                text, layer = _text(rng, region)
                scene.observations.append(SceneObservation(text, x, y, t, layer, region.name))
                t += rng.uniform(1.0, 4.0)
            t += 30.0
    check_no_region_names(scene)
    return scene


SITE_SPACING = 300.0
"""Metres between the copies of the site (more than the largest default area)."""


def _shifted(region: Region, copy: int) -> Region:
    if copy == 0:
        return region
    x0, x1, y0, y1 = region.box
    dx = copy * SITE_SPACING
    return Region(
        f"{region.name} #{copy + 1}",
        region.building,
        (x0 + dx, x1 + dx, y0, y1),
        region.things,
        region.activities,
        region.words,
    )


def _position(rng: random.Random, region: Region) -> tuple[float, float]:
    x0, x1, y0, y1 = region.box
    margin = min(MARGIN, (x1 - x0) / 4, (y1 - y0) / 4)
    return rng.uniform(x0 + margin, x1 - margin), rng.uniform(y0 + margin, y1 - margin)


def _text(rng: random.Random, region: Region) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.2:
        return rng.choice(GENERIC), "captions"
    if roll < 0.45 and len(region.things) >= 2:
        picked = rng.sample(region.things, k=min(3, len(region.things)))
        labels = [_label(thing) for thing in picked]
        if rng.random() < 0.5:
            labels.append(_label(rng.choice(GENERIC)))
        return "detected: " + ", ".join(labels), "detections"
    if roll < 0.6 and region.activities:
        return rng.choice(region.activities), "captions"
    return rng.choice(region.things), "captions"


def _label(thing: str) -> str:
    """A detector's label for a thing: no article, no 'on the counter' part."""
    head = _PLACE_PART.split(thing)[0]
    words = head.split()
    if len(words) > 1 and words[0] in ("a", "an", "the", "two", "tall", "several"):
        words = words[1:]
    words = words[:4]
    while len(words) > 1 and words[-1] in ("a", "an", "and", "the", "of", "with"):
        words.pop()
    return " ".join(words)


_PLACE_PART = re.compile(r" (?:on|with|at|in|by|for|above|next to|under|showing) ")


def region_words() -> dict[str, tuple[str, ...]]:
    """Words naming each region (with its name)."""
    return {r.name: (r.name, *r.words) for r in REGIONS if not r.name.startswith("corridor")}


def check_no_region_names(scene: Scene) -> None:
    """Raise ValueError when an observation's text names a region."""
    for observation in scene.observations:
        lowered = observation.text.lower()
        for name, words in region_words().items():
            for word in words:
                if re.search(rf"\b{re.escape(word)}\b", lowered):
                    raise ValueError(f"observation {observation.text!r} names region {name!r}")


def questions_for(scene: Scene) -> Iterator[Question]:
    """The scene's questions whose region it holds."""
    names = {r.name for r in scene.regions}
    return (q for q in scene.questions if q.region in names)
