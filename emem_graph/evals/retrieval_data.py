"""Hand-written evaluation data of ``retrieval-eval``: what a person told the robot in many
places, and later requests that paraphrase it.

Each :class:`Pool` is one place (a kitchen counter, a garage workbench, a lab bench, ...) with
about twenty stored memories that are near-duplicates of each other: instructions and facts of
the same topic and vocabulary (five mugs, four cutting boards), so that finding the right one is
hard. Every plain memory comes with two requests for it alone: a *single* request that
paraphrases it in other words (synonyms, another order, an indirect question: "Which cup must I
never hand to visitors?"), and a *shared* one that keeps a few of its words, as people often ask
("Is the blue mug Anna's?"). A pool also names a few *two-part* requests
(two of its memories in one sentence or two), and one *timed* group: three memories on the same
subject told at different times ("this morning", "yesterday", "last week"), each asked for with
its time word, so that only the time decides.

The memory's clock is fixed at :data:`NOW` (Wednesday 2026-03-18 16:00 UTC); every memory's
timestamp is an age before it, so "yesterday" (Tuesday, the calendar day before) and "this
morning" (Wednesday before noon) are well defined. Timed memories sit at the ages of
:data:`WHEN`; plain memories are spread over the last ten days.

Expected answers are the stored texts themselves (``Request.expected``); every stored text is
unique across all pools.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

NOW = datetime(2026, 3, 18, 16, 0, tzinfo=timezone.utc).timestamp()
"""The memory's clock during the evaluation: Wednesday 2026-03-18 16:00 UTC."""

HOUR = 3600.0
DAY = 24 * HOUR

WHEN: dict[str, float] = {
    "hour": 1.0 * HOUR,  # today 15:00: "an hour ago", "just now"
    "afternoon": 2.5 * HOUR,  # today 13:30: "this afternoon", "after lunch"
    "lunch": 4.75 * HOUR,  # today 11:15: "before lunch"
    "morning": 7.5 * HOUR,  # today 08:30: "this morning"
    "yesterday": 26.0 * HOUR,  # Tuesday 14:00: "yesterday"
    "evening": 20.0 * HOUR,  # Tuesday 20:00: "yesterday evening", "last night"
    "two_days": 54.0 * HOUR,  # Monday 10:00: "two days ago", "on Monday"
    "last_week": 8 * DAY + 5 * HOUR,  # Tuesday 2026-03-10 11:00: "last week"
    "last_month": 30 * DAY + 2 * HOUR,  # 2026-02-16 14:00: "last month"
}
"""Age (seconds before NOW) of a timed memory, by the time word its request uses."""


@dataclass(frozen=True)
class Stored:
    """One memory as stored: its text and its age in seconds before :data:`NOW`."""

    text: str
    age: float

    @property
    def timestamp(self) -> float:
        return NOW - self.age


@dataclass(frozen=True)
class Request:
    """A request and the stored text(s) it asks for."""

    text: str
    expected: tuple[str, ...]
    kind: str
    """"single" (reworded), "shared" (keeps some words), "pair" or "timed"."""


@dataclass(frozen=True)
class Pool:
    """A place and what was told there."""

    place: str
    x: float
    y: float
    stored: tuple[Stored, ...]
    requests: tuple[Request, ...]

    def of_kind(self, kind: str) -> list[Request]:
        return [r for r in self.requests if r.kind == kind]


# --- the raw data: (key, stored text, single request) / (when, stored text, timed request) /
# (key, key, two-part request) ---------------------------------------------------------------

_Plain = tuple[str, str, str]
_Timed = tuple[str, str, str]
_Pair = tuple[str, str, str]

_RAW: list[tuple[str, float, float, list[_Plain], list[_Timed], list[_Pair]]] = [
    (
        "kitchen counter",
        2.0,
        1.5,
        [
            (
                "blue_mug",
                "The blue mug on the left shelf is Anna's, don't use it for guests.",
                "Which cup must I never hand to visitors?",
            ),
            (
                "green_mug",
                "The green mug with the chipped handle can go to the recycling, nobody drinks "
                "from it anymore.",
                "What cup with a broken grip may I throw out?",
            ),
            (
                "red_mugs",
                "Use the red mugs on the right shelf when people come over.",
                "Which cups are meant for company?",
            ),
            (
                "kettle",
                "Only fill the kettle up to the second line or it boils over.",
                "How much water should go into the water boiler?",
            ),
            (
                "descale",
                "Descale the coffee machine on the first Sunday of every month.",
                "When does the espresso maker need its limescale treatment?",
            ),
            (
                "beans",
                "The coffee beans live in the black tin next to the toaster, not in the fridge.",
                "Where are the beans for brewing kept?",
            ),
            (
                "knives",
                "Sharp knives go back in the wooden block, never into the dishwasher.",
                "Where do the blades belong after washing, since the machine is off limits?",
            ),
            (
                "boards",
                "The red cutting board is for raw meat only, the green one is for vegetables.",
                "Which chopping board do I take for uncooked chicken?",
            ),
            (
                "toaster",
                "Unplug the toaster after using it, its switch sometimes sticks.",
                "What should I do with the bread grill once I'm done, given the faulty lever?",
            ),
            (
                "spices",
                "The spice rack is sorted alphabetically, so put each jar back in its slot.",
                "In what order are the seasonings arranged?",
            ),
            (
                "sugar",
                "Keep the sugar jar closed, otherwise ants get into it.",
                "Why does the sweetener container have to stay shut?",
            ),
            (
                "teapot",
                "The glass teapot must not go on the stove, only pour hot water into it.",
                "Can I heat the see-through tea pot on the hob?",
            ),
            (
                "rack",
                "Plates dry in the rack beside the sink and cups upside down on the tea towel.",
                "Where do washed dishes drain?",
            ),
            (
                "breadbox",
                "Bread is kept in the wooden bread box, never in the refrigerator.",
                "Where should the loaf be stored?",
            ),
            (
                "cloth",
                "Wipe the counter with the blue cloth; the yellow one belongs to the bathroom.",
                "Which rag is for cleaning the worktop?",
            ),
            (
                "microwave",
                "Never put the metal bowls in the microwave, take the glass ones instead.",
                "What kind of dish is safe for reheating leftovers?",
            ),
        ],
        [
            (
                "last_week",
                "Anna takes her coffee with two sugars.",
                "How did I say Anna likes her coffee last week?",
            ),
            (
                "yesterday",
                "Anna drinks her coffee black with nothing in it.",
                "Yesterday, what did I tell you about Anna's coffee?",
            ),
            (
                "morning",
                "Anna wants oat milk in her coffee from now on.",
                "What was this morning's note about how Anna has her coffee?",
            ),
        ],
        [
            (
                "blue_mug",
                "kettle",
                "Which cup is off limits for visitors, and how full can the water boiler get?",
            ),
            (
                "knives",
                "boards",
                "Where do the blades go after use? Then tell me which board is for uncooked "
                "poultry.",
            ),
            (
                "sugar",
                "breadbox",
                "Why must the sweetener stay sealed, and also where does the loaf go?",
            ),
        ],
    ),
    (
        "refrigerator",
        3.5,
        1.0,
        [
            (
                "oat_milk",
                "The oat milk on the top shelf is for Ben, he can't have dairy.",
                "Whose plant-based drink is that up high, and why?",
            ),
            (
                "leftovers",
                "Leftovers older than three days get thrown away on Fridays.",
                "When do I bin stale remains of meals?",
            ),
            (
                "labels",
                "Label every container in the fridge with the date it was cooked.",
                "What must be written on each tub in the cooler?",
            ),
            (
                "insulin",
                "Grandpa's insulin pens are in the door compartment, keep them there.",
                "Where are the diabetes injections stored?",
            ),
            (
                "raw_meat",
                "Raw meat always goes on the bottom shelf so nothing drips onto other food.",
                "On which level should uncooked steak sit?",
            ),
            (
                "eggs",
                "Eggs stay in their carton, not in the egg tray on the door.",
                "Should the eggs be moved into the door holder?",
            ),
            (
                "cheese",
                "Wrap the cheese in wax paper, plastic wrap makes it sweat.",
                "How do I cover the cheddar properly?",
            ),
            (
                "butter",
                "One block of butter stays out of the fridge in the dish so it's soft for "
                "breakfast.",
                "Why is there a stick of butter left on the counter?",
            ),
            (
                "temperature",
                "The fridge should be set to four degrees; tell me if the display shows more.",
                "What temperature is the cooler supposed to keep?",
            ),
            (
                "vegetable_drawer",
                "Vegetables go in the lower drawer and fruit in the upper one.",
                "Which crisper is for apples and which for carrots?",
            ),
            (
                "beer",
                "The beer in the back is for the party on Saturday, don't offer it to anyone "
                "before then.",
                "Can I serve the bottles of lager behind everything?",
            ),
            (
                "defrost",
                "Thaw frozen fish in the fridge overnight, never on the counter.",
                "How should I defrost seafood?",
            ),
            (
                "door_seal",
                "The fridge door doesn't close by itself, push it until it clicks.",
                "Why do I have to press on the cooler after shutting it?",
            ),
            (
                "jam",
                "Opened jam jars belong on the middle shelf, unopened ones in the pantry.",
                "Where do I put preserves once the lid has been broken?",
            ),
            (
                "baby_food",
                "Baby food pouches must be used within two days of opening.",
                "How long does an opened infant puree keep?",
            ),
            (
                "water_filter",
                "The filter jug needs a new cartridge every four weeks.",
                "How often should the pitcher's filter be swapped?",
            ),
        ],
        [
            (
                "two_days",
                "The lasagna in the glass dish is for Clara's lunch.",
                "Two days ago, who did I say the dish in the fridge was for?",
            ),
            (
                "yesterday",
                "The lasagna in the glass dish is for the neighbours, bring it over.",
                "What did I tell you yesterday about the lasagna?",
            ),
            (
                "hour",
                "The lasagna in the glass dish can be eaten by anyone now.",
                "What did I just say an hour ago about the baked pasta?",
            ),
        ],
        [
            (
                "insulin",
                "raw_meat",
                "Where are the diabetes pens kept, and which shelf takes uncooked steak?",
            ),
            (
                "cheese",
                "butter",
                "How should the cheddar be covered? And why is some butter left out?",
            ),
            (
                "temperature",
                "water_filter",
                "What should the cooler's thermostat read, and then how often is the jug's "
                "cartridge changed?",
            ),
        ],
    ),
    (
        "front door",
        0.0,
        0.0,
        [
            (
                "keys",
                "House keys hang on the hook to the left of the door, car keys on the right.",
                "Where do I find the keys for the house?",
            ),
            (
                "lock",
                "Always turn the deadbolt twice when locking the front door at night.",
                "How many turns does the bolt need before bed?",
            ),
            (
                "parcels",
                "Parcels for Mr. Okafor next door can be accepted and put in the hall cupboard.",
                "What do I do with packages meant for the neighbour?",
            ),
            (
                "shoes",
                "Shoes come off at the door and go on the rack, the floor was just sanded.",
                "Why should visitors leave their footwear at the entrance?",
            ),
            (
                "umbrella",
                "Wet umbrellas go in the metal stand, not leaning against the wall.",
                "Where should a dripping parasol be put?",
            ),
            (
                "doorbell",
                "The doorbell battery is low; if nobody answers, visitors knock instead.",
                "Why might the chime not ring when someone arrives?",
            ),
            (
                "cat_flap",
                "Keep the front door shut, the cat is not allowed outside.",
                "Why must the entrance stay closed all the time?",
            ),
            (
                "mail",
                "Put the mail on the small table by the door, bills on top.",
                "Where do letters go when they arrive?",
            ),
            (
                "salesmen",
                "Do not open the door for salespeople or anyone collecting donations.",
                "Should I let in someone selling things?",
            ),
            (
                "spare_key",
                "The spare key is under the blue flower pot; only tell family.",
                "Where is the extra key hidden?",
            ),
            (
                "alarm",
                "The alarm code is entered on the panel inside the door within thirty seconds.",
                "How long do I have to disarm the security system?",
            ),
            (
                "mat",
                "Shake out the doormat outside every Saturday.",
                "How often does the rug at the entrance get cleaned?",
            ),
            (
                "coats",
                "Guests' coats go in the hall closet, family coats on the hooks.",
                "Where should visitors' jackets hang?",
            ),
            (
                "dog_leash",
                "The dog's leash hangs on the door handle, put it back after walks.",
                "Where does the lead for the pet belong?",
            ),
            (
                "light",
                "Leave the porch light on until everyone is home.",
                "When may the outside lamp be switched off?",
            ),
            (
                "delivery_code",
                "Grocery deliveries need the code 4471 read out at the door.",
                "What number does the supermarket courier need?",
            ),
        ],
        [
            (
                "last_week",
                "The window cleaner comes on Thursday at nine.",
                "Last week, when did I say the window cleaner would come?",
            ),
            (
                "evening",
                "The window cleaner moved his visit to Friday afternoon.",
                "What did I tell you yesterday evening about the window cleaner?",
            ),
            (
                "lunch",
                "The window cleaner cancelled and will call again to arrange a date.",
                "Before lunch today, what did I mention about the window washer?",
            ),
        ],
        [
            (
                "keys",
                "spare_key",
                "Where are the house keys usually, and where is the extra one hidden?",
            ),
            (
                "umbrella",
                "coats",
                "Where should a dripping parasol go? Also, where do visitors' jackets hang?",
            ),
            (
                "lock",
                "light",
                "How many turns does the bolt need at night, and when can the outside lamp "
                "be switched off?",
            ),
        ],
    ),
    (
        "garage workbench",
        -6.0,
        4.0,
        [
            (
                "drill",
                "The cordless drill's battery charges on the left shelf; put it back after use.",
                "Where does the power tool's battery get recharged?",
            ),
            (
                "screws",
                "Wood screws are in the red drawers, machine screws in the grey ones.",
                "Which drawers hold the fasteners for timber?",
            ),
            (
                "saw",
                "Nobody under sixteen is allowed to use the circular saw.",
                "Can the kids operate the spinning blade cutter?",
            ),
            (
                "goggles",
                "Wear the safety goggles whenever the grinder is running.",
                "What eye protection rule applies to the angle grinder?",
            ),
            (
                "paint",
                "Old paint cans go to the recycling centre, never in the household bin.",
                "How do I dispose of leftover tins of paint?",
            ),
            (
                "extension",
                "The orange extension cord is for outdoor use, the white one stays inside.",
                "Which cable should I take into the garden?",
            ),
            (
                "vice",
                "Loosen the vice before leaving so the jaws don't wear out.",
                "Why should the clamp on the bench be opened at the end of the day?",
            ),
            (
                "hammer",
                "The small claw hammer is Leo's, please don't lend it out.",
                "Whose little nail hammer must stay here?",
            ),
            (
                "glue",
                "Wood glue needs a full day to set; don't move clamped pieces before then.",
                "How long must glued timber stay clamped?",
            ),
            (
                "sawdust",
                "Vacuum the sawdust off the bench every evening, it clogs the drawers.",
                "How often do the wood shavings need cleaning up?",
            ),
            (
                "gas_can",
                "The petrol can for the lawnmower stays on the floor by the door, away from heat.",
                "Where is the fuel canister kept?",
            ),
            (
                "tape_measure",
                "The long tape measure is in the top drawer, the short one hangs on the pegboard.",
                "Where's the longer measuring tape?",
            ),
            (
                "bike",
                "Leo's bike needs air in the back tyre before Saturday.",
                "What does the boy's bicycle need before the weekend?",
            ),
            (
                "sandpaper",
                "Sandpaper is sorted by grit in the folder, coarse at the front.",
                "How are the abrasive sheets organised?",
            ),
            (
                "soldering",
                "Switch off the soldering station at the wall before leaving the garage.",
                "What should be turned off at the socket when I leave?",
            ),
            (
                "car",
                "Park the car at least a metre from the bench so the door can open.",
                "How far away from the worktable should the vehicle stand?",
            ),
        ],
        [
            (
                "last_month",
                "The ladder was lent to the neighbour across the road.",
                "Last month, what did I tell you about the ladder?",
            ),
            (
                "two_days",
                "The ladder is hanging on the garage wall again.",
                "What did I say about the ladder two days ago?",
            ),
            (
                "hour",
                "The ladder is leaning against the shed for the gutter job.",
                "Where did I say the ladder was an hour ago?",
            ),
        ],
        [
            (
                "drill",
                "goggles",
                "Where does the power tool's battery charge, and what eye protection do I need "
                "for the grinder?",
            ),
            (
                "screws",
                "tape_measure",
                "Which drawers hold timber fasteners? Then where is the longer measuring tape?",
            ),
            (
                "paint",
                "gas_can",
                "How should old tins of paint be disposed of, and where is the fuel canister kept?",
            ),
        ],
    ),
    (
        "lab bench",
        12.0,
        -3.0,
        [
            (
                "pipettes",
                "The 10 microlitre pipettes are calibrated every two months; don't adjust them.",
                "Can I recalibrate the small volume pipettors myself?",
            ),
            (
                "gloves",
                "Nitrile gloves must be worn when handling the cell cultures.",
                "What hand protection is needed for the cultures?",
            ),
            (
                "waste",
                "Sharps go in the yellow bin, never in the ordinary waste.",
                "Where are needles and blades discarded?",
            ),
            (
                "centrifuge",
                "Balance the centrifuge before every run, opposite tubes must weigh the same.",
                "What has to be done before spinning samples?",
            ),
            (
                "freezer",
                "Samples in the minus eighty freezer belong to Dr. Patel; ask before moving them.",
                "Whose specimens are in the ultra-cold storage?",
            ),
            (
                "ethanol",
                "Wipe the bench with seventy percent ethanol at the start and end of the day.",
                "How is the work surface disinfected?",
            ),
            (
                "fume_hood",
                "Anything with chloroform stays inside the fume hood.",
                "Where must solvents like trichloromethane be handled?",
            ),
            (
                "notebook",
                "Every experiment gets written in the lab notebook with the date and initials.",
                "What must be recorded for each trial?",
            ),
            (
                "reagents",
                "Opened reagents are labelled with the opening date and kept for six months.",
                "How long do chemicals stay usable after being opened?",
            ),
            (
                "microscope",
                "Cover the microscope with its dust sheet when you're finished.",
                "What goes over the scope at the end of work?",
            ),
            (
                "eyewash",
                "The eyewash station is tested every Monday; report if the water is brown.",
                "How often is the emergency eye rinse checked?",
            ),
            (
                "buffers",
                "Buffer stocks are in the cold room on shelf B, not in the bench fridge.",
                "Where are the prepared solutions stored?",
            ),
            (
                "glassware",
                "Dirty glassware goes in the grey tub by the sink for the washing service.",
                "Where do used beakers go?",
            ),
            (
                "balance",
                "Brush the analytical balance clean after weighing powders.",
                "What should I do with the scale after measuring out powder?",
            ),
            (
                "autoclave",
                "The autoclave runs only on Tuesdays and Thursdays; book a slot on the sheet.",
                "When can I sterilise equipment?",
            ),
            (
                "food",
                "No food or drinks on the bench, lunch is eaten in the break room.",
                "May I have a coffee at my workstation?",
            ),
        ],
        [
            (
                "last_week",
                "The group meeting is in room 204 on Monday.",
                "Where did I say last week the group meeting would be?",
            ),
            (
                "yesterday",
                "The group meeting moved to the seminar room downstairs.",
                "What did I tell you yesterday about the group meeting?",
            ),
            (
                "afternoon",
                "The group meeting is online only this time.",
                "What did I just say this afternoon about the group meeting?",
            ),
        ],
        [
            (
                "gloves",
                "waste",
                "What hand protection do the cultures need, and where do needles get thrown away?",
            ),
            (
                "centrifuge",
                "autoclave",
                "What must I check before spinning samples? Also, on which days can I "
                "sterilise things?",
            ),
            (
                "freezer",
                "buffers",
                "Whose specimens are in the ultra-cold storage, and where are the prepared "
                "solutions kept?",
            ),
        ],
    ),
    (
        "office desk",
        8.0,
        6.0,
        [
            (
                "laptop",
                "The laptop charger is in the second drawer, the spare one in the cabinet.",
                "Where can I find the notebook computer's power adapter?",
            ),
            (
                "documents",
                "Signed contracts go in the grey folder, unsigned ones stay in the tray.",
                "Where do agreements go once they have been signed?",
            ),
            (
                "monitor",
                "Turn the monitor off at the button, not by pulling the plug.",
                "How should the screen be switched off?",
            ),
            (
                "chair",
                "Don't lower the desk chair, Maria needs it at that height for her back.",
                "Why should the office seat stay as high as it is?",
            ),
            (
                "printer",
                "The printer only takes A4 paper; the letter size jams it.",
                "What paper format can the printer handle?",
            ),
            (
                "passwords",
                "Never read out the sticky note with the passwords under the keyboard.",
                "What must stay secret beneath the keyboard?",
            ),
            (
                "plant",
                "The cactus on the desk only needs water once a month.",
                "How often does the spiky plant on the workspace get watered?",
            ),
            (
                "calls",
                "Maria doesn't take calls between two and four, she is in meetings.",
                "When should I not put the phone through to Maria?",
            ),
            (
                "shredder",
                "Anything with bank details goes through the shredder, not in the paper bin.",
                "How do I get rid of papers with account numbers?",
            ),
            (
                "stapler",
                "The heavy stapler is for thick reports, use the small one for letters.",
                "Which stapling device is for big documents?",
            ),
            (
                "cables",
                "Keep the cables behind the desk tied together with the velcro strap.",
                "How should the wires at the back be kept tidy?",
            ),
            (
                "headphones",
                "The noise-cancelling headphones go back in their case after use.",
                "Where should the headset be stored?",
            ),
            (
                "drawer_lock",
                "The bottom drawer stays locked, the key is on Maria's key ring.",
                "Who has the key for the lowest drawer?",
            ),
            (
                "coffee_cup",
                "No cups on the left side of the desk, that's where the laptop sits.",
                "Where am I not allowed to put drinks on the desk?",
            ),
            (
                "backup",
                "Plug in the external drive on Fridays so the backup can run.",
                "When should the backup disk be connected?",
            ),
            (
                "webcam",
                "Close the webcam cover when no video call is running.",
                "What should I do with the camera shutter after a meeting?",
            ),
        ],
        [
            (
                "last_week",
                "The tax papers have to be sent by the end of April.",
                "Last week, what deadline did I give you for the tax papers?",
            ),
            (
                "yesterday",
                "The tax papers are waiting for the accountant's signature.",
                "What did I mention yesterday about the tax documents?",
            ),
            (
                "morning",
                "The tax papers were posted and can be filed away.",
                "This morning, what did I say about the tax forms?",
            ),
        ],
        [
            (
                "laptop",
                "backup",
                "Where is the computer's power adapter, and when do I plug in the backup disk?",
            ),
            (
                "documents",
                "shredder",
                "Where do signed agreements go? Then how do I get rid of papers with bank numbers?",
            ),
            (
                "chair",
                "calls",
                "Why must the office seat stay high, and when should Maria not get phone calls?",
            ),
        ],
    ),
    (
        "bathroom sink",
        5.0,
        9.0,
        [
            (
                "towels",
                "The white towels are for guests, family uses the grey ones.",
                "Which bath linen do we keep for visitors?",
            ),
            (
                "pills",
                "Grandpa's heart pills are in the mirror cabinet, top shelf, and must stay out "
                "of the children's reach.",
                "Where is the cardiac medication kept, away from the kids?",
            ),
            (
                "toothbrush",
                "Toothbrush heads are replaced every three months; spares are in the drawer.",
                "How often do we change the brushes for teeth?",
            ),
            (
                "razor",
                "Ben's razor blades are in the locked box under the sink.",
                "Where does Ben keep his shaving blades?",
            ),
            (
                "drain",
                "The sink drains slowly; pour the enzyme cleaner in on Sunday evenings.",
                "What is done about the sluggish plughole each week?",
            ),
            (
                "hair_dryer",
                "Unplug the hair dryer after use and never leave it near the basin.",
                "What safety rule applies to the blow dryer?",
            ),
            (
                "soap",
                "Refill the hand soap from the big bottle under the sink.",
                "Where is the refill for the hand wash?",
            ),
            (
                "mirror",
                "Clean the mirror with the microfibre cloth, paper towels leave streaks.",
                "What should I use to wipe the looking glass?",
            ),
            (
                "bath_mat",
                "Hang the bath mat over the tub edge to dry after every shower.",
                "Where does the mat go after someone has showered?",
            ),
            (
                "contact_lenses",
                "Clara's contact lens solution is the green bottle; don't move it.",
                "Which bottle is the lens liquid?",
            ),
            (
                "toilet_paper",
                "Toilet paper is stored in the basket beside the toilet, order more when "
                "fewer than four rolls are left.",
                "When do I need to buy more loo rolls?",
            ),
            (
                "fan",
                "Run the extractor fan for twenty minutes after a shower against mould.",
                "How long should the ventilation run after bathing?",
            ),
            (
                "makeup",
                "The makeup bag on the shelf is Clara's, don't tidy it away.",
                "Whose cosmetics pouch should be left alone?",
            ),
            (
                "thermometer",
                "The digital thermometer is in the first-aid box under the sink.",
                "Where can I find something to take a temperature?",
            ),
            (
                "bleach",
                "Bleach is never mixed with other cleaners; it stays on the top shelf.",
                "Where is the chlorine cleaner, and what must I not do with it?",
            ),
            (
                "faucet",
                "The hot tap gets very hot; turn it only halfway when the kids wash.",
                "How far can the warm water be opened for the children?",
            ),
        ],
        [
            (
                "two_days",
                "The plumber will come on Friday at nine to fix the leak.",
                "What did I tell you about the plumber two days ago?",
            ),
            (
                "evening",
                "The plumber can only come next Tuesday.",
                "Last night, what did I say about the plumber's visit?",
            ),
            (
                "hour",
                "The plumber is on his way and should be here soon.",
                "What did I say about the plumber just an hour ago?",
            ),
        ],
        [
            (
                "pills",
                "thermometer",
                "Where are the heart tablets kept, and where is the thing for measuring fever?",
            ),
            (
                "towels",
                "bath_mat",
                "Which bath linen is for visitors? And where does the mat dry after a shower?",
            ),
            (
                "drain",
                "fan",
                "How is the slow plughole handled weekly, and how long does the ventilation "
                "run after bathing?",
            ),
        ],
    ),
    (
        "bedroom wardrobe",
        10.0,
        12.0,
        [
            (
                "suits",
                "Ben's suits hang on the left side and must not be folded.",
                "How are Ben's formal jackets stored?",
            ),
            (
                "wool",
                "Wool jumpers are folded on the top shelf with the cedar blocks against moths.",
                "Where do the knitted sweaters go?",
            ),
            (
                "dress",
                "Clara's wedding dress stays in its bag at the back, nobody touches it.",
                "What must be left alone in the far corner of the closet?",
            ),
            (
                "ironing",
                "Shirts are ironed on a low setting, the collars scorch easily.",
                "How hot should the iron be for blouses and tops?",
            ),
            (
                "socks",
                "Socks are paired before they go into the second drawer.",
                "What has to happen to stockings before they're put away?",
            ),
            (
                "shoes_box",
                "Dress shoes go back into their boxes on the wardrobe floor.",
                "Where do the smart leather shoes live?",
            ),
            (
                "winter",
                "Winter coats are in vacuum bags under the bed until November.",
                "Where are the heavy jackets for the cold season stored?",
            ),
            (
                "donation",
                "The bag by the wardrobe door is clothing for the charity shop.",
                "What is the sack next to the closet for?",
            ),
            (
                "hangers",
                "Use the wooden hangers for coats, the wire ones bend the shoulders.",
                "Which hangers are right for overcoats?",
            ),
            (
                "ties",
                "Ties are rolled up in the small drawer, never hung on the rail.",
                "How should neckties be kept?",
            ),
            (
                "pajamas",
                "Leo's pyjamas go under his pillow, not into the wardrobe.",
                "Where should the boy's sleepwear be put?",
            ),
            (
                "jewellery",
                "The jewellery box on the top shelf is locked; don't try to open it.",
                "Can I open the case with the rings and necklaces?",
            ),
            (
                "bedding",
                "Spare bed sheets are in the bottom drawer, sorted by size.",
                "Where do I find fresh linen for the beds?",
            ),
            (
                "mirror_door",
                "The mirror door sticks; lift it slightly while sliding it open.",
                "How do I open the sliding panel with the mirror?",
            ),
            (
                "laundry_basket",
                "Dirty clothes go in the wicker basket, not on the chair.",
                "Where do worn clothes belong?",
            ),
            (
                "belts",
                "Belts hang on the hooks inside the right door.",
                "Where are the waist straps kept?",
            ),
        ],
        [
            (
                "last_month",
                "The blue dress is for the theatre evening.",
                "What did I say about the blue dress last month?",
            ),
            (
                "yesterday",
                "The blue dress needs to go to the dry cleaner.",
                "Yesterday, what did I want done with the blue dress?",
            ),
            (
                "lunch",
                "The blue dress is lent to Clara's sister for the weekend.",
                "What did I tell you before lunch about the blue dress?",
            ),
        ],
        [
            (
                "suits",
                "ties",
                "How are Ben's formal jackets stored, and where do the neckties go?",
            ),
            (
                "wool",
                "winter",
                "Where do the knitted sweaters go? Also where are the heavy cold-season jackets?",
            ),
            (
                "socks",
                "bedding",
                "What happens to stockings before they're put away, and where is fresh linen "
                "for the beds?",
            ),
        ],
    ),
    (
        "living room windowsill",
        6.0,
        -4.0,
        [
            (
                "fern",
                "Water the fern by the window every Tuesday, it dries out quickly.",
                "On which day does the leafy green plant near the glass need a drink?",
            ),
            (
                "orchid",
                "The orchid gets three ice cubes a week instead of watering.",
                "How is the flowering plant with the aerial roots hydrated?",
            ),
            (
                "cactus_sun",
                "The cacti stay in full sun and are watered only every three weeks.",
                "How often do the succulents with spines get water?",
            ),
            (
                "basil",
                "Pinch the flowers off the basil so the leaves keep growing.",
                "What do I do to the herb so it keeps making leaves?",
            ),
            (
                "fertiliser",
                "Give the houseplants liquid fertiliser once a month from spring to autumn.",
                "How often do the indoor plants get fed?",
            ),
            (
                "blinds",
                "Close the blinds at noon in summer so the plants don't burn.",
                "When should the shades be lowered to protect the greenery?",
            ),
            (
                "repot",
                "The rubber plant needs a bigger pot in April.",
                "When is the ficus due for a larger container?",
            ),
            (
                "mist",
                "Spray the calathea leaves with water every other day, it likes humidity.",
                "Which plant needs misting and how often?",
            ),
            (
                "pests",
                "If the leaves get sticky, wipe them with soapy water, that means aphids.",
                "What should I do about tacky foliage?",
            ),
            (
                "cat_plants",
                "The lily is poisonous to cats; keep it on the high shelf.",
                "Which bloom is toxic for the pet and where should it stand?",
            ),
            (
                "rotate",
                "Turn the pots a quarter turn every week so the plants grow straight.",
                "How do I keep the plants from leaning towards the light?",
            ),
            (
                "window_open",
                "Open the window for ten minutes each day, but not when it is below freezing.",
                "When may I air the room by the plants?",
            ),
            (
                "radiator",
                "Don't put any plant on the radiator under the window in winter.",
                "Where must pots not be placed during the cold months?",
            ),
            (
                "holiday",
                "During holidays the plants stand in the bathtub with a little water.",
                "Where do the plants go when we are away on vacation?",
            ),
            (
                "dead_leaves",
                "Cut off the yellow leaves of the peace lily with the small scissors.",
                "What do I do with the faded foliage of the spathiphyllum?",
            ),
            (
                "cuttings",
                "The cuttings in the jars need fresh water every three days.",
                "How often should the rooting shoots get new water?",
            ),
        ],
        [
            (
                "last_week",
                "The avocado seedling should be watered daily.",
                "How often did I say last week to water the avocado?",
            ),
            (
                "two_days",
                "The avocado seedling is getting too much water, skip a few days.",
                "What did I tell you on Monday about the avocado plant?",
            ),
            (
                "morning",
                "The avocado seedling moved to the kitchen window.",
                "This morning, what did I say about the young avocado?",
            ),
        ],
        [
            (
                "fern",
                "orchid",
                "Which day does the leafy plant by the glass need water? And how does the "
                "orchid get its moisture?",
            ),
            (
                "basil",
                "pests",
                "How do I keep the herb producing leaves, and what helps against tacky foliage?",
            ),
            (
                "cat_plants",
                "radiator",
                "Which bloom is toxic to the pet, and where must pots not stand in winter?",
            ),
        ],
    ),
    (
        "dining table",
        3.0,
        5.0,
        [
            (
                "seating",
                "Grandpa always sits at the head of the table near the radiator.",
                "Where is the old man's usual place at meals?",
            ),
            (
                "tablecloth",
                "The lace tablecloth is only for Christmas and birthdays.",
                "When do we use the fancy table cover?",
            ),
            (
                "candles",
                "Never leave the candles burning when nobody is in the room.",
                "What fire rule applies to the table lights?",
            ),
            (
                "placemats",
                "Put a placemat under every plate, the wood stains easily.",
                "Why does each dish need something underneath it?",
            ),
            (
                "highchair",
                "The highchair goes next to Clara's seat for the baby.",
                "Where does the infant's feeding seat go?",
            ),
            (
                "silverware",
                "The silver cutlery is polished before guests come and stored in the velvet box.",
                "How is the good cutlery cared for?",
            ),
            (
                "glasses",
                "Wine glasses are washed by hand, the dishwasher makes them cloudy.",
                "How should stemware be cleaned?",
            ),
            (
                "napkins",
                "Cloth napkins are folded into triangles and laid on the left of the plate.",
                "How are the serviettes set out?",
            ),
            (
                "extension",
                "The table extension leaf is behind the sofa, it needs two people to fit.",
                "Where is the extra panel to make the table longer?",
            ),
            (
                "allergies",
                "Ben is allergic to nuts; check every dish served at his place.",
                "Which food is dangerous for Ben?",
            ),
            (
                "salt",
                "Grandpa shouldn't have extra salt, keep the shaker away from his place.",
                "Why should the seasoning dispenser stay out of the old man's reach?",
            ),
            (
                "centerpiece",
                "The fruit bowl stays in the middle of the table, not on the sideboard.",
                "Where should the basket of apples and bananas be?",
            ),
            (
                "chairs",
                "The wobbly chair with the loose leg is not for guests.",
                "Which seat should visitors not be given?",
            ),
            (
                "water_jug",
                "Put a jug of tap water with lemon on the table at every dinner.",
                "What drink is always served at supper?",
            ),
            (
                "crumbs",
                "Sweep crumbs off the table with the little brush into the pan.",
                "How do I clear leftovers bits off the tabletop?",
            ),
            (
                "trivet",
                "Hot pots go on the iron trivet, never directly on the wood.",
                "What goes under a steaming saucepan on the table?",
            ),
        ],
        [
            (
                "last_month",
                "Sunday lunch is for six people.",
                "Last month, how many did I say were coming to Sunday lunch?",
            ),
            (
                "two_days",
                "Sunday lunch will have eight at the table with the cousins.",
                "Two days ago, what did I tell you about the Sunday meal?",
            ),
            (
                "hour",
                "Sunday lunch is moved to the garden if the weather is good.",
                "What did I just say about Sunday lunch an hour ago?",
            ),
        ],
        [
            (
                "seating",
                "salt",
                "Where does Grandpa sit at meals, and why should the seasoning be kept away "
                "from him?",
            ),
            (
                "glasses",
                "silverware",
                "How is stemware cleaned? Then how do we look after the good cutlery?",
            ),
            (
                "placemats",
                "trivet",
                "Why does every dish need something underneath, and what goes under a "
                "steaming pan?",
            ),
        ],
    ),
    (
        "laundry room",
        -2.0,
        8.0,
        [
            (
                "wool_cycle",
                "Wool goes in the machine on the wool cycle at thirty degrees only.",
                "How should knitted things be washed?",
            ),
            (
                "whites",
                "Whites are washed at sixty degrees, separately from colours.",
                "At what temperature do the white clothes get cleaned?",
            ),
            (
                "detergent",
                "Use the fragrance-free detergent for the baby's clothes.",
                "Which soap powder is for the infant's things?",
            ),
            (
                "dryer_lint",
                "Empty the lint filter of the dryer after every load.",
                "What must be cleaned on the tumble machine each time?",
            ),
            (
                "no_dryer",
                "Ben's sports shirts must never go in the dryer, they shrink.",
                "Why do Ben's gym tops have to air-dry?",
            ),
            (
                "pockets",
                "Check all pockets before washing, tissues ruin the whole load.",
                "What do I look through before starting the machine?",
            ),
            (
                "softener",
                "No fabric softener on towels, it makes them less absorbent.",
                "Why don't bath sheets get conditioner?",
            ),
            (
                "drying_rack",
                "The drying rack stands by the window, fold it away when empty.",
                "What happens to the clothes horse when nothing is on it?",
            ),
            (
                "stains",
                "Treat stains with the stain spray and let it soak ten minutes first.",
                "How do I deal with marks on clothes before washing?",
            ),
            (
                "door_open",
                "Leave the washing machine door open after use so it doesn't smell.",
                "Why should the washer be left ajar?",
            ),
            (
                "ironing_board",
                "The ironing board folds up behind the door.",
                "Where is the pressing table stored?",
            ),
            (
                "quiet_hours",
                "Don't run the machine after ten at night, the neighbours complain.",
                "Until what hour may I do a load?",
            ),
            (
                "delicates",
                "Delicates and bras go into the mesh bag before washing.",
                "How are fragile underwear items protected in the wash?",
            ),
            (
                "bleach_whites",
                "Use oxygen bleach on whites only, never chlorine.",
                "What whitener is allowed for light clothes?",
            ),
            (
                "sorting",
                "Sort laundry into the three baskets: whites, darks and colours.",
                "How are dirty clothes divided up?",
            ),
            (
                "hand_wash",
                "Silk is washed by hand in cold water with a drop of shampoo.",
                "How should the silky blouse be cleaned?",
            ),
        ],
        [
            (
                "last_week",
                "The washing machine makes a loud noise when it spins.",
                "What did I tell you about the washing machine last week?",
            ),
            (
                "evening",
                "The washing machine repairman replaced the drum bearing.",
                "What did I say about the washer yesterday evening?",
            ),
            (
                "afternoon",
                "The washing machine is leaking water at the front.",
                "This afternoon, what did I mention about the washing machine?",
            ),
        ],
        [
            (
                "wool_cycle",
                "delicates",
                "How are knitted things washed, and how are fragile underwear items protected?",
            ),
            (
                "dryer_lint",
                "no_dryer",
                "What must be cleaned on the tumble machine every time? Also, why do Ben's gym "
                "tops air-dry?",
            ),
            (
                "pockets",
                "stains",
                "What do I check before starting a load, then how are marks treated?",
            ),
        ],
    ),
    (
        "kids' room",
        11.0,
        9.0,
        [
            (
                "bedtime",
                "Leo goes to bed at half past seven on school nights.",
                "When does the boy have to sleep before lessons?",
            ),
            (
                "nightlight",
                "Leave the night light on, Leo is afraid of the dark.",
                "Why should the little lamp stay lit at night?",
            ),
            (
                "lego",
                "Lego goes back in the blue boxes before dinner.",
                "Where do the building bricks get tidied to?",
            ),
            (
                "tablet",
                "The tablet is allowed for one hour a day, only after homework.",
                "How much screen time does the child get?",
            ),
            (
                "stuffed",
                "The grey rabbit must always be in the bed, Leo can't sleep without it.",
                "Which cuddly toy has to be in the bed?",
            ),
            (
                "window_lock",
                "The window in the kids' room stays locked, the key is on top of the wardrobe.",
                "Where is the key for the children's window?",
            ),
            (
                "homework",
                "Homework is done at the small desk before any playing.",
                "What comes first after school, before toys?",
            ),
            (
                "crayons",
                "Crayons are only used at the table, not on the carpet.",
                "Where is the boy allowed to colour?",
            ),
            (
                "books",
                "Read one chapter of the dragon book every evening.",
                "How much of the bedtime story is read each night?",
            ),
            (
                "clothes_school",
                "Lay out Leo's school clothes on the chair the night before.",
                "When should tomorrow's outfit be prepared?",
            ),
            (
                "snacks",
                "No sweets in the bedroom, snacks only in the kitchen.",
                "Where may the child eat treats?",
            ),
            (
                "batteries",
                "The toy car's batteries are changed by an adult only.",
                "Who replaces the cells in the remote control vehicle?",
            ),
            (
                "humidifier",
                "Fill the humidifier with distilled water when Leo has a cold.",
                "What water goes in the air moisturiser?",
            ),
            (
                "bunk",
                "Nobody climbs onto the top bunk without the ladder.",
                "How must the upper bed be reached?",
            ),
            (
                "piano",
                "Leo practices the keyboard for fifteen minutes after dinner.",
                "How long is music practice each evening?",
            ),
            (
                "friends",
                "Friends can stay over on Saturdays if their parents call first.",
                "When are sleepovers allowed?",
            ),
        ],
        [
            (
                "last_week",
                "Leo's swimming lesson is on Wednesday at four.",
                "When did I say last week that Leo's swimming was?",
            ),
            (
                "yesterday",
                "Leo's swimming lesson is cancelled because the pool is closed.",
                "What did I tell you yesterday about Leo's swimming?",
            ),
            (
                "hour",
                "Leo's swimming lesson will be on Thursday this week instead.",
                "An hour ago, what did I say about Leo's swim class?",
            ),
        ],
        [
            (
                "bedtime",
                "nightlight",
                "When does the boy go to sleep on school nights, and why does the little lamp "
                "stay on?",
            ),
            (
                "lego",
                "crayons",
                "Where are the building bricks tidied? Then, where is he allowed to colour?",
            ),
            (
                "tablet",
                "homework",
                "How much screen time is there, and what has to come first after school?",
            ),
        ],
    ),
    (
        "pet corner",
        1.0,
        -5.0,
        [
            (
                "dog_food",
                "Rex gets one cup of dry food at seven and one at six.",
                "How much does the dog eat and when?",
            ),
            (
                "cat_food",
                "Mia the cat only eats the wet food in the small tins.",
                "What does the kitty eat?",
            ),
            (
                "water_bowl",
                "Refill both water bowls every morning and evening.",
                "How often do the animals get fresh drinking water?",
            ),
            (
                "treats",
                "No more than three treats a day for Rex, he's on a diet.",
                "How many snacks is the dog allowed?",
            ),
            (
                "litter",
                "Scoop the litter box daily and change it fully on Sundays.",
                "How is the cat toilet kept clean?",
            ),
            (
                "medicine_dog",
                "Rex gets his joint tablet wrapped in cheese with breakfast.",
                "How is the dog given his pill for his hips?",
            ),
            (
                "chocolate",
                "Never give the dog chocolate or grapes, they're poisonous to him.",
                "Which foods are toxic for Rex?",
            ),
            (
                "brush",
                "Brush Mia twice a week, she sheds a lot in spring.",
                "How often does the kitty need grooming?",
            ),
            (
                "fish",
                "Feed the goldfish a pinch of flakes, never more, once a day.",
                "How much food does the aquarium get?",
            ),
            (
                "aquarium",
                "Change a quarter of the aquarium water every two weeks.",
                "How much of the fish tank is refreshed and how often?",
            ),
            (
                "walks",
                "Rex needs three walks a day, the long one after lunch.",
                "When is the dog's longest outing?",
            ),
            (
                "vet_card",
                "The vet's phone number is on the card pinned above the food bin.",
                "Where can I find the animal doctor's contact?",
            ),
            (
                "sofa",
                "The cat may sleep on the sofa, the dog may not.",
                "Which pet is allowed on the couch?",
            ),
            (
                "hamster",
                "The hamster's cage is cleaned on Saturdays; he bites when woken.",
                "When does the rodent's enclosure get cleaned?",
            ),
            (
                "toys",
                "Put the squeaky toys away at night so Rex doesn't bark.",
                "Why do the noisy chew toys get cleared away in the evening?",
            ),
            (
                "flea",
                "The flea treatment for both animals is due on the first of every month.",
                "When do the pets get their parasite drops?",
            ),
        ],
        [
            (
                "last_month",
                "Mia the cat has to lose weight, halve her food.",
                "Last month, what did I tell you about Mia's feeding?",
            ),
            (
                "two_days",
                "Mia the cat needs her eye drops twice a day.",
                "What did I say about Mia two days ago?",
            ),
            (
                "morning",
                "Mia the cat has a vet appointment at five today.",
                "This morning, what did I mention about the cat Mia?",
            ),
        ],
        [
            (
                "dog_food",
                "treats",
                "How much does the dog eat at meals, and how many snacks may he have?",
            ),
            (
                "litter",
                "brush",
                "How is the cat toilet kept clean? And how often does the kitty need grooming?",
            ),
            (
                "fish",
                "aquarium",
                "How much do the goldfish get fed, and how often is their tank water refreshed?",
            ),
        ],
    ),
    (
        "garden shed",
        -10.0,
        -8.0,
        [
            (
                "mower",
                "The lawnmower needs its blade sharpened before the first cut in spring.",
                "What maintenance does the grass cutter need at the start of the season?",
            ),
            (
                "seeds",
                "Seed packets are kept in the tin box, sorted by sowing month.",
                "How are the packets for planting organised?",
            ),
            (
                "hose",
                "Roll up the hose after use, the dog chews it when it's lying around.",
                "Why should the watering pipe be coiled up?",
            ),
            (
                "pesticide",
                "The slug pellets are on the top shelf, away from the dog.",
                "Where is the snail poison kept?",
            ),
            (
                "gloves_garden",
                "Wear the thick gloves when pruning the roses.",
                "What protects my hands when trimming the thorny bushes?",
            ),
            (
                "compost",
                "Only plant waste goes on the compost, no cooked food.",
                "What may be thrown onto the heap for rotting?",
            ),
            (
                "wheelbarrow",
                "The wheelbarrow's tyre is flat; pump it before moving soil.",
                "What must I do to the barrow before carting earth?",
            ),
            (
                "shears",
                "Oil the hedge shears after cutting so they don't rust.",
                "How do I keep the trimming scissors from corroding?",
            ),
            (
                "bulbs",
                "Tulip bulbs are planted in October along the fence.",
                "When and where do the spring flowers go into the ground?",
            ),
            (
                "rain_barrel",
                "Use the rain barrel water for the vegetable beds first.",
                "What should the collected rainwater be used for?",
            ),
            (
                "shed_lock",
                "The shed padlock code is the year the house was built.",
                "What opens the lock on the garden hut?",
            ),
            (
                "tomatoes",
                "Tomato plants are tied to the canes once they're knee high.",
                "When do the tomatoes need support?",
            ),
            (
                "bbq",
                "The gas bottle for the barbecue stays outside the shed, never inside.",
                "Where must the grill's propane be stored?",
            ),
            (
                "leaves",
                "Raked leaves go in the big green bags behind the shed.",
                "Where do I put the autumn leaf piles?",
            ),
            (
                "spade",
                "Clean the mud off the spade before hanging it on the wall.",
                "What should I do to the digging tool before putting it back?",
            ),
            (
                "sprinkler",
                "The sprinkler runs for twenty minutes at dawn in dry weeks.",
                "How long does the lawn watering device run?",
            ),
        ],
        [
            (
                "last_week",
                "The apple tree needs pruning before the buds open.",
                "Last week, what did I tell you about the apple tree?",
            ),
            (
                "evening",
                "The apple tree has a broken branch from the storm.",
                "What did I say about the apple tree last night?",
            ),
            (
                "lunch",
                "The apple tree will be cut back by the gardener on Saturday.",
                "Before lunch, what did I mention about the apple tree?",
            ),
        ],
        [
            (
                "mower",
                "spade",
                "What does the grass cutter need at the start of the season, and what do I do "
                "to the digging tool before putting it back?",
            ),
            (
                "hose",
                "sprinkler",
                "Why should the watering pipe be coiled? Also, how long does the lawn "
                "watering device run?",
            ),
            (
                "pesticide",
                "bbq",
                "Where is the snail poison kept, and where must the grill's propane be stored?",
            ),
        ],
    ),
    (
        "reception desk",
        20.0,
        0.0,
        [
            (
                "badges",
                "Visitors get a yellow badge and must sign the guest book.",
                "What do guests receive when they check in?",
            ),
            (
                "parking",
                "Guest parking is in spaces twenty to thirty behind the building.",
                "Where should visitors leave their cars?",
            ),
            (
                "deliveries",
                "Deliveries are signed for here and brought to the mail room at noon.",
                "What happens to packages that arrive at the front desk?",
            ),
            (
                "wifi",
                "The guest wifi password is printed on the card in the stand.",
                "Where can a visitor find the internet code?",
            ),
            (
                "director",
                "The director only sees visitors with an appointment.",
                "Can someone meet the head of the company without booking?",
            ),
            (
                "lost_found",
                "Lost items go in the box under the desk with a note of the date.",
                "Where are found belongings kept?",
            ),
            (
                "fire_drill",
                "During a fire alarm, the guest book goes outside with the receptionist.",
                "What must be taken out when the evacuation alarm rings?",
            ),
            (
                "phones",
                "Answer the phone with the company name and your own name.",
                "How should calls be greeted?",
            ),
            (
                "taxi",
                "Taxis for guests are ordered through the number on the laminated sheet.",
                "How do I book a cab for a visitor?",
            ),
            (
                "meeting_rooms",
                "Meeting rooms are booked in the calendar, not on paper.",
                "How are conference rooms reserved?",
            ),
            (
                "couriers",
                "Couriers may not go past the desk; collect the parcel from them here.",
                "Are delivery riders allowed upstairs?",
            ),
            (
                "coffee_guests",
                "Offer every visitor water or coffee while they wait.",
                "What should waiting guests be given to drink?",
            ),
            (
                "keys_reception",
                "Spare office keys are in the key safe; the code changes monthly.",
                "Where are the extra keys for the offices?",
            ),
            (
                "opening",
                "Reception is staffed from eight to six; after that the door needs a card.",
                "When is the front desk open?",
            ),
            (
                "umbrellas_loan",
                "Umbrellas for guests are in the stand by the entrance and must be returned.",
                "Can a visitor borrow something for the rain?",
            ),
            (
                "press",
                "Journalists are sent to the communications office, never answered here.",
                "Where do I direct reporters?",
            ),
        ],
        [
            (
                "last_week",
                "The auditor from the bank arrives on the twentieth.",
                "Last week, what did I tell you about the bank's auditor?",
            ),
            (
                "yesterday",
                "The auditor from the bank needs a desk near the finance team.",
                "Yesterday, what did I say about the auditor?",
            ),
            (
                "morning",
                "The auditor from the bank has to be collected from the station.",
                "What did I mention this morning about the auditor?",
            ),
        ],
        [
            (
                "badges",
                "parking",
                "What do guests get at check-in, and where should they leave their cars?",
            ),
            (
                "deliveries",
                "couriers",
                "What happens to packages that arrive at the front desk? And may delivery "
                "riders go upstairs?",
            ),
            (
                "wifi",
                "taxi",
                "Where does a visitor find the internet code, then how do I book them a cab?",
            ),
        ],
    ),
    (
        "care home day room",
        30.0,
        5.0,
        [
            (
                "mrs_lee_tea",
                "Mrs. Lee takes her tea weak with honey, never with sugar.",
                "How does Mrs. Lee like her hot drink sweetened?",
            ),
            (
                "mr_ortiz_walker",
                "Mr. Ortiz must have his walker within reach at all times.",
                "What should always be next to Mr. Ortiz?",
            ),
            (
                "hearing_aid",
                "Mrs. Brown's hearing aid batteries are in the nurse's drawer.",
                "Where are the cells for Mrs. Brown's ear device?",
            ),
            (
                "tv",
                "The television is turned off at nine in the evening.",
                "When does the TV go off at night?",
            ),
            (
                "visitors",
                "Family may visit between ten and eight; after that ring the night nurse.",
                "What are the visiting hours for relatives?",
            ),
            (
                "fall_risk",
                "Mr. Ortiz is a fall risk; call a nurse if he stands up alone.",
                "What should I do when Mr. Ortiz gets up on his own?",
            ),
            (
                "puzzles",
                "Jigsaw puzzles are in the cupboard under the window, pieces counted.",
                "Where are the jigsaws stored?",
            ),
            (
                "diabetic",
                "Mr. Singh is diabetic; no cake at the afternoon coffee.",
                "Why can't Mr. Singh have a slice of dessert?",
            ),
            (
                "glasses_case",
                "Mrs. Lee's reading glasses are in the red case on her armchair.",
                "Where does Mrs. Lee keep her spectacles?",
            ),
            (
                "radio",
                "Mrs. Brown likes the classical music station in the mornings.",
                "Which programme does Mrs. Brown enjoy early in the day?",
            ),
            (
                "blankets",
                "Blankets for the residents are in the basket by the fireplace.",
                "Where can I get a throw for someone who is cold?",
            ),
            (
                "games",
                "Bingo is on Thursdays at three, the cards are in the green box.",
                "When is the number-calling game played?",
            ),
            (
                "window_air",
                "Open the window only when everyone has a cardigan on.",
                "When may fresh air be let into the lounge?",
            ),
            (
                "water_intake",
                "Offer everyone a glass of water every hour, Mr. Singh often forgets to drink.",
                "How often should residents be given something to drink?",
            ),
            (
                "photos",
                "Do not take photos of the residents without asking the office.",
                "Can I take pictures of the people living here?",
            ),
            (
                "cat_visit",
                "The therapy cat visits on Sundays; Mrs. Brown is allergic, keep it away from her.",
                "Who must the visiting animal avoid?",
            ),
        ],
        [
            (
                "last_month",
                "Mr. Ortiz's daughter visits on Sundays.",
                "What did I tell you last month about Mr. Ortiz's daughter?",
            ),
            (
                "yesterday",
                "Mr. Ortiz's daughter is bringing his new slippers.",
                "Yesterday, what did I say Mr. Ortiz's daughter would do?",
            ),
            (
                "afternoon",
                "Mr. Ortiz's daughter called to say she is running late.",
                "This afternoon, what did I mention about Mr. Ortiz's daughter?",
            ),
        ],
        [
            (
                "mrs_lee_tea",
                "glasses_case",
                "How does Mrs. Lee sweeten her drink, and where are her spectacles?",
            ),
            (
                "mr_ortiz_walker",
                "fall_risk",
                "What must stay next to Mr. Ortiz? Also, what do I do if he gets up alone?",
            ),
            (
                "diabetic",
                "water_intake",
                "Why can't Mr. Singh have dessert, and how often should residents be offered "
                "a drink?",
            ),
        ],
    ),
    (
        "warehouse loading dock",
        60.0,
        -20.0,
        [
            (
                "forklift",
                "Only certified drivers may use the forklift; the key is in the supervisor's "
                "office.",
                "Who is allowed to drive the lift truck?",
            ),
            (
                "pallets",
                "Broken pallets are stacked by the fence for collection on Fridays.",
                "Where do damaged skids go?",
            ),
            (
                "fragile",
                "Boxes marked fragile go on the top of the stack, never underneath.",
                "Where should delicate cartons be placed?",
            ),
            (
                "returns",
                "Returned goods are checked in at bay three before going back on the shelves.",
                "Where is merchandise that customers sent back processed?",
            ),
            (
                "dock_door",
                "Close the dock door when no truck is at the bay, the heating escapes.",
                "Why should the loading gate be shut between lorries?",
            ),
            (
                "hi_vis",
                "High-visibility vests must be worn on the dock at all times.",
                "What clothing is required on the loading area?",
            ),
            (
                "cold_chain",
                "Chilled deliveries go into the cold store within fifteen minutes.",
                "How quickly must refrigerated goods be put away?",
            ),
            (
                "scanner",
                "Scan every parcel before it leaves the dock, no exceptions.",
                "What must happen to each package before it is shipped?",
            ),
            (
                "shrink_wrap",
                "Wrap each pallet at least five times with stretch film.",
                "How many layers of plastic film go around a load?",
            ),
            (
                "weight",
                "Nothing above twenty kilos is lifted by one person alone.",
                "What's the limit for carrying a box without help?",
            ),
            (
                "driver_waiting",
                "Truck drivers wait in the small room by bay one, not on the dock.",
                "Where should lorry drivers stay while they're loaded?",
            ),
            (
                "chemicals",
                "Hazardous goods are stored in the caged area with the orange sign.",
                "Where are dangerous substances kept?",
            ),
            (
                "damage_photo",
                "Photograph any damaged delivery before signing the receipt.",
                "What do I do before accepting a dented shipment?",
            ),
            (
                "aisle",
                "Keep aisle four clear, it's the fire escape route.",
                "Which corridor must never be blocked?",
            ),
            (
                "battery_charge",
                "The forklift batteries are charged overnight in the charging room.",
                "When and where do the lift truck cells get recharged?",
            ),
            (
                "labels_dock",
                "Outgoing pallets need the blue label with the route number.",
                "What sticker goes on loads that are leaving?",
            ),
        ],
        [
            (
                "last_week",
                "The delivery from Hamburg arrives on Monday morning.",
                "When did I say last week the Hamburg shipment would come?",
            ),
            (
                "two_days",
                "The delivery from Hamburg is delayed at customs.",
                "Two days ago, what did I tell you about the Hamburg delivery?",
            ),
            (
                "hour",
                "The delivery from Hamburg is at the gate now.",
                "What did I say about the Hamburg delivery an hour ago?",
            ),
        ],
        [
            (
                "forklift",
                "battery_charge",
                "Who may drive the lift truck, and when are its batteries recharged?",
            ),
            (
                "fragile",
                "weight",
                "Where do delicate cartons go in a stack? And what can one person carry alone?",
            ),
            (
                "cold_chain",
                "damage_photo",
                "How fast must refrigerated goods be stored, then what do I do before "
                "accepting a dented shipment?",
            ),
        ],
    ),
    (
        "meeting room",
        15.0,
        10.0,
        [
            (
                "projector",
                "The projector remote is in the drawer under the screen, with spare batteries.",
                "Where is the control for the beamer?",
            ),
            (
                "whiteboard",
                "Only use the whiteboard markers in the tray, the permanent ones ruin it.",
                "Which pens are safe for the dry-erase board?",
            ),
            (
                "booking",
                "The room is booked every Monday from nine to ten for the team stand-up.",
                "When is the conference room reserved for the weekly team sync?",
            ),
            (
                "chairs_room",
                "After meetings, push the chairs back under the table.",
                "What should be done with the seats when the meeting is over?",
            ),
            (
                "video",
                "The video call camera turns on with the switch on the right of the TV.",
                "How do I start the webcam for remote meetings?",
            ),
            (
                "cups",
                "Dirty cups go back to the kitchen, not left on the table.",
                "What happens to used mugs after a meeting?",
            ),
            (
                "thermostat",
                "Don't set the thermostat above twenty-two degrees.",
                "What's the highest temperature the room may be heated to?",
            ),
            (
                "confidential",
                "Wipe the whiteboard after confidential meetings.",
                "What has to be erased after a private discussion?",
            ),
            (
                "hdmi",
                "The HDMI adapter for laptops hangs on a hook by the door.",
                "Where is the connector for plugging in a notebook?",
            ),
            (
                "catering",
                "Catering is ordered at least a day in advance through the office manager.",
                "How early must food for meetings be arranged?",
            ),
            (
                "blinds_room",
                "Lower the blinds for presentations, the sun washes out the screen.",
                "Why should the shades be down while projecting?",
            ),
            (
                "phone_speaker",
                "The conference phone is charged on the sideboard.",
                "Where does the speakerphone charge?",
            ),
            (
                "flipchart",
                "Fresh flipchart paper is in the cupboard, top shelf.",
                "Where do I get new sheets for the easel pad?",
            ),
            (
                "noise",
                "Keep the door closed during calls, the hallway is loud.",
                "Why does the door stay shut while someone is on a call?",
            ),
            (
                "lights",
                "Turn off all the lights and the screen when leaving.",
                "What must be switched off at the end?",
            ),
            (
                "capacity",
                "No more than twelve people in the room for fire safety.",
                "How many people fit in the room at most?",
            ),
        ],
        [
            (
                "last_month",
                "The board presentation is on the first of April.",
                "Last month, what did I say about the board presentation?",
            ),
            (
                "yesterday",
                "The board presentation needs the sales figures added.",
                "Yesterday, what did I tell you about the board presentation?",
            ),
            (
                "lunch",
                "The board presentation is printed and on the table.",
                "What did I say before lunch about the board presentation?",
            ),
        ],
        [
            (
                "projector",
                "hdmi",
                "Where is the beamer's control, and where is the connector for a notebook?",
            ),
            (
                "whiteboard",
                "confidential",
                "Which pens are safe on the dry-erase board? Then what gets erased after a "
                "private discussion?",
            ),
            (
                "thermostat",
                "capacity",
                "What is the highest heating setting allowed, and how many people fit at most?",
            ),
        ],
    ),
    (
        "library bookshelf",
        25.0,
        15.0,
        [
            (
                "sorting_books",
                "Books are shelved by author's surname, not by colour.",
                "How are the volumes ordered on the shelves?",
            ),
            (
                "first_editions",
                "The first editions on the top shelf must not be lent to anyone.",
                "Which rare books stay in the house?",
            ),
            (
                "borrowed",
                "Write down who borrows a book in the notebook on the side table.",
                "How do we keep track of lent volumes?",
            ),
            (
                "sunlight",
                "Keep the curtains closed in the afternoon, sunlight fades the spines.",
                "Why should the drapes be drawn later in the day?",
            ),
            (
                "cookbooks",
                "Cookbooks belong in the kitchen, not on this shelf.",
                "Where should the recipe collections go?",
            ),
            (
                "kids_books",
                "Leo's picture books are on the bottom shelf where he can reach them.",
                "Where are the children's illustrated books?",
            ),
            (
                "dust",
                "Dust the shelves with the feather duster every two weeks.",
                "How often are the bookcases cleaned?",
            ),
            (
                "atlas",
                "The big atlas lies flat, standing up bends its binding.",
                "How should the large map book be stored?",
            ),
            (
                "magazines",
                "Old magazines go to the paper recycling after three months.",
                "When are periodicals thrown out?",
            ),
            (
                "ladder_library",
                "Use the step stool for the top shelf, never climb the shelves.",
                "How do I reach the highest row of books?",
            ),
            (
                "bookmarks",
                "Don't fold page corners; bookmarks are in the little box.",
                "What should be used to mark a page?",
            ),
            (
                "library_due",
                "Library books from town are kept on the separate shelf by the door.",
                "Where do the borrowed public library volumes sit?",
            ),
            (
                "signed",
                "The signed novel by the lamp is a gift for Ben's birthday, keep it hidden.",
                "Which book is a present and should not be seen?",
            ),
            (
                "humidity_books",
                "The dehumidifier in the corner runs when the gauge shows over sixty percent.",
                "When does the moisture machine need to be on?",
            ),
            (
                "reading_lamp",
                "The reading lamp bulb is warm white; spare bulbs are in the hall drawer.",
                "Where are replacement bulbs for the book light?",
            ),
            (
                "encyclopedia",
                "The encyclopedia set stays complete; don't take single volumes to other rooms.",
                "Can I carry one tome of the reference set elsewhere?",
            ),
        ],
        [
            (
                "last_week",
                "The book club is reading the Russian novel next.",
                "Last week, what did I say the book club would read next?",
            ),
            (
                "two_days",
                "The book club meets at Clara's place this month.",
                "What did I tell you on Monday about the book club?",
            ),
            (
                "morning",
                "The book club copies have to be collected from the bookshop.",
                "This morning, what did I mention about the book club?",
            ),
        ],
        [
            (
                "sorting_books",
                "first_editions",
                "How are the volumes ordered, and which rare books must never be lent?",
            ),
            (
                "dust",
                "ladder_library",
                "How often are the bookcases cleaned? Also, how do I reach the highest row?",
            ),
            (
                "atlas",
                "magazines",
                "How is the large map book stored, and when are periodicals thrown away?",
            ),
        ],
    ),
    (
        "electronics bench",
        14.0,
        -12.0,
        [
            (
                "iron_temp",
                "Set the soldering iron to three hundred and fifty degrees for leaded solder.",
                "What temperature does the iron need for the lead-based alloy?",
            ),
            (
                "esd",
                "Wear the antistatic wrist strap when touching the circuit boards.",
                "What protects the PCBs from static discharge?",
            ),
            (
                "resistors",
                "Resistors are sorted by value in the small drawers on the left.",
                "Where are the resistance components kept?",
            ),
            (
                "capacitors",
                "Discharge the big capacitors before touching the power supply board.",
                "What must be done before handling the mains circuit?",
            ),
            (
                "fume",
                "Turn on the fume extractor whenever you solder.",
                "What must be running while joining wires with the iron?",
            ),
            (
                "scope",
                "The oscilloscope probes hang on the hooks, don't leave them on the bench.",
                "Where do the measuring leads for the scope belong?",
            ),
            (
                "batteries_lipo",
                "Lithium batteries are charged only in the fireproof bag.",
                "Where may lipo packs be charged?",
            ),
            (
                "psu",
                "Set the lab power supply current limit before connecting anything new.",
                "What do I configure on the bench supply before attaching a fresh circuit?",
            ),
            (
                "flux",
                "Clean flux residue off the boards with isopropyl alcohol.",
                "How do I remove the sticky leftover from soldering?",
            ),
            (
                "arduino",
                "The Arduino boards in the blue box are for the school workshop, not for projects.",
                "Which microcontroller boards are reserved for teaching?",
            ),
            (
                "multimeter",
                "Switch the multimeter off after use, it eats batteries.",
                "Why must the voltage tester be turned off?",
            ),
            (
                "wire",
                "Red wire is for positive, black for ground, always.",
                "Which colour cable is used for the minus side?",
            ),
            (
                "tip",
                "Tin the soldering tip before switching the iron off.",
                "What should I do to the iron's point before powering it down?",
            ),
            (
                "components_order",
                "Write missing parts on the order list taped to the shelf.",
                "How do I request new components?",
            ),
            (
                "3d_printer",
                "The 3D printer must never run unattended overnight.",
                "Can the additive manufacturing machine work while nobody's home?",
            ),
            (
                "magnifier",
                "The magnifying lamp is switched off when not used, the bulb gets hot.",
                "Why should the lens light be turned off?",
            ),
        ],
        [
            (
                "last_week",
                "The robot arm project needs new servo motors.",
                "Last week, what did I tell you about the robot arm?",
            ),
            (
                "evening",
                "The robot arm project is waiting for the controller board.",
                "Yesterday evening, what did I say about the robot arm?",
            ),
            (
                "afternoon",
                "The robot arm project works and can be shown on Friday.",
                "This afternoon, what did I mention about the robot arm?",
            ),
        ],
        [
            (
                "iron_temp",
                "fume",
                "What heat does the iron need for leaded alloy, and what must run while soldering?",
            ),
            (
                "esd",
                "capacitors",
                "What protects the circuit boards from static? And what must happen before "
                "touching the mains board?",
            ),
            (
                "batteries_lipo",
                "psu",
                "Where are lithium packs charged, then what is set on the bench supply before "
                "attaching a new circuit?",
            ),
        ],
    ),
    (
        "pantry shelf",
        4.0,
        -1.0,
        [
            (
                "cans",
                "Canned goods go at the back, newer cans behind the older ones.",
                "How are the tins arranged so the old ones are used first?",
            ),
            (
                "gluten_free",
                "Ben's gluten-free pasta is on the separate top shelf; keep flour away from it.",
                "Where is the wheat-free noodle supply, and what must not touch it?",
            ),
            (
                "rice",
                "Rice is kept in the airtight glass jar against weevils.",
                "How is the grain stored so bugs don't get in?",
            ),
            (
                "onions",
                "Onions and potatoes must be stored apart, they spoil each other.",
                "Which vegetables shouldn't sit together?",
            ),
            (
                "oil",
                "Olive oil stays in the dark cupboard, not next to the stove.",
                "Where should the cooking oil be kept?",
            ),
            (
                "shopping_list",
                "When something runs out, write it on the list on the pantry door.",
                "Where do I note items that need buying?",
            ),
            (
                "snacks_pantry",
                "The crisps on the high shelf are for the weekend only.",
                "When are we allowed the chips stored up top?",
            ),
            (
                "flour",
                "Flour is kept in the big tin with the scoop, refill from the bag.",
                "Where do I get plain flour for a cake?",
            ),
            (
                "baking",
                "Baking soda and baking powder are in the small white boxes, labelled.",
                "Where are the raising agents?",
            ),
            (
                "honey",
                "Honey that has crystallised is warmed in a water bath, not the microwave.",
                "How do I make the hardened honey runny again?",
            ),
            (
                "cereal",
                "Close the cereal bags with the clips so they stay crunchy.",
                "How do the breakfast flakes stay crisp?",
            ),
            (
                "wine",
                "Wine bottles lie on their side in the rack on the floor.",
                "How are the bottles of red and white stored?",
            ),
            (
                "expiry",
                "Check the expiry dates on the first of every month.",
                "How often do I go through the best-before dates?",
            ),
            (
                "nuts_pantry",
                "Nuts are kept in the sealed box on the top shelf because of Ben's allergy.",
                "Why are the almonds and walnuts locked away high up?",
            ),
            (
                "tea_pantry",
                "Tea bags are sorted: black tea on the left, herbal on the right.",
                "How is the tea collection arranged?",
            ),
            (
                "pet_food_pantry",
                "The dog's food sack stands on the floor, closed with the big clip.",
                "Where's the bag of kibble for Rex?",
            ),
        ],
        [
            (
                "last_month",
                "The big shopping trip is on Saturdays at the market.",
                "Last month, what did I say about the big shopping trip?",
            ),
            (
                "yesterday",
                "The big shopping trip is done online now with home delivery.",
                "Yesterday, what did I tell you about the weekly shopping?",
            ),
            (
                "hour",
                "The big shopping trip needs extra rice and tinned tomatoes.",
                "An hour ago, what did I say about the big shop?",
            ),
        ],
        [
            (
                "gluten_free",
                "nuts_pantry",
                "Where is Ben's wheat-free pasta, and why are the nuts sealed up high?",
            ),
            (
                "rice",
                "cereal",
                "How is the grain kept safe from bugs? Also, how do breakfast flakes stay crisp?",
            ),
            (
                "onions",
                "oil",
                "Which vegetables must be kept apart, and where should the cooking oil go?",
            ),
        ],
    ),
]


def _age(pool_index: int, item_index: int) -> float:
    """A plain memory's age: spread over the last ten days, at varied hours of the day."""
    return (0.6 * (item_index + 1) + 0.13 * pool_index) * DAY + (item_index * 37 % 11) * HOUR


def _build() -> list[Pool]:
    pools: list[Pool] = []
    for p, (place, x, y, plain, timed, pairs) in enumerate(_RAW):
        by_key = {key: text for key, text, _request in plain}
        if len(by_key) != len(plain):
            raise ValueError(f"{place}: duplicate memory keys")
        stored = [Stored(text, _age(p, i)) for i, (_key, text, _request) in enumerate(plain)]
        stored += [Stored(text, WHEN[when]) for when, text, _request in timed]
        shared = _SHARED[place]
        if set(shared) != set(by_key):
            raise ValueError(f"{place}: shared-word requests for {set(shared) ^ set(by_key)}")
        requests = [Request(request, (text,), "single") for _key, text, request in plain]
        requests += [Request(shared[key], (text,), "shared") for key, text, _request in plain]
        requests += [Request(request, (by_key[a], by_key[b]), "pair") for a, b, request in pairs]
        requests += [Request(request, (text,), "timed") for _when, text, request in timed]
        pools.append(Pool(place, x, y, tuple(stored), tuple(requests)))
    return pools


_SHARED: dict[str, dict[str, str]] = {
    "kitchen counter": {
        "blue_mug": "Is the blue mug Anna's?",
        "green_mug": "What about the green mug with the chipped handle?",
        "red_mugs": "When do we use the red mugs?",
        "kettle": "How far can I fill the kettle?",
        "descale": "How often does the coffee machine get descaled?",
        "beans": "Where are the coffee beans?",
        "knives": "Can the sharp knives go in the dishwasher?",
        "boards": "Which cutting board is for raw meat?",
        "toaster": "Should the toaster stay plugged in?",
        "spices": "How is the spice rack sorted?",
        "sugar": "Does the sugar jar need to be closed?",
        "teapot": "Can the glass teapot go on the stove?",
        "rack": "Where do the plates dry?",
        "breadbox": "Where does the bread go?",
        "cloth": "Which cloth do I wipe the counter with?",
        "microwave": "Can the metal bowls go in the microwave?",
    },
    "refrigerator": {
        "oat_milk": "Who is the oat milk for?",
        "leftovers": "When are old leftovers thrown away?",
        "labels": "What do I label the containers with?",
        "insulin": "Where are Grandpa's insulin pens?",
        "raw_meat": "Which shelf does raw meat go on?",
        "eggs": "Where do the eggs stay?",
        "cheese": "What do I wrap the cheese in?",
        "butter": "Which butter stays out of the fridge?",
        "temperature": "What should the fridge be set to?",
        "vegetable_drawer": "Which drawer is for vegetables?",
        "beer": "Who is the beer in the back for?",
        "defrost": "Where do I thaw frozen fish?",
        "door_seal": "Does the fridge door close by itself?",
        "jam": "Where do opened jam jars go?",
        "baby_food": "How long are baby food pouches good after opening?",
        "water_filter": "When does the filter jug need a new cartridge?",
    },
    "front door": {
        "keys": "Which hook are the house keys on?",
        "lock": "How do I lock the front door at night?",
        "parcels": "Can I accept parcels for Mr. Okafor?",
        "shoes": "Where do shoes go at the door?",
        "umbrella": "Where do wet umbrellas go?",
        "doorbell": "What's wrong with the doorbell?",
        "cat_flap": "Can the cat go outside through the front door?",
        "mail": "Where do I put the mail and the bills?",
        "salesmen": "Should I open the door for salespeople?",
        "spare_key": "Where is the spare key?",
        "alarm": "Where is the alarm code entered?",
        "mat": "When do I shake out the doormat?",
        "coats": "Where do guests' coats go?",
        "dog_leash": "Where does the dog's leash hang?",
        "light": "How long does the porch light stay on?",
        "delivery_code": "What code do grocery deliveries need?",
    },
    "garage workbench": {
        "drill": "Where does the cordless drill battery charge?",
        "screws": "Where are the machine screws?",
        "saw": "Who may use the circular saw?",
        "goggles": "When do I need the safety goggles?",
        "paint": "Where do old paint cans go?",
        "extension": "Which extension cord is for outdoor use?",
        "vice": "Should the vice be loosened before I leave?",
        "hammer": "Can I lend out the small claw hammer?",
        "glue": "How long does wood glue take to set?",
        "sawdust": "When should the sawdust be vacuumed?",
        "gas_can": "Where is the petrol can for the lawnmower?",
        "tape_measure": "Where does the short tape measure hang?",
        "bike": "What does Leo's bike need?",
        "sandpaper": "How is the sandpaper sorted?",
        "soldering": "Do I switch off the soldering station when leaving the garage?",
        "car": "Where should I park the car?",
    },
    "lab bench": {
        "pipettes": "How often are the pipettes calibrated?",
        "gloves": "Which gloves for the cell cultures?",
        "waste": "Which bin do sharps go in?",
        "centrifuge": "How do I balance the centrifuge?",
        "freezer": "Whose samples are in the minus eighty freezer?",
        "ethanol": "When is the bench wiped with ethanol?",
        "fume_hood": "Where do I work with chloroform?",
        "notebook": "What goes in the lab notebook?",
        "reagents": "How are opened reagents labelled?",
        "microscope": "What covers the microscope?",
        "eyewash": "When is the eyewash station tested?",
        "buffers": "Where are the buffer stocks?",
        "glassware": "Where does dirty glassware go?",
        "balance": "What do I do with the analytical balance after weighing powders?",
        "autoclave": "When does the autoclave run?",
        "food": "Are food or drinks allowed on the bench?",
    },
    "office desk": {
        "laptop": "Where's the laptop charger?",
        "documents": "Where do signed contracts go?",
        "monitor": "How do I turn the monitor off?",
        "chair": "Can I lower the desk chair?",
        "printer": "Which paper does the printer take?",
        "passwords": "What's on the sticky note under the keyboard?",
        "plant": "How often does the cactus on the desk need water?",
        "calls": "When does Maria not take calls?",
        "shredder": "What goes through the shredder?",
        "stapler": "When do I use the heavy stapler?",
        "cables": "How are the cables behind the desk tied?",
        "headphones": "Where do the noise-cancelling headphones go?",
        "drawer_lock": "Where is the key to the bottom drawer?",
        "coffee_cup": "Can cups go on the left side of the desk?",
        "backup": "When do I plug in the external drive?",
        "webcam": "When should the webcam cover be closed?",
    },
    "bathroom sink": {
        "towels": "Who are the white towels for?",
        "pills": "Where are Grandpa's heart pills?",
        "toothbrush": "When are toothbrush heads replaced?",
        "razor": "Where are Ben's razor blades?",
        "drain": "When does the enzyme cleaner go in the sink?",
        "hair_dryer": "Can the hair dryer stay plugged in by the basin?",
        "soap": "How do I refill the hand soap?",
        "mirror": "What do I clean the mirror with?",
        "bath_mat": "Where does the bath mat dry?",
        "contact_lenses": "Which is Clara's contact lens solution?",
        "toilet_paper": "Where is the toilet paper stored?",
        "fan": "How long does the extractor fan run after a shower?",
        "makeup": "Whose makeup bag is on the shelf?",
        "thermometer": "Where is the digital thermometer?",
        "bleach": "Can bleach be mixed with other cleaners?",
        "faucet": "How far do I turn the hot tap for the kids?",
    },
    "bedroom wardrobe": {
        "suits": "Can Ben's suits be folded?",
        "wool": "Where do the wool jumpers go?",
        "dress": "Where is Clara's wedding dress?",
        "ironing": "Which iron setting for shirts?",
        "socks": "Which drawer are the socks in?",
        "shoes_box": "Where do the dress shoes go?",
        "winter": "Where are the winter coats kept?",
        "donation": "What's in the bag by the wardrobe door?",
        "hangers": "Which hangers are for coats?",
        "ties": "Where are the ties kept?",
        "pajamas": "Where do Leo's pyjamas go?",
        "jewellery": "Is the jewellery box locked?",
        "bedding": "Where are the spare bed sheets?",
        "mirror_door": "How do I open the mirror door?",
        "laundry_basket": "Where do dirty clothes go?",
        "belts": "Where do the belts hang?",
    },
    "living room windowsill": {
        "fern": "When do I water the fern?",
        "orchid": "How many ice cubes does the orchid get?",
        "cactus_sun": "How often are the cacti watered?",
        "basil": "Should I pinch the basil flowers off?",
        "fertiliser": "When do the houseplants get liquid fertiliser?",
        "blinds": "When should the blinds be closed for the plants?",
        "repot": "When does the rubber plant need a bigger pot?",
        "mist": "How often do I spray the calathea?",
        "pests": "What do I do if the leaves get sticky?",
        "cat_plants": "Where should the lily stand because of the cat?",
        "rotate": "How often do I turn the pots?",
        "window_open": "How long do I open the window each day?",
        "radiator": "Can a plant go on the radiator?",
        "holiday": "What happens to the plants during holidays?",
        "dead_leaves": "How do I cut the yellow leaves of the peace lily?",
        "cuttings": "When do the cuttings need fresh water?",
    },
    "dining table": {
        "seating": "Where does Grandpa sit at the table?",
        "tablecloth": "When is the lace tablecloth used?",
        "candles": "Can the candles burn with nobody in the room?",
        "placemats": "Does every plate need a placemat?",
        "highchair": "Where does the highchair go?",
        "silverware": "Where is the silver cutlery stored?",
        "glasses": "Can the wine glasses go in the dishwasher?",
        "napkins": "How are the cloth napkins folded?",
        "extension": "Where is the table extension leaf?",
        "allergies": "What is Ben allergic to?",
        "salt": "Can Grandpa have extra salt?",
        "centerpiece": "Where does the fruit bowl stay?",
        "chairs": "Which chair is not for guests?",
        "water_jug": "What goes in the water jug at dinner?",
        "crumbs": "How do I sweep the crumbs off the table?",
        "trivet": "Where do hot pots go?",
    },
    "laundry room": {
        "wool_cycle": "Which cycle for wool?",
        "whites": "At how many degrees are whites washed?",
        "detergent": "Which detergent for the baby's clothes?",
        "dryer_lint": "When do I empty the lint filter?",
        "no_dryer": "Can Ben's sports shirts go in the dryer?",
        "pockets": "Should I check the pockets before washing?",
        "softener": "Does fabric softener go on towels?",
        "drying_rack": "Where does the drying rack stand?",
        "stains": "How long does the stain spray soak?",
        "door_open": "Should the washing machine door stay open?",
        "ironing_board": "Where is the ironing board?",
        "quiet_hours": "Can I run the machine after ten at night?",
        "delicates": "What goes into the mesh bag?",
        "bleach_whites": "Which bleach for whites?",
        "sorting": "How many laundry baskets are there for sorting?",
        "hand_wash": "How is silk washed?",
    },
    "kids' room": {
        "bedtime": "What time does Leo go to bed on school nights?",
        "nightlight": "Should the night light stay on?",
        "lego": "Where does the Lego go?",
        "tablet": "When is Leo allowed the tablet?",
        "stuffed": "Where does the grey rabbit go?",
        "window_lock": "Is the window in the kids' room locked?",
        "homework": "Where is homework done?",
        "crayons": "Where can the crayons be used?",
        "books": "How much of the dragon book do we read?",
        "clothes_school": "Where do I lay out Leo's school clothes?",
        "snacks": "Are sweets allowed in the bedroom?",
        "batteries": "Who changes the toy car's batteries?",
        "humidifier": "What water goes in the humidifier?",
        "bunk": "How does Leo get onto the top bunk?",
        "piano": "When does Leo practice the keyboard?",
        "friends": "Can friends stay over?",
    },
    "pet corner": {
        "dog_food": "How much dry food does Rex get?",
        "cat_food": "Which food does Mia the cat eat?",
        "water_bowl": "When do I refill the water bowls?",
        "treats": "How many treats can Rex have?",
        "litter": "When is the litter box fully changed?",
        "medicine_dog": "How does Rex get his joint tablet?",
        "chocolate": "Can the dog have chocolate?",
        "brush": "How often is Mia brushed?",
        "fish": "How many flakes do the goldfish get?",
        "aquarium": "How much aquarium water is changed?",
        "walks": "How many walks does Rex need?",
        "vet_card": "Where is the vet's phone number?",
        "sofa": "Can the dog sleep on the sofa?",
        "hamster": "When is the hamster's cage cleaned?",
        "toys": "When do the squeaky toys get put away?",
        "flea": "When is the flea treatment due?",
    },
    "garden shed": {
        "mower": "When does the lawnmower blade get sharpened?",
        "seeds": "Where are the seed packets?",
        "hose": "Should the hose be rolled up?",
        "pesticide": "Where are the slug pellets?",
        "gloves_garden": "Which gloves for pruning the roses?",
        "compost": "What goes on the compost?",
        "wheelbarrow": "Is the wheelbarrow tyre flat?",
        "shears": "Do the hedge shears need oil?",
        "bulbs": "When are the tulip bulbs planted?",
        "rain_barrel": "What is the rain barrel water for?",
        "shed_lock": "What's the shed padlock code?",
        "tomatoes": "When are the tomato plants tied to the canes?",
        "bbq": "Where does the barbecue gas bottle go?",
        "leaves": "Where do raked leaves go?",
        "spade": "Where does the spade hang?",
        "sprinkler": "When does the sprinkler run?",
    },
    "reception desk": {
        "badges": "Which badge do visitors get?",
        "parking": "Which spaces are for guest parking?",
        "deliveries": "When are deliveries brought to the mail room?",
        "wifi": "Where is the guest wifi password?",
        "director": "Does the director see visitors without an appointment?",
        "lost_found": "Where do lost items go?",
        "fire_drill": "What happens to the guest book during a fire alarm?",
        "phones": "How do I answer the phone?",
        "taxi": "How do I order taxis for guests?",
        "meeting_rooms": "Where are meeting rooms booked?",
        "couriers": "Can couriers go past the desk?",
        "coffee_guests": "What do I offer a visitor while they wait?",
        "keys_reception": "Where are the spare office keys?",
        "opening": "What are the reception hours?",
        "umbrellas_loan": "Where are the umbrellas for guests?",
        "press": "Where are journalists sent?",
    },
    "care home day room": {
        "mrs_lee_tea": "How does Mrs. Lee take her tea?",
        "mr_ortiz_walker": "Where should Mr. Ortiz's walker be?",
        "hearing_aid": "Where are Mrs. Brown's hearing aid batteries?",
        "tv": "When is the television turned off?",
        "visitors": "When may family visit?",
        "fall_risk": "Is Mr. Ortiz a fall risk?",
        "puzzles": "Where are the jigsaw puzzles?",
        "diabetic": "Can Mr. Singh have cake?",
        "glasses_case": "Where are Mrs. Lee's reading glasses?",
        "radio": "Which radio station does Mrs. Brown like?",
        "blankets": "Where are the blankets for the residents?",
        "games": "When is bingo?",
        "window_air": "When can the window be opened?",
        "water_intake": "How often is water offered?",
        "photos": "Can I take photos of the residents?",
        "cat_visit": "When does the therapy cat visit?",
    },
    "warehouse loading dock": {
        "forklift": "Where is the forklift key?",
        "pallets": "Where are broken pallets stacked?",
        "fragile": "Where do fragile boxes go?",
        "returns": "Where are returned goods checked in?",
        "dock_door": "When should the dock door be closed?",
        "hi_vis": "Do I need a high-visibility vest on the dock?",
        "cold_chain": "Where do chilled deliveries go?",
        "scanner": "Does every parcel get scanned?",
        "shrink_wrap": "How many times is a pallet wrapped with stretch film?",
        "weight": "Can one person lift more than twenty kilos?",
        "driver_waiting": "Where do truck drivers wait?",
        "chemicals": "Where are hazardous goods stored?",
        "damage_photo": "Should I photograph a damaged delivery?",
        "aisle": "Why must aisle four stay clear?",
        "battery_charge": "Where are the forklift batteries charged?",
        "labels_dock": "Which label do outgoing pallets need?",
    },
    "meeting room": {
        "projector": "Where is the projector remote?",
        "whiteboard": "Which markers for the whiteboard?",
        "booking": "When is the room booked for the stand-up?",
        "chairs_room": "Where do the chairs go after meetings?",
        "video": "How do I turn on the video call camera?",
        "cups": "Where do dirty cups go?",
        "thermostat": "What's the maximum thermostat setting?",
        "confidential": "When is the whiteboard wiped?",
        "hdmi": "Where's the HDMI adapter?",
        "catering": "How do I order catering?",
        "blinds_room": "When should the blinds be lowered?",
        "phone_speaker": "Where is the conference phone charged?",
        "flipchart": "Where is the flipchart paper?",
        "noise": "Should the door be closed during calls?",
        "lights": "What do I turn off when leaving the room?",
        "capacity": "How many people are allowed in the room?",
    },
    "library bookshelf": {
        "sorting_books": "How are the books shelved?",
        "first_editions": "Can the first editions be lent?",
        "borrowed": "Where do I write down who borrows a book?",
        "sunlight": "When should the curtains be closed?",
        "cookbooks": "Where do the cookbooks belong?",
        "kids_books": "Where are Leo's picture books?",
        "dust": "How often do I dust the shelves?",
        "atlas": "How is the big atlas stored?",
        "magazines": "When do old magazines go to recycling?",
        "ladder_library": "What do I use to reach the top shelf?",
        "bookmarks": "Where are the bookmarks?",
        "library_due": "Where do the library books from town go?",
        "signed": "Who is the signed novel for?",
        "humidity_books": "When does the dehumidifier run?",
        "reading_lamp": "Where are spare bulbs for the reading lamp?",
        "encyclopedia": "Can I take a volume of the encyclopedia to another room?",
    },
    "electronics bench": {
        "iron_temp": "What temperature is the soldering iron set to?",
        "esd": "When do I wear the antistatic wrist strap?",
        "resistors": "How are the resistors sorted?",
        "capacitors": "Which capacitors must be discharged?",
        "fume": "When is the fume extractor on?",
        "scope": "Where do the oscilloscope probes go?",
        "batteries_lipo": "Where are lithium batteries charged?",
        "psu": "What do I set on the lab power supply first?",
        "flux": "What cleans flux residue off the boards?",
        "arduino": "What are the Arduino boards in the blue box for?",
        "multimeter": "Should the multimeter be switched off after use?",
        "wire": "What is red wire for?",
        "tip": "When do I tin the soldering tip?",
        "components_order": "Where is the order list for missing parts?",
        "3d_printer": "Can the 3D printer run overnight?",
        "magnifier": "Why switch off the magnifying lamp?",
    },
    "pantry shelf": {
        "cans": "Where do newer cans go?",
        "gluten_free": "Where is Ben's gluten-free pasta?",
        "rice": "What is the rice kept in?",
        "onions": "Can onions and potatoes be stored together?",
        "oil": "Where does the olive oil stay?",
        "shopping_list": "Where is the shopping list?",
        "snacks_pantry": "Who are the crisps on the high shelf for?",
        "flour": "Where is the flour tin?",
        "baking": "Where are baking soda and baking powder?",
        "honey": "How do I warm crystallised honey?",
        "cereal": "How do I close the cereal bags?",
        "wine": "How are the wine bottles stored?",
        "expiry": "When do I check the expiry dates?",
        "nuts_pantry": "Where are the nuts kept?",
        "tea_pantry": "Where is the herbal tea?",
        "pet_food_pantry": "Where is the dog's food sack?",
    },
}
"""A second single request for every plain memory that keeps some of its words ("Is the blue
mug Anna's?"): how a person often asks, and where a keyword ranking is strong. Kind
``"shared"``; the reworded requests of kind ``"single"`` avoid the memory's words."""


POOLS: list[Pool] = _build()
"""Every place's stored memories and requests."""
