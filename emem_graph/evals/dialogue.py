"""Long-history dialogue evaluation: two weeks of talk between a person and a home robot.

The history is generated from hand-written templates and facts with a seeded RNG (the same
seed gives the same turns, times and questions): about five conversations a day (morning to
night, in the room the robot stands in), each of some thirty turns of chit-chat, requests,
plans, reminders, preferences, family news, appointments that get moved, things that get put
somewhere else, and the robot's own reports. Every turn is stored as one observation (text
``user: ...`` or ``robot: ...``, layer "dialogue", its time as the timestamp) through the public
API, with the consolidation a robot would run: each conversation is an episode (its gists are
written when it ends), the time window and maintenance run at the end of every day, and the
area forest is brought up to date before the questions (its area gists are searchable).

The questions paraphrase what was said (none shares four words in a row with its evidence);
their evidence is one or two turns. Many are about time: a day named relative to the end of
the history ("yesterday", "on Tuesday", "three days ago"), the latest or the first of several
mentions ("where are the spare keys now?", "when did I last bring up the dentist?"), or the
morning after an evening event. The same topics come up at other times (every day has a
shopping-list request, a chore, a lunch), so the words of a question alone do not single out
its evidence.

Three rankers answer every question in one run: "bm25" (plain Okapi BM25 over the turns,
here), "dense" (the memory with use_hybrid_retrieval=False) and "hybrid" (the default config),
both read through ``semantic_search(question, n_results=10)`` and matched back to the turns by
text. Figures: an evidence turn within the top 5, every evidence turn within the top 10, how
many of the ten slots are gists or entities, the median latency and how many answers change
when the same question is asked again; split by question type and by the number of evidence
turns, and listed per question (``per_question``: the rank of each evidence turn per ranker).

The memory keeps the turns' text for 60 days (KEEP_TURNS_SECONDS): with the default
archive_after_seconds the daily maintenance would leave only the conversations' gists.
"""

from __future__ import annotations

import functools
import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.ingest.embeddings import EmbeddingProvider, SentenceTransformerEmbedder
from emem_graph.memory import SpatioTemporalMemory

SEED = 21
DAILY_ASKED = 0.6
"""Share of the days whose everyday request (shopping, chore, lunch, ...) is asked about."""
FULL_DAYS = 14
QUICK_DAYS = 3
LAYER = "dialogue"
START = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
RANKERS = ("bm25", "dense", "hybrid")
TOP = 10
KEEP_TURNS_SECONDS = 60 * 86400.0
"""archive_after_seconds of the eval's memory: a robot that answers questions about what was
said two weeks ago keeps the turns' text (the default, one hour, archives every turn older than
an hour at the next maintenance and leaves only the gists)."""

# --- the home: rooms the robot talks in ----------------------------------------------------------

ROOMS = {
    "kitchen": (2.0, 3.0),
    "living room": (8.0, 4.0),
    "study": (8.5, 10.0),
    "bedroom": (2.5, 10.5),
    "hallway": (5.0, 7.0),
    "balcony": (11.5, 1.5),
}
# (name, start hour, rooms the conversation may happen in, phrase for questions)
SLOTS = (
    ("morning", 7.5, ("kitchen",), "in the morning"),
    ("late morning", 10.25, ("study", "living room", "hallway"), "mid-morning"),
    ("lunchtime", 12.6, ("kitchen",), "around lunch"),
    ("afternoon", 15.4, ("living room", "balcony", "study"), "in the afternoon"),
    ("evening", 18.75, ("living room", "kitchen"), "in the evening"),
    ("night", 21.5, ("bedroom", "living room"), "late in the evening"),
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# --- word lists ---------------------------------------------------------------------------------

GROCERIES = (
    "oat milk", "coffee beans", "dishwasher tablets", "rye bread", "cherry tomatoes",
    "olive oil", "laundry detergent", "free-range eggs", "bananas", "toilet paper",
    "greek yogurt", "basmati rice", "cat food", "lemons", "salted butter", "red onions",
    "paper towels", "honey", "orange juice", "cheddar", "frozen peas", "porridge oats",
)  # fmt: skip
CHORES = (
    "vacuum the hallway rug", "mop the kitchen floor", "wipe down the bathroom mirror",
    "dust the bookshelves in the study", "empty the recycling bin", "change the bed sheets",
    "clean the oven door", "tidy the shoe rack", "fold the laundry on the sofa",
    "descale the kettle", "clean out the fridge shelves", "sweep the balcony",
    "polish the dining table", "sort the recycling", "wash the kitchen windows",
    "scrub the bathtub",
)  # fmt: skip
DISHES = (
    "lentil soup", "chicken curry", "mushroom risotto", "grilled salmon", "vegetable lasagna",
    "beef stew", "spinach omelette", "tuna salad", "pumpkin soup", "shepherd's pie",
    "falafel wraps", "pad thai", "minestrone", "roast chicken", "stuffed peppers", "fish tacos",
    "miso ramen", "goulash", "ratatouille", "caesar salad", "leek quiche", "chili con carne",
    "seafood paella", "gnocchi with pesto",
)  # fmt: skip
LUNCH_COMMENTS = (
    "it was a bit too salty", "really filling", "I should make it more often",
    "not my best effort", "delicious as always", "the leftovers are in the fridge",
    "a little bland", "just what I needed", "far too spicy for me", "quick and easy",
)  # fmt: skip
SLEEP_CAUSES = (
    "the neighbour's dog barking", "a thunderstorm", "my back pain", "the heating clicking",
    "a noisy party down the street", "too much coffee in the evening", "a dripping tap",
    "a mosquito in the room", "worrying about the bills", "the streetlight through the curtains",
    "the cat jumping on the bed", "a car alarm outside", "a bad dream about falling",
    "heartburn after dinner",
)  # fmt: skip
DEVICES = (
    "iron", "bathroom fan", "hallway light", "television", "oven light", "radio", "desk lamp",
    "electric blanket", "hair straightener", "coffee machine", "balcony heater", "printer",
    "extractor hood", "bedside lamp",
)  # fmt: skip
REMINDERS = (
    ("call the plumber about the leak", "phone the person fixing the leak"),
    ("take my blood pressure pills", "swallow my heart medication"),
    ("phone the insurance company", "ring up the insurers"),
    ("put the bins out", "take the rubbish to the kerb"),
    ("pay the electricity bill", "settle the power invoice"),
    ("water the tomatoes on the balcony", "give the tomato plants a drink"),
    ("ring the pharmacy about my prescription", "chase the chemist about my medicine"),
    ("send the birthday card to Lina", "post a card for my cousin"),
    ("book the train tickets for Easter", "reserve seats on the railway for the holiday"),
    ("move the car for the street cleaning", "shift the vehicle before the sweepers"),
    ("check on the bread in the oven", "look at the loaf that's baking"),
    ("renew my library books", "extend the loan on the novels I borrowed"),
    ("call the council about the pothole", "complain to the town hall about the hole in the road"),
    ("defrost the chicken for dinner", "take the poultry out of the freezer"),
)  # fmt: skip

# Appointments: (topic in statements, its names in questions, outcome after it, later mention)
APPOINTMENTS = (
    ("the dentist", ("dental checkup", "teeth appointment"),
     "Back from the dentist, one small filling and a lecture about flossing.",
     "The bill from the dentist came today, ninety euros for that filling."),
    ("the optician", ("eye test", "appointment about my eyesight"),
     "Back from the optician, my reading prescription went up a little.",
     "The optician rang to say my new lenses are ready to collect."),
    ("the hairdresser", ("haircut", "appointment at the salon"),
     "Back from the hairdresser, she cut it much shorter than I asked.",
     "I still can't get used to how short the hairdresser made it."),
    ("the vet for Mochi", ("cat's checkup", "appointment for my cat"),
     "Back from the vet, Mochi has to lose some weight and hated the carrier.",
     "The vet sent the diet food for Mochi, it's in the hallway."),
    ("the garage for the car service", ("car maintenance", "appointment for my vehicle"),
     "Back from the garage, the brakes needed new pads but otherwise fine.",
     "The garage charged me more than they quoted for those brake pads."),
    ("the physiotherapist", ("physio session", "appointment for my back"),
     "Back from the physiotherapist, I have six new stretches to do every day.",
     "I skipped the stretches the physiotherapist gave me, please nag me."),
)  # fmt: skip
APPOINTMENT_TIMES = ("9:15", "10:30", "11:45", "2:00", "3:30", "4:15")

# Things that live somewhere and get moved: (name in statements, name in questions, plural)
THINGS = (
    ("spare keys", "backup house keys", True),
    ("passport", "travel document", False),
    ("umbrella", "brolly", False),
    ("phone charger", "charging cable for my mobile", False),
    ("reading glasses", "specs I read with", True),
    ("big scissors", "large shears", True),
    ("first aid kit", "box of plasters and bandages", False),
    ("torch", "flashlight", False),
    ("spare batteries", "extra batteries", True),
    ("cheque book", "checkbook", False),
)  # fmt: skip
PLACES = (
    "the top kitchen drawer", "the blue bowl by the front door",
    "the shelf above the washing machine", "the second drawer of the desk",
    "the basket under the stairs", "the bedside table", "the hallway cupboard",
    "the tin on the bookshelf", "the glovebox of the car", "the sewing box in the bedroom",
    "the cabinet in the bathroom", "the pocket of my grey coat", "the fruit bowl",
    "the drawer under the microwave",
)  # fmt: skip

# Visitors: (relation, name, pronoun, purpose, what they did)
VISITORS = (
    ("my sister", "Anna", "she", "help me sort the old photo albums",
     "Anna just left, she took half the photo albums home and fixed the dripping tap."),
    ("my son", "Tom", "he", "put up the new curtain rail",
     "Tom just left, he put the curtain rail up crooked and we laughed about it."),
    ("my old friend", "Jorge", "he", "play chess and catch up",
     "Jorge just left, he beat me twice at chess and brought a bottle of port."),
    ("my cousin", "Lina", "she", "talk about the wedding plans",
     "Lina just left, she showed me the invitations and asked me to give a speech."),
    ("my neighbour", "Mrs. Patel", "she", "drop off the spare seedlings",
     "Mrs. Patel just left, she planted the seedlings herself and stayed for tea."),
    ("my granddaughter", "Zoe", "she", "do her school project with me",
     "Zoe just left, she built a volcano out of clay on the kitchen table."),
)  # fmt: skip

# Evening events and the request the next morning: (event statement, question name, request)
EVENTS = (
    ("We're having a little party tonight for Tom's promotion, expect some noise.",
     "the celebration for my son", "Could you collect the glasses from the living room and "
     "load the dishwasher?", "What were we celebrating at the party?"),
    ("Game night with the neighbours tonight, set up the card table please.",
     "the evening of cards with the people next door",
     "Please fold the card table away and put it in the hallway cupboard.",
     "Who came round to play games?"),
    ("The book club meets here tonight, eight of us, so we need extra chairs.",
     "my reading group's meeting", "Take the extra chairs back out to the garage, would you?",
     "How many people were expected for the reading group?"),
    ("Movie night with the grandkids tonight, we'll make popcorn.",
     "the film evening with the children",
     "There's popcorn everywhere, please vacuum under the sofa cushions.",
     "What snack did I plan for watching films with the kids?"),
    ("My old colleagues are coming for dinner tonight, I'm nervous about the roast.",
     "the dinner with my former workmates",
     "Open all the windows and air the place out, it still smells of roast.",
     "What was I anxious about before my ex-coworkers came to eat?"),
)  # fmt: skip

# Preferences: (statement, question); the first one changes later.
PREFERENCES = (
    ("I take my coffee with oat milk and no sugar.", "How do I like my morning cup prepared?"),
    ("I can't stand cilantro, please never put it in anything for me.",
     "Which herb do I refuse to eat?"),
    ("Keep the bedroom at nineteen degrees at night, I sleep better when it's cool.",
     "How warm should the room I sleep in be overnight?"),
    ("I'm allergic to peanuts, so check the labels for me.",
     "What food could give me a reaction?"),
    ("My favourite radio station is Jazz FM, put it on whenever I'm cooking.",
     "Which channel should be playing while I prepare food?"),
    ("Please don't vacuum before nine at weekends, I like to sleep in.",
     "Is there an hour before which noisy cleaning is not welcome on Saturdays?"),
    ("I prefer the blinds half open in the afternoon, the sun hurts my eyes.",
     "How should the window shades be set after lunch?"),
    ("I like my tea strong, let it steep for five minutes.",
     "How long should my tea brew?"),
    ("Call me Maggie, nobody calls me Margaret except the bank.",
     "What name would I like you to use for me?"),
    ("I don't want the television on during dinner any more.",
     "What should be switched off while I eat my evening meal?"),
    ("I support Celtic, always have, tell me when they play.",
     "Which football club am I a fan of?"),
    ("Knock before you come into the study, I don't like surprises.",
     "What should you do before entering my office?"),
    ("I like the hallway light left on at night in case I get up.",
     "Which lamp should stay lit overnight?"),
    ("Please speak a bit slower, my hearing isn't what it was.",
     "How should you talk to me so I can follow?"),
    ("I like my eggs soft boiled, four minutes, not a second more.",
     "How long should my eggs be cooked?"),
    ("Don't move the papers on my desk, I have a system even if it looks messy.",
     "What should you leave alone in the study?"),
    ("I'd rather have the news on the radio than on the television.",
     "How do I prefer to hear the headlines?"),
    ("Wake me at half past seven on weekdays, but let me sleep on Sundays.",
     "At what time do I want waking from Monday to Friday?"),
)  # fmt: skip
COFFEE_CHANGE = (
    "From now on I'd like almond milk in my coffee instead of oat.",
    "What goes in my coffee these days?",
    "What did I take in my coffee before I switched?",
)
FACTS = (
    ("The neighbours' dog is called Biscuit, he barks at the postman.",
     "What's the name of the pet next door?"),
    ("The guest wifi password is on the card under the router.",
     "Where can visitors find the internet code?"),
    ("My cat Mochi turns twelve this year.", "How old is my cat?"),
    ("Tom works as a nurse at the city hospital.", "What does my son do for a living?"),
    ("The boiler was serviced by a man called Greg from Hartley Heating.",
     "Who did the maintenance on the water heater?"),
    ("Zoe started at Riverside Primary last September.",
     "Which school does my granddaughter attend?"),
    ("The bins are collected on Wednesday nights, recycling every other week.",
     "On which night is the rubbish picked up?"),
    ("Lina is getting married in June in Porto.", "Where is my cousin's wedding?"),
    ("I taught geography at the secondary school for thirty years.",
     "Which subject was I a teacher of?"),
    ("The radiator in the spare room knocks when it heats up.",
     "Which heater makes a banging noise?"),
    ("My doctor is Dr. Okafor at the Elm Street practice.", "Who is my GP?"),
    ("The lemon tree on the balcony was a present from Anna.",
     "Who gave me the citrus plant outside?"),
    ("I'm reading a novel about a lighthouse keeper on a Scottish island.",
     "What's the book I'm currently on about?"),
    ("My late husband Peter loved sailing more than anything.",
     "What hobby did my husband have?"),
    ("The fuse box is behind the coats in the hallway cupboard.",
     "Where is the electrical panel?"),
    ("My pension is paid on the last Friday of the month.",
     "When does my retirement money arrive?"),
    ("Jorge and I met on a walking holiday in the Pyrenees in 1979.",
     "Where did I first get to know Jorge?"),
    ("The spare bedroom used to be Tom's, his trophies are still on the shelf.",
     "Whose room was the guest room originally?"),
    ("My blood pressure tablets are the small white ones, the vitamins are yellow.",
     "What colour are my heart pills?"),
    ("Anna's husband Marco is an engineer at the shipyard.",
     "What does my sister's husband do for work?"),
    ("The cat flap sticks in cold weather, you have to push it twice.",
     "What's the trick with Mochi's little door when it's chilly?"),
    ("My favourite film is Casablanca, I've seen it about forty times.",
     "Which movie do I love most?"),
    ("The house was built in 1932, that's why the floors creak so much.",
     "How old is this building?"),
    ("The water meter is in the cellar behind the paint tins.",
     "Where would someone read the water usage?"),
    ("I sing in the church choir on Thursday evenings.",
     "What do I do at church each week?"),
    ("Zoe wants to be a vet when she grows up.",
     "What job does my granddaughter dream of?"),
    ("Peter and I got married in Galway in 1975.",
     "Where was my wedding?"),
    ("The piano in the living room was my grandmother's.",
     "Who did the piano belong to before me?"),
)  # fmt: skip
# Jobs the robot does by itself every few days: (report template, question name)
ROBOT_JOBS = (
    ("I watered the plants on the balcony and by the window, the soil was {state}.",
     ("dry", "still damp", "bone dry", "a bit dusty"),
     "When did you last water the plants?",
     "On which day did you first give the houseplants a drink?"),
    ("I cleaned Mochi's litter tray and put fresh litter in, {state}.",
     ("it was overdue", "all done", "the bag is nearly empty"),
     "When did you last clean the litter tray?",
     "On which day did you first see to the cat's toilet?"),
    ("I fed the fish in the living room tank, they looked {state}.",
     ("lively", "hungry", "a bit sluggish", "healthy"),
     "When did you last feed the fish?",
     "On which day were the aquarium's residents first given food?"),
    ("I emptied my dust container and cleaned my brushes, they were {state}.",
     ("full of cat hair", "clogged", "fairly clean"),
     "When did you most recently clear out your own dirt bin?",
     "On which day did you first clear out your own dirt bin?"),
)  # fmt: skip

# --- filler: chit-chat and everyday requests ----------------------------------------------------

OPENERS = ("", "Hey, ", "Robot, ", "Hmm, ", "So, ", "Quick question, ", "By the way, ", "Oh, ")
LATER = ("this afternoon", "tonight", "tomorrow", "later on", "this weekend", "tomorrow morning")
WEATHER = ("Sunny", "Cloudy", "Light rain", "Heavy showers", "Overcast", "Windy and dry",
           "Foggy early, then bright", "Drizzle on and off", "Clear skies",
           "Sleet possible")  # fmt: skip
GENRES = ("some jazz", "classical piano", "old country songs", "the morning news",
          "a gardening podcast", "some Motown", "folk music", "the cricket commentary",
          "some opera", "soft rock", "the local radio", "an audiobook")  # fmt: skip
FAMILY_NEWS = (
    "sounds busy with work", "has a cold again", "is thinking of getting a dog",
    "booked a trip to Lisbon", "is painting the kitchen", "asked after you",
    "lost his phone on the bus", "started a pottery class", "is worried about the exams",
    "got a new bike",
)  # fmt: skip
JOKE_TOPICS = ("cats", "robots", "gardening", "the weather", "cooking", "trains", "doctors")
TV_KINDS = ("quiz show", "nature documentary", "crime drama", "cooking competition",
            "old western", "football match", "history programme", "comedy panel")  # fmt: skip
TV_TITLES = ("Hidden Coast", "The Long Field", "Night Harbour", "Bake Off Live",
             "Wild Islands", "The Last Orchard", "Blue Ridge", "Murder at Millbrook",
             "The Quiz Hour", "River Lives")  # fmt: skip
ACHES = ("my knee", "my lower back", "my shoulder", "my left wrist", "my neck", "my hip")
SUGGESTIONS = ("bring you the heat pad", "fetch a glass of water", "put on some calm music",
               "remind you about your stretches", "call Tom", "dim the lights")  # fmt: skip
ROOM_NAMES = tuple(ROOMS)
PEOPLE = ("Anna", "Tom", "Jorge", "Lina", "Mrs. Patel", "Zoe", "Peter's brother")
CALLERS = ("Anna", "Tom", "Lina", "Jorge")


@dataclass(frozen=True)
class Turn:
    """One stored turn: its id (0, 1, ... in time order), time, room and text."""

    id: int
    time: float
    room: str
    x: float
    y: float
    session: int
    text: str


@dataclass(frozen=True)
class Question:
    """A question, the ids of the turns that answer it, and its type ("time" or "other")."""

    id: int
    text: str
    evidence: tuple[int, ...]
    kind: str
    family: str


@dataclass(frozen=True)
class Dialogue:
    """The generated history: turns in time order, sessions' (start, end, name), questions,
    and the clock's time when the questions are asked (after the last turn)."""

    turns: tuple[Turn, ...]
    sessions: tuple[tuple[float, float, str], ...]
    questions: tuple[Question, ...]
    now: float
    seed: int
    days: int


@dataclass
class _Segment:
    lines: list[str]
    key: str | None = None


@dataclass
class _Session:
    index: int
    day: int
    slot: int
    room: str
    segments: list[_Segment] = field(default_factory=list)


@dataclass
class _Ask:
    text: str
    refs: list[tuple[str, int]]
    kind: str
    family: str


class DialogueError(RuntimeError):
    """The generator produced an inconsistent set (a bug in the templates)."""


def words(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits): the BM25 tokens and the copy check's."""
    return re.findall(r"[a-z0-9]+", text.lower())


def in_room(room: str) -> str:
    """ "in the kitchen", "on the balcony"."""
    return f"on the {room}" if room == "balcony" else f"in the {room}"


def article(noun: str) -> str:
    """ "a quiz show", "an old western"."""
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def clock_time(hours: float) -> str:
    """A time of day as a person says it: 13.75 -> "1:45"."""
    minutes = round(hours * 60)
    return f"{(minutes // 60 - 1) % 12 + 1}:{minutes % 60:02d}"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def shared_run(question: str, evidence: str, n: int = 4) -> bool:
    """Whether ``question`` shares ``n`` words in a row with ``evidence`` (its speaker left out)."""
    body = evidence.split(": ", 1)[-1]
    q, e = words(question), words(body)
    grams = {tuple(e[i : i + n]) for i in range(len(e) - n + 1)}
    return any(tuple(q[i : i + n]) in grams for i in range(len(q) - n + 1))


def _news(rng: random.Random, name: str, pronoun: str) -> str:
    when = rng.choice(("earlier", "just now", "this week"))
    how = rng.choice(("phoned", "texted", "emailed"))
    return f"user: {name} {how} {when}, {pronoun} {rng.choice(FAMILY_NEWS)}."


def _job(rng: random.Random, template: str, states: Sequence[str]) -> str:
    return "robot: " + template.format(state=rng.choice(states))


class _Builder:
    """Plans the sessions, places the story's segments, fills the rest with chit-chat."""

    def __init__(self, days: int, seed: int) -> None:
        self.days = days
        self.last = days - 1
        self.rng = random.Random(seed)
        self.used: set[str] = set()
        self.reserved: set[str] = set()
        self.asks: list[_Ask] = []
        self.sessions: list[_Session] = []
        for day in range(days):
            extra = self.rng.sample([1, 2, 3, 5], 3)
            for slot in sorted([0, 4, *extra]):
                room = self.rng.choice(SLOTS[slot][2])
                self.sessions.append(_Session(len(self.sessions), day, slot, room))
        self._keys = 0

    # --- helpers ---------------------------------------------------------------------------------

    def of_day(self, day: int) -> list[_Session]:
        return [s for s in self.sessions if s.day == day]

    def session(self, day: int, slots: Sequence[int] | None = None, *, not_last: bool = False,
                not_first: bool = False) -> _Session:  # fmt: skip
        options = self.of_day(day)
        if not_last:
            options = options[:-1]
        if not_first:
            options = options[1:]
        if slots is not None:
            options = [s for s in options if s.slot in slots] or options
        return self.rng.choice(options)

    def later_session(self, after: _Session) -> _Session:
        options = [s for s in self.sessions if s.day == after.day and s.index > after.index]
        return self.rng.choice(options)

    def put(self, session: _Session, *lines: str) -> str:
        """Place a story segment in ``session``; its lines must be new. Returns its key."""
        for line in lines:
            if line in self.reserved:  # made by unique(): already checked
                self.reserved.discard(line)
                continue
            if line in self.used:
                raise DialogueError(f"duplicate turn text: {line!r}")
            self.used.add(line)
        self._keys += 1
        key = f"s{self._keys}"
        session.segments.append(_Segment(list(lines), key))
        return key

    def ask(self, text: str, refs: list[tuple[str, int]], kind: str, family: str) -> None:
        self.asks.append(_Ask(text, refs, kind, family))

    def unique(self, make: Callable[[], str], tries: int = 60) -> str | None:
        for _ in range(tries):
            text = make()
            if text not in self.used:
                self.used.add(text)
                self.reserved.add(text)
                return text
        return None

    def ack(self) -> str:
        """A robot acknowledgement that carries no fact (unique)."""
        rng = self.rng
        heads = ("Okay", "Got it", "Noted", "Understood", "Sure", "Right", "All right",
                 "Will do", "Of course", "No problem")  # fmt: skip
        tails = (
            lambda: f"my battery is at {rng.randint(20, 99)} percent.",
            lambda: f"it's {rng.randint(14, 24)} degrees in here right now.",
            lambda: f"I'll be charging in about {rng.randint(5, 55)} minutes.",
            lambda: f"that's item {rng.randint(2, 60)} in my notes this week.",
            lambda: f"the house has been quiet for {rng.randint(2, 50)} minutes.",
            lambda: f"I've logged it at {rng.randint(1, 12)}:{rng.randint(0, 59):02d}.",
        )
        text = self.unique(lambda: f"robot: {rng.choice(heads)}, {rng.choice(tails)()}")
        if text is None:
            raise DialogueError("ran out of acknowledgements")
        return text

    def weekday(self, day: int) -> str:
        return WEEKDAYS[(START + timedelta(days=day)).weekday()]

    def day_ref(self, day: int) -> str:
        """How a question names ``day`` (relative to the last day of the history)."""
        back = self.last - day
        if back == 0:
            return "today"
        if back == 1:
            return "yesterday"
        if back == 2:
            return self.rng.choice(("the day before yesterday", "two days ago"))
        if back < 7:
            return self.rng.choice((f"on {self.weekday(day)}", f"{back} days ago"))
        date = START + timedelta(days=day)
        return f"on {self.weekday(day)} the {ordinal(date.day)} of {date.strftime('%B')}"

    def part_ref(self, day: int, slot: int) -> str:
        """How a question names a part of ``day``: "this morning", "yesterday evening", "last
        night", "on Tuesday in the afternoon", "around lunchtime 3 days ago"..."""
        part = ("morning", "morning", "lunchtime", "afternoon", "evening", "night")[slot]
        back = self.last - day
        if back == 0:
            return {"lunchtime": "at lunchtime today", "night": "tonight"}.get(part, f"this {part}")
        if back == 1:
            special = {"lunchtime": "yesterday at lunchtime", "night": "last night"}
            return special.get(part, f"yesterday {part}")
        phrase = {"lunchtime": "around lunchtime", "night": "late at night"}
        return f"{self.day_ref(day)} {phrase.get(part, f'in the {part}')}"

    def scaled(self, full: int) -> int:
        return max(1, round(full * self.days / FULL_DAYS))

    # --- the story -------------------------------------------------------------------------------

    def daily(self) -> None:
        rng = self.rng
        groceries = rng.sample(GROCERIES, len(GROCERIES))
        chores = rng.sample(CHORES, len(CHORES))
        devices = rng.sample(DEVICES, len(DEVICES))
        causes = rng.sample(SLEEP_CAUSES, len(SLEEP_CAUSES))
        reminders = rng.sample(REMINDERS, len(REMINDERS))
        lunches = [d for d in rng.sample(DISHES, len(DISHES))]
        for day in range(self.days):
            ref = self.day_ref(day)

            def asked(text: str, key: str, family: str, refs: tuple[int, ...] = (0,)) -> None:
                # not every day's instance is asked about: the others stay as distractors
                if rng.random() < DAILY_ASKED:
                    self.ask(text, [(key, i) for i in refs], "time", family)

            item = groceries[day % len(groceries)]
            said = rng.choice((
                f"Put {item} on the shopping list, we're almost out.",
                f"Can you add {item} to the shopping list?",
                f"We need {item}, write it down for the next trip to the shop.",
                f"Don't let me forget {item} when I go to the supermarket.",
            ))  # fmt: skip
            key = self.put(self.session(day), f"user: {said}", self.ack())
            asked(rng.choice((
                f"What went on my shopping list {ref}?",
                f"What did I say we were running out of {ref}?",
                f"Which grocery did I ask you to note down {ref}?",
            )), key, "shopping")  # fmt: skip

            chore = chores[day % len(chores)]
            said = rng.choice((
                f"Could you {chore} when you have a moment?",
                f"I'd like you to {chore} today.",
                f"Please {chore}, it's been a while.",
                f"Before I forget, {chore} for me, would you?",
            ))  # fmt: skip
            where = self.session(day)
            key = self.put(where, f"user: {said}", self.ack())
            when = self.part_ref(day, where.slot) if rng.random() < 0.5 else ref
            asked(rng.choice((
                f"Which chore did I ask you to do {when}?",
                f"What cleaning did I want done {when}?",
                f"Which household job did I give you {when}?",
            )), key, "chore")  # fmt: skip

            dish = lunches[day % len(lunches)]
            comment = rng.choice(LUNCH_COMMENTS)
            said = rng.choice(
                (
                    f"Lunch was {dish}, {comment}.",
                    f"I just had {dish} for lunch, {comment}.",
                    f"For lunch I ate {dish}; {comment}.",
                )
            )
            key = self.put(self.session(day, (2, 3)), f"user: {said}", self.ack())
            asked(rng.choice((
                f"What did I have for lunch {ref}?",
                f"What did I tell you I ate at midday {ref}?",
            )), key, "lunch")  # fmt: skip
            if rng.random() < 0.5:
                self.ask(rng.choice((
                    f"What did I think of the {dish} I ate at midday?",
                    f"How was the {dish} I had as my midday meal?",
                )), [(key, 0)], "other", "lunch-verdict")  # fmt: skip

            if rng.random() < 0.65:
                cause = causes[day % len(causes)]
                said = rng.choice((
                    f"I slept badly, {cause} kept me awake.",
                    f"Rough night, it was {cause} that stopped me sleeping.",
                    f"Barely got any sleep because of {cause}.",
                ))  # fmt: skip
                key = self.put(self.session(day, (0,)), f"user: {said}", self.ack())
                asked(rng.choice((
                    f"Why did I sleep badly {ref}?",
                    f"What kept me awake, according to what I said {ref}?",
                    f"Why did I have a bad night {ref}?",
                )), key, "sleep")  # fmt: skip
            else:
                rested = self.unique(lambda: "user: " + rng.choice((
                    f"Slept like a log, {rng.randint(6, 10)} hours straight.",
                    f"Good night's sleep for once, woke up at {rng.randint(5, 8)}:"
                    f"{rng.choice(('00', '15', '30', '45'))}.",
                )))  # fmt: skip
                if rested is not None:
                    self.put(self.session(day, (0,)), rested, self.ack())

            device = devices[day % len(devices)]
            room = rng.choice([r for r in ROOM_NAMES if r.split()[0] not in device])
            said = rng.choice(
                (
                    f"robot: I noticed the {device} {in_room(room)} was left on, so I switched "
                    "it off.",
                    f"robot: The {device} was still running {in_room(room)}; I turned it off.",
                )
            )
            where = self.session(day)
            key = self.put(where, said)
            when = self.part_ref(day, where.slot) if rng.random() < 0.5 else ref
            asked(rng.choice((
                f"What did you find left on and turn off {when}?",
                f"What appliance had been left running that you shut down {when}?",
                f"{when[0].upper()}{when[1:]}, which device did you find switched on?",
            )), key, "left-on")  # fmt: skip
            if rng.random() < 0.5:
                self.ask(f"In which room had the {device} been left running?", [(key, 0)],
                         "other", "left-on-where")  # fmt: skip

            task, paraphrase = reminders[day % len(reminders)]
            first = self.session(day, not_last=True)
            later = self.later_session(first)
            hour = clock_time(SLOTS[later.slot][1])  # due as the later conversation starts
            key = self.put(first, f"user: Remind me at {hour} to {task}.", self.ack())
            nudge = self.put(
                later, f"robot: It's past {hour}, you asked me to remind you to {task}."
            )
            if rng.random() < DAILY_ASKED:
                self.ask(
                    rng.choice(
                        (
                            f"What did I ask you to remind me about {ref}, and did you?",
                            f"{ref[0].upper()}{ref[1:]}, what was the reminder I set, and did you "
                            "deliver it?",
                        )
                    ),
                    [(key, 0), (nudge, 0)],
                    "time",
                    "reminder",
                )
            self.ask(f"When did I want to be told to {paraphrase}?", [(key, 0)], "time",
                     "reminder-when")  # fmt: skip

    def cooking(self) -> None:
        rng = self.rng
        count = min(7, self.scaled(8))
        dishes = rng.sample(DISHES, len(DISHES))
        who = ("the grandkids", "my book club friends", "Anna and her husband", "the neighbours",
               "just me", "Tom and his wife", "Jorge")  # fmt: skip
        days = list(range(1, self.days))
        rng.shuffle(days)
        weekdays_used: set[str] = set()
        placed = 0
        for target in days:
            if placed >= count:
                break
            name = self.weekday(target)
            if name in weekdays_used:
                continue
            weekdays_used.add(name)
            placed += 1
            said_day = max(0, target - rng.randint(1, 3))
            dish = dishes[placed]
            guest = who[placed % len(who)]
            plan = rng.choice((
                f"On {name} I'm going to cook {dish} for {guest}.",
                f"I'm planning {dish} for {name} dinner, it's for {guest}.",
                f"{name} night I'll make {dish}; {guest} will be eating with me.",
            ))  # fmt: skip
            first = self.session(said_day, not_last=said_day == target)
            key = self.put(first, f"user: {plan}", self.ack())
            verdict = rng.choice(("was a hit, not a crumb left", "came out dry, I overcooked it",
                                  "was fine but needed more salt", "burned at the bottom",
                                  "got second helpings from everyone"))  # fmt: skip
            options = [s for s in self.of_day(target) if s.slot >= 4 and s.index > first.index]
            outcome_session = rng.choice(options or [self.of_day(target)[-1]])
            outcome = self.put(outcome_session, f"user: The {dish} {verdict}.", self.ack())
            self.ask(rng.choice((
                f"What did I say I'd cook on {name}?",
                f"What meal was I planning to prepare on {name}?",
                f"Which dish did I say would be on the table {name} evening?",
            )), [(key, 0)], "time", "cooking-plan")  # fmt: skip
            self.ask(rng.choice((f"For whom was I making the {dish}?",
                                 f"Who was going to eat the {dish} I planned?")),
                     [(key, 0)], "other", "cooking-guest")  # fmt: skip
            self.ask(
                f"How did the food I planned for {name} turn out?",
                [(key, 0), (outcome, 0)],
                "time",
                "cooking-outcome",
            )
            # talk about the same dish at another time, without a plan
            other = self.session(rng.randrange(self.days))
            self.put(other, "user: " + rng.choice((
                f"Do you think {dish} freezes well?",
                f"I saw a recipe for {dish} in the paper, looked complicated.",
                f"My mother used to make {dish} every winter.",
            )), self.ack())  # fmt: skip

    def chain(self, count: int) -> list[_Session]:
        """``count`` sessions in time order, spread over the history."""
        return [self.sessions[i] for i in sorted(self.rng.sample(range(len(self.sessions)), count))]

    def appointments(self) -> None:
        rng = self.rng
        count = min(len(APPOINTMENTS), self.scaled(6) + (1 if self.days < FULL_DAYS else 0))
        for topic, names, after_text, later_text in rng.sample(APPOINTMENTS, count):
            s_book, s_move, s_visit, s_last = self.chain(4)
            first_name, other_name = names
            plain = topic.removeprefix("the ").split(" for ")[0]  # "dentist", "garage", ...
            if rng.random() < 0.5:
                first_name = f"{plain} appointment"
            t1, t2 = rng.sample(APPOINTMENT_TIMES, 2)
            visit_day = self.weekday(s_visit.day)
            planned = self.weekday(min(self.last, s_move.day + 1))
            if planned == visit_day:
                planned = self.weekday(s_move.day + 2)
            b = self.put(s_book, f"user: I booked {topic} for {planned} at {t1}.", self.ack())
            c = self.put(s_move, f"user: {topic[0].upper()}{topic[1:]} called, they moved me "
                                 f"to {visit_day} at {t2}.", self.ack())  # fmt: skip
            v = self.put(s_visit, f"user: {after_text}", self.ack())
            m = self.put(s_last, f"user: {later_text}", self.ack())
            if s_book.index > 0:  # an early mention, so that "first" is a real question
                self.put(self.sessions[rng.randrange(s_book.index)], "user: " + rng.choice((
                    f"I really need to sort out {topic} soon.",
                    f"I keep putting off {topic}, it's overdue.",
                )), self.ack())  # fmt: skip
            self.ask(f"What time was my {first_name} originally booked for?", [(b, 0)], "time",
                     "appointment-first")  # fmt: skip
            self.ask(rng.choice((
                f"After the change, which day is my {other_name}?",
                f"When was the {first_name} rescheduled to?",
            )), [(c, 0)], "time", "appointment-moved")  # fmt: skip
            self.ask(f"How did the {other_name} go?", [(v, 0)], "other", "appointment-outcome")
            self.ask(f"When did I last say anything about the {first_name}?", [(m, 0)], "time",
                     "appointment-last")  # fmt: skip
            self.ask(
                f"Which day was the {other_name} first set for, and which day did it move to?",
                [(b, 0), (c, 0)],
                "time",
                "appointment-both",
            )

    def session_of(self, key: str) -> _Session:
        for s in self.sessions:
            if any(seg.key == key for seg in s.segments):
                return s
        raise DialogueError(f"no segment {key}")

    def things(self) -> None:
        rng = self.rng
        count = min(len(THINGS), self.scaled(8) + (1 if self.days < FULL_DAYS else 0))
        for name, other, plural in rng.sample(THINGS, count):
            be = "are" if plural else "is"
            them = "them" if plural else "it"
            they = "they" if plural else "it"
            plain = name if len(name.split()) < 3 else other  # no four words copied
            places = rng.sample(PLACES, 3)
            moves = 2 if rng.random() < 0.5 and self.days > 4 else 1
            chain = self.chain(moves + 1)
            keys = [self.put(chain[0], f"user: I keep the {name} in {places[0]} from now on.",
                             self.ack())]  # fmt: skip
            for n, where in enumerate(chain[1:]):
                said = rng.choice((
                    f"I moved the {name} to {places[n + 1]}.",
                    f"The {name} {be} in {places[n + 1]} now, I shifted {them} earlier.",
                    f"Heads up, I put the {name} in {places[n + 1]} instead.",
                ))  # fmt: skip
                keys.append(self.put(where, f"user: {said}", self.ack()))
            chat = self.session(rng.randrange(self.days))
            self.put(chat, "user: " + rng.choice((
                f"I can never find the {name} when I need {them}.",
                f"Remind me to buy a second set of {name}, just in case." if plural
                else f"The {name} is getting old, I might need a new one.",
            )), self.ack())  # fmt: skip
            self.ask(rng.choice((f"Where {be} the {other} kept at the moment?",
                                 f"Where would I find the {other} today?",
                                 f"Where {be} the {plain} now?")),
                     [(keys[-1], 0)], "time", "thing-now")  # fmt: skip
            self.ask(rng.choice((
                f"Where did the {other} live before the last time I moved {them}?",
                f"Where {'were' if plural else 'was'} the {plain} before I last moved {them}?",
            )),
                     [(keys[-2], 0)], "time", "thing-before")  # fmt: skip
            if moves == 2:
                self.ask(f"Where did I first keep the {other}, and where did {they} end up?",
                         [(keys[0], 0), (keys[-1], 0)], "time", "thing-both")  # fmt: skip

    def visitors(self) -> None:
        rng = self.rng
        count = min(len(VISITORS), self.scaled(6) + (1 if self.days < FULL_DAYS else 0))
        used: set[str] = set()
        for relation, name, pronoun, purpose, after in rng.sample(VISITORS, count):
            for _ in range(20):
                visit = rng.randint(1, self.last)
                if self.weekday(visit) not in used:
                    break
            used.add(self.weekday(visit))
            told = max(0, visit - rng.randint(1, 4))
            first = self.session(told, not_last=True)
            announce = (f"user: {relation[0].upper()}{relation[1:]} {name} is coming over on "
                        f"{self.weekday(visit)} to {purpose}.")  # fmt: skip
            a = self.put(first, announce, self.ack())
            options = [s for s in self.of_day(visit) if s.index > first.index and s.slot >= 3]
            b = self.put(rng.choice(options or [self.later_session(first)]), f"user: {after}",
                         self.ack())  # fmt: skip
            # family talk about the same person at other times
            news = self.unique(functools.partial(_news, rng, name, pronoun))
            if news is not None:
                self.put(self.session(rng.randrange(self.days)), news, self.ack())
            self.ask(f"Who did I say would come by on {self.weekday(visit)}?", [(a, 0)], "time",
                     "visitor-who")  # fmt: skip
            self.ask(f"What did {relation} get up to when visiting me?", [(a, 0), (b, 0)],
                     "other", "visitor-did")  # fmt: skip
            self.ask(f"For what reason was {relation} dropping in?", [(a, 0)], "other",
                     "visitor-why")  # fmt: skip

    def events(self) -> None:
        rng = self.rng
        count = min(len(EVENTS), self.scaled(5))
        days = rng.sample(range(self.last), min(count, self.last))
        for (event, name, request, about), day in zip(rng.sample(EVENTS, count), days,
                                                      strict=False):  # fmt: skip
            evening = [s for s in self.of_day(day) if s.slot >= 3] or self.of_day(day)[-1:]
            a = self.put(rng.choice(evening), f"user: {event}", self.ack())
            b = self.put(self.of_day(day + 1)[0], f"user: {request}", self.ack())
            self.ask(f"What did I ask you to do the morning after {name}?", [(a, 0), (b, 0)],
                     "time", "morning-after")  # fmt: skip
            self.ask(about, [(a, 0)], "other", "event")

    def preferences(self) -> None:
        rng = self.rng
        count = min(len(PREFERENCES), self.scaled(len(PREFERENCES)))
        chosen = PREFERENCES[:1] + tuple(rng.sample(PREFERENCES[1:], count - 1))
        coffee: str | None = None
        for said, question in chosen:
            key = self.put(self.session(rng.randint(0, max(0, self.last - 1))),
                           f"user: {said}", self.ack())  # fmt: skip
            if said == PREFERENCES[0][0]:
                coffee = key
            else:
                self.ask(question, [(key, 0)], "other", "preference")
        if coffee is not None:
            start = self.session_of(coffee)
            options = [s for s in self.sessions if s.day > start.day] or [self.later_session(start)]
            change = self.put(rng.choice(options), f"user: {COFFEE_CHANGE[0]}", self.ack())
            self.ask(COFFEE_CHANGE[1], [(change, 0)], "time", "preference-now")
            self.ask(COFFEE_CHANGE[2], [(coffee, 0)], "time", "preference-before")
        # the same subjects in passing
        for text in ("user: This coffee is lovely, thank you.", "user: Make me a tea, would you?",
                     "user: Is the football on tonight?", "user: Turn the TV down a bit.",
                     "user: Open the blinds in the living room please.",
                     "user: The bedroom feels stuffy tonight."):  # fmt: skip
            self.put(self.session(rng.randrange(self.days)), text, self.ack())

    def facts(self) -> None:
        rng = self.rng
        count = min(len(FACTS), self.scaled(len(FACTS)))
        for said, question in rng.sample(FACTS, count):
            key = self.put(self.session(rng.randrange(self.days)), f"user: {said}", self.ack())
            self.ask(question, [(key, 0)], "other", "fact")

    def robot_jobs(self) -> None:
        rng = self.rng
        count = min(len(ROBOT_JOBS), self.scaled(4))
        for template, states, last_q, first_q in rng.sample(ROBOT_JOBS, count):
            gap = 3 if self.days > 5 else 1
            keys: list[str] = []
            for day in range(rng.randrange(gap), self.days, gap):
                text = self.unique(functools.partial(_job, rng, template, states))
                if text is None:
                    text = "robot: " + template.format(state=rng.choice(states))
                    text += f" It took {len(keys) + 3} minutes."
                keys.append(self.put(self.session(day), text))
            if len(keys) >= 2:
                self.ask(last_q, [(keys[-1], 0)], "time", "robot-last")
                self.ask(first_q, [(keys[0], 0)], "time", "robot-first")

    # --- filler ----------------------------------------------------------------------------------

    def filler(self) -> list[str] | None:
        """One exchange of chit-chat or an everyday request (None: no new text found)."""
        rng = self.rng
        opener = rng.choice(OPENERS)

        def cap(text: str) -> str:
            return f"{opener}{text}" if opener else text[0].upper() + text[1:]

        def minutes() -> str:
            return f"{rng.randint(1, 11)}:{rng.randint(0, 59):02d}"

        kind = rng.randrange(12)
        if kind == 0:
            user = cap(rng.choice((f"what's the weather like {rng.choice(LATER)}?",
                                   f"is it going to rain {rng.choice(LATER)}?",
                                   f"do I need a coat {rng.choice(LATER)}?",
                                   f"will it be cold {rng.choice(LATER)}?")))  # fmt: skip

            def robot() -> str:
                return (f"{rng.choice(WEATHER)}, around {rng.randint(3, 19)} degrees, "
                             f"wind {rng.randint(5, 40)} km/h.")  # fmt: skip
        elif kind == 1:
            genre = rng.choice(GENRES)
            user = cap(f"put on {genre} {in_room(rng.choice(ROOM_NAMES))}.")

            def robot() -> str:
                return (f"Playing {genre.removeprefix('some ')} now, volume "
                             f"{rng.randint(2, 9)} of ten, until {minutes()}.")  # fmt: skip
        elif kind == 2:
            room = rng.choice(ROOM_NAMES)
            what = rng.choice(("turn on the lights", "turn off the lights", "close the blinds",
                               "open the window", "dim the lamps",
                               "switch off the lamp"))  # fmt: skip
            user = cap(f"{what} {in_room(room)}, please.")

            def robot() -> str:
                return (f"Done, the {room} is set. That used {rng.randint(2, 90)} watts "
                             f"for the last {rng.randint(2, 50)} minutes.")  # fmt: skip
        elif kind == 3:
            user = cap(f"set the heating to {rng.randint(17, 23)} degrees "
                       f"{rng.choice(LATER)}.")  # fmt: skip

            def robot() -> str:
                return (f"The heating will switch over in {rng.randint(2, 50)} minutes; "
                             f"it's {rng.randint(14, 22)} degrees now.")  # fmt: skip
        elif kind == 4:
            topic = rng.choice(JOKE_TOPICS)
            user = cap(rng.choice((f"tell me a joke about {topic}.",
                                   f"do you know anything funny about {topic}?",
                                   f"cheer me up with a {topic} joke.")))  # fmt: skip

            def robot() -> str:
                return rng.choice((
                f"Why did the {topic} joke take {rng.randint(2, 99)} tries? It needed the timing.",
                f"I know {rng.randint(3, 99)} jokes about {topic}, and none of them are good.",
                f"Joke number {rng.randint(1, 999)} about {topic}: it's a secret, like my code.",
            ))  # fmt: skip
        elif kind == 5:
            kind_tv = rng.choice(TV_KINDS)
            user = cap(rng.choice(("what's on TV tonight?", "anything good on television later?",
                                   f"is there {article(kind_tv)} on tonight?",
                                   f"find me {article(kind_tv)} for this evening.")))  # fmt: skip

            def robot() -> str:
                return (f"There's {article(kind_tv)} called {rng.choice(TV_TITLES)} at "
                             f"{rng.randint(6, 10)}:{rng.choice(('00', '15', '30', '45'))} on "
                             f"channel {rng.randint(1, 40)}.")  # fmt: skip
        elif kind == 6:
            ache = rng.choice(ACHES)
            how = rng.choice(("a bit", "again", "quite badly", "today", "since I woke up"))
            user = cap(f"{ache} is aching {how}.")

            def robot() -> str:
                return (f"Sorry to hear that. Shall I {rng.choice(SUGGESTIONS)}? You've "
                             f"been sitting for {rng.randint(5, 95)} minutes.")  # fmt: skip
        elif kind == 7:
            caller = rng.choice(CALLERS)
            pronoun = "he" if caller in ("Tom", "Jorge") else "she"
            user = cap(f"{caller} called {rng.choice(('earlier', 'this morning', 'at lunch'))}, "
                       f"{pronoun} {rng.choice(FAMILY_NEWS)}.")  # fmt: skip

            def robot() -> str:
                return (f"That's nice. Shall I put a call to {caller} in the diary for "
                             f"{rng.choice(WEEKDAYS)} at {minutes()}?")  # fmt: skip
        elif kind == 8:
            dish = rng.choice(DISHES)
            user = cap(rng.choice((f"do we have what I need for {dish}?",
                                   f"I'm craving {dish} for some reason.",
                                   f"how long does {dish} keep in the fridge?",
                                   f"is {dish} healthy, do you think?")))  # fmt: skip

            def robot() -> str:
                return (f"I'd say about {rng.randint(2, 5)} days, and we have "
                             f"{rng.randint(1, 9)} of the {rng.randint(10, 14)} "
                             f"ingredients.")  # fmt: skip
        elif kind == 9:
            thing, _, plural = rng.choice(THINGS)
            user = cap(f"have you seen the {thing}? Oh wait, never mind, found "
                       f"{'them' if plural else 'it'} "
                       f"{rng.choice(('in my hand', 'on me', 'already'))}.")  # fmt: skip

            def robot() -> str:
                return (f"Good. I last passed through the {rng.choice(ROOM_NAMES)} "
                             f"{rng.randint(2, 59)} minutes ago.")  # fmt: skip
        elif kind == 10:
            item = rng.choice(GROCERIES)
            user = cap(rng.choice((f"the shop was out of {item} again.",
                                   f"the {item} was on offer at the market.",
                                   f"we've got plenty of {item}, no need to buy more.",
                                   f"the {item} from the corner shop was awful.")))  # fmt: skip

            def robot() -> str:
                return (f"Okay. You've spent about {rng.randint(20, 90)} euros on "
                             f"groceries this week, {rng.randint(2, 30)} on "
                             f"{rng.choice(('fruit', 'dairy', 'bread', 'snacks'))}.")  # fmt: skip
        else:
            user = cap(rng.choice(("how's your battery?", "are you tired?",
                                   "what have you been up to?", "how are you today?",
                                   "did you sleep well, robot?", "keeping busy?")))  # fmt: skip

            def robot() -> str:
                return (f"Battery at {rng.randint(15, 99)} percent, I've driven "
                             f"{rng.randint(20, 400)} metres today.")  # fmt: skip

        line = f"user: {user}"
        if line in self.used:
            return None
        reply = next((r for r in (f"robot: {robot()}" for _ in range(20)) if r not in self.used),
                     None)  # fmt: skip
        if reply is None:
            return None
        self.used.update((line, reply))
        return [line, reply]

    def fill(self, per_session: tuple[int, int]) -> None:
        for session in self.sessions:
            target = self.rng.randint(*per_session)
            have = sum(len(s.lines) for s in session.segments)
            misses = 0
            while have < target and misses < 200:
                lines = self.filler()
                if lines is None:
                    misses += 1
                    continue
                session.segments.append(_Segment(lines))
                have += len(lines)

    # --- layout ----------------------------------------------------------------------------------

    def layout(self) -> Dialogue:
        rng = self.rng
        turns: list[Turn] = []
        spans: list[tuple[float, float, str]] = []
        where: dict[str, list[int]] = {}
        for session in self.sessions:
            keyed = [s for s in session.segments if s.key is not None]
            loose = [s for s in session.segments if s.key is None]
            order = list(loose)
            for seg in keyed:  # keyed segments keep their relative order
                order.insert(rng.randint(0, len(order)), seg)
            # restore relative order of the keyed ones (placement above may swap them)
            positions = [i for i, s in enumerate(order) if s.key is not None]
            for i, seg in zip(positions, keyed, strict=True):
                order[i] = seg
            name, hour, _, _ = SLOTS[session.slot]
            t = (START + timedelta(days=session.day)).timestamp() + hour * 3600
            t += rng.randint(0, 20) * 60
            begin = t
            cx, cy = ROOMS[session.room]
            x, y = cx + rng.uniform(-1, 1), cy + rng.uniform(-1, 1)
            for seg in order:
                ids = []
                for line in seg.lines:
                    t += rng.randint(12, 70)
                    turn = Turn(len(turns), t, session.room, round(x, 2), round(y, 2),
                                session.index, line)  # fmt: skip
                    turns.append(turn)
                    ids.append(turn.id)
                if seg.key is not None:
                    where[seg.key] = ids
            date = (START + timedelta(days=session.day)).strftime("%a %d %b")
            spans.append((begin, t, f"conversation {date} {name}"))
        questions: list[Question] = []
        texts = {t.id: t.text for t in turns}
        seen: set[str] = set()
        for ask in self.asks:
            evidence = tuple(sorted({where[key][i] for key, i in ask.refs}))
            if ask.text in seen:
                raise DialogueError(f"duplicate question: {ask.text!r}")
            seen.add(ask.text)
            for e in evidence:
                if shared_run(ask.text, texts[e]):
                    raise DialogueError(
                        f"question copies its evidence: {ask.text!r} / {texts[e]!r}"
                    )
            questions.append(Question(len(questions), ask.text, evidence, ask.kind, ask.family))
        return Dialogue(tuple(turns), tuple(spans), tuple(questions), turns[-1].time + 600.0,
                        0, self.days)  # fmt: skip


def build_dialogue(days: int = FULL_DAYS, seed: int = SEED) -> Dialogue:
    """The history of ``days`` days and its questions (the same for the same arguments)."""
    if days < 3:
        raise ValueError("the dialogue needs at least 3 days")
    builder = _Builder(days, seed)
    builder.daily()
    builder.cooking()
    builder.appointments()
    builder.things()
    builder.visitors()
    builder.events()
    builder.preferences()
    builder.facts()
    builder.robot_jobs()
    builder.fill((28, 38) if days >= FULL_DAYS else (22, 30))
    data = builder.layout()
    return Dialogue(data.turns, data.sessions, data.questions, data.now, seed, days)


# --- the baseline: plain Okapi BM25 over the turns ---------------------------------------------


class BM25:
    """Okapi BM25 over ``texts`` (lower-case word tokens, no stemming, no stop words)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(words(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.mean_length = sum(self.lengths) / max(1, len(self.docs))
        frequency: Counter[str] = Counter()
        for d in self.docs:
            frequency.update(d.keys())
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}
        self.postings: dict[str, list[int]] = {}
        for i, d in enumerate(self.docs):
            for w in d:
                self.postings.setdefault(w, []).append(i)

    def rank(self, query: str, n: int) -> list[int]:
        """Indices of the ``n`` best texts, best first (ties: the earlier text first)."""
        scores: dict[int, float] = {}
        for w in set(words(query)):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i in self.postings[w]:
                tf = self.docs[i][w]
                norm = tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / self.mean_length)
                scores[i] = scores.get(i, 0.0) + idf * tf * (self.k1 + 1) / norm
        return sorted(scores, key=lambda i: (-scores[i], i))[:n]


# --- storing the history and asking -------------------------------------------------------------

_NUMBERED = re.compile(r"^\d+\.\s(.*)$")
_SPEAKER = re.compile(r"\s((?:user|robot): .*)$")


def parse_results(text: str, turn_ids: dict[str, int]) -> list[tuple[str, int | None]]:
    """The result lines of a semantic_search answer as (kind, turn id): kind "turn" (a stored
    turn, matched by its text), "gist", "entity" or "other" (id None)."""
    out: list[tuple[str, int | None]] = []
    for line in text.splitlines():
        numbered = _NUMBERED.match(line)
        if numbered is None:
            continue
        body = numbered.group(1)
        if body.startswith("[gist"):
            out.append(("gist", None))
        elif body.startswith("[entity"):
            out.append(("entity", None))
        else:
            spoken = _SPEAKER.search(body)
            turn = turn_ids.get(spoken.group(1)) if spoken else None
            out.append(("turn", turn) if turn is not None else ("other", None))
    return out


def store_history(memory: SpatioTemporalMemory, data: Dialogue, set_time: Callable[[float], None],
                  progress: bool = False) -> None:  # fmt: skip
    """Store every turn through the public API, with a robot's consolidation: one episode per
    conversation (gists when it ends), the time window and maintenance at the end of each day,
    the area forest brought up to date at the end."""
    by_session: dict[int, list[Turn]] = {}
    for turn in data.turns:
        by_session.setdefault(turn.session, []).append(turn)
    day_of = {i: int((s[0] - START.timestamp()) // 86400) for i, s in enumerate(data.sessions)}
    bar = tqdm(total=len(data.turns), desc="dialogue turns", disable=not progress, leave=False)
    for index, (begin, end, name) in enumerate(data.sessions):
        set_time(begin)
        memory.start_episode(name)
        for turn in by_session.get(index, []):
            set_time(turn.time)
            memory.add(turn.text, turn.x, turn.y, timestamp=turn.time, layer_name=LAYER,
                       source_type="speech")  # fmt: skip
        set_time(end + 1.0)
        memory.flush()
        memory.end_episode(wait=True)
        bar.update(len(by_session.get(index, [])))
        if index + 1 == len(data.sessions) or day_of[index + 1] != day_of[index]:
            set_time(end + 2.0)
            memory.consolidate_time_window()
            memory.maintenance()
    bar.close()
    set_time(data.now)
    memory.extract_entities()
    memory.catch_up()


def _config(path: Path, dim: int, hybrid: bool) -> MemoryConfig:
    return MemoryConfig(
        db_path=str(path),
        embedding_dim=dim,
        use_hybrid_retrieval=hybrid,
        maintenance_interval=None,  # the eval runs consolidation itself, at fixed times
        archive_after_seconds=KEEP_TURNS_SECONDS,
    )


@dataclass
class _Answer:
    top: list[tuple[str, int | None]]
    seconds: float
    same_on_repeat: bool = True


def _ask_memory(memory: SpatioTemporalMemory, data: Dialogue, progress: bool,
                label: str) -> list[_Answer]:  # fmt: skip
    turn_ids = {t.text: t.id for t in data.turns}
    answers = []
    texts = []
    for q in tqdm(data.questions, desc=label, disable=not progress, leave=False):
        started = time.perf_counter()
        text = memory.semantic_search(q.text, n_results=TOP)
        seconds = time.perf_counter() - started
        texts.append(text)
        answers.append(_Answer(parse_results(text, turn_ids)[:TOP], seconds))
    # The same memory and the same call must give the same answer: ask again.
    for q, text, answer in zip(data.questions, texts, answers, strict=True):
        answer.same_on_repeat = memory.semantic_search(q.text, n_results=TOP) == text
    return answers


def _ask_bm25(data: Dialogue) -> list[_Answer]:
    index = BM25([t.text for t in data.turns])
    answers = []
    for q in data.questions:
        started = time.perf_counter()
        ranked = index.rank(q.text, TOP)
        seconds = time.perf_counter() - started
        answers.append(_Answer([("turn", data.turns[i].id) for i in ranked], seconds))
    return answers


def score(data: Dialogue, answers: list[_Answer]) -> dict[str, Any]:
    """Figures of one ranker: overall, per question type and per family."""

    def figures(picked: list[int]) -> dict[str, float]:
        if not picked:
            return {"questions": 0}
        hit5 = all10 = 0
        gists = entities = 0
        for i in picked:
            q, answer = data.questions[i], answers[i]
            top5 = {t for kind, t in answer.top[:5] if kind == "turn"}
            top10 = {t for kind, t in answer.top[:TOP] if kind == "turn"}
            hit5 += any(e in top5 for e in q.evidence)
            all10 += all(e in top10 for e in q.evidence)
            gists += sum(kind == "gist" for kind, _ in answer.top[:TOP])
            entities += sum(kind == "entity" for kind, _ in answer.top[:TOP])
        n = len(picked)
        return {
            "questions": n,
            "evidence_in_top5": hit5 / n,
            "all_evidence_in_top10": all10 / n,
            "gist_slots_in_top10": gists / n,
            "entity_slots_in_top10": entities / n,
        }

    everything = list(range(len(data.questions)))
    result: dict[str, Any] = figures(everything)
    result["p50_latency_ms"] = 1000 * statistics.median(a.seconds for a in answers)
    result["answers_changed_on_repeat"] = sum(not a.same_on_repeat for a in answers)
    result["by_type"] = {
        kind: figures([i for i in everything if data.questions[i].kind == kind])
        for kind in ("time", "other")
    }
    result["by_evidence_count"] = {
        str(n): figures([i for i in everything if len(data.questions[i].evidence) == n])
        for n in (1, 2)
    }
    families = sorted({q.family for q in data.questions})
    result["by_family"] = {
        f: figures([i for i in everything if data.questions[i].family == f]) for f in families
    }
    return result


def run(
    embedder: EmbeddingProvider | None = None, *, quick: bool = False, progress: bool = False
) -> dict[str, Any]:
    """Build the history in a temporary memory (deleted after), ask every question with the
    three rankers, return the figures (JSON-able)."""
    progress = progress and sys.stderr.isatty()
    data = build_dialogue(QUICK_DAYS if quick else FULL_DAYS)
    embedder = embedder if embedder is not None else SentenceTransformerEmbedder()
    now = [data.turns[0].time]
    results: dict[str, Any] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="emem-dialogue-") as scratch:
        path = Path(scratch) / "memory"
        memory = SpatioTemporalMemory(
            config=_config(path, embedder.dim, hybrid=True),
            embedding_provider=embedder,
            get_current_time=lambda: now[0],
        )
        try:
            store_history(memory, data, lambda t: now.__setitem__(0, t), progress)
            build_seconds = time.perf_counter() - started
            stats = memory.consolidation.stats()
            gists = _count_gists(memory)
        finally:
            memory.close()
        # Both rankers ask a reopened memory (the same state, the same cold start).
        answers: dict[str, list[_Answer]] = {}
        for name, hybrid in (("hybrid", True), ("dense", False)):
            memory = SpatioTemporalMemory(
                config=_config(path, embedder.dim, hybrid=hybrid),
                embedding_provider=embedder,
                get_current_time=lambda: now[0],
            )
            try:
                answers[name] = _ask_memory(memory, data, progress, name)
            finally:
                memory.close()
    answers["bm25"] = _ask_bm25(data)
    for name in RANKERS:
        results[name] = score(data, answers[name])
    counts = Counter(q.kind for q in data.questions)
    return {
        "quick": quick,
        "embedder": type(embedder).__name__,  # the CLI puts the name it was given
        "seed": data.seed,
        "days": data.days,
        "turns": len(data.turns),
        "conversations": len(data.sessions),
        "questions": len(data.questions),
        "time_questions": counts["time"],
        "two_turn_questions": sum(len(q.evidence) == 2 for q in data.questions),
        "gists_stored": gists,
        "consolidation": {k: v for k, v in stats.items() if isinstance(v, int | float)},
        "build_seconds": round(build_seconds, 1),
        "rankers": results,
        "per_question": [
            {
                "question": q.text,
                "family": q.family,
                "kind": q.kind,
                "evidence": [data.turns[e].text for e in q.evidence],
                "ranks": {name: evidence_ranks(q, answers[name][q.id]) for name in RANKERS},
                "gist_slots": {
                    name: sum(kind == "gist" for kind, _ in answers[name][q.id].top)
                    for name in RANKERS
                },
            }
            for q in data.questions
        ],
    }


def evidence_ranks(question: Question, answer: _Answer) -> list[int | None]:
    """The result position (1-based, within the top 10) of each evidence turn, None if absent."""
    where = {turn: i for i, (kind, turn) in enumerate(answer.top, 1) if kind == "turn"}
    return [where.get(e) for e in question.evidence]


def _count_gists(memory: SpatioTemporalMemory) -> int:
    """How many gists the memory holds (search_gists lists them; its count line is not
    public, so count the numbered lines of a broad listing)."""
    text = memory.search_gists("conversation", n_results=1000)
    return sum(1 for line in text.splitlines() if _NUMBERED.match(line))


def describe(result: dict[str, Any]) -> list[str]:
    """The figures as a table: one row per ranker, then the split by question type."""
    lines = [
        f"Dialogue history: {result['turns']} turns in {result['conversations']} conversations "
        f"over {result['days']} days, {result['questions']} questions ({result['time_questions']} "
        f"about time, {result['two_turn_questions']} with two evidence turns), "
        f"{result['gists_stored']} gists stored",
        "",
        "| ranker | evidence in top 5 | all evidence in top 10 | gist slots / 10 | "
        "entity slots / 10 | p50 latency | answers changed when asked again |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in RANKERS:
        r = result["rankers"][name]
        lines.append(
            f"| {name} | {r['evidence_in_top5']:.1%} | {r['all_evidence_in_top10']:.1%} | "
            f"{r['gist_slots_in_top10']:.2f} | {r['entity_slots_in_top10']:.2f} | "
            f"{r['p50_latency_ms']:.1f} ms | {r['answers_changed_on_repeat']} |"
        )
    lines += ["", "| ranker | questions of | n | evidence in top 5 | all evidence in top 10 |",
              "|---|---|---|---|---|"]  # fmt: skip
    for name in RANKERS:
        splits = [(kind, r) for kind, r in result["rankers"][name]["by_type"].items()]
        splits += [
            (f"{n} evidence turn{'s' if n != '1' else ''}", r)
            for n, r in result["rankers"][name]["by_evidence_count"].items()
        ]
        for kind, r in splits:
            if r["questions"]:
                lines.append(
                    f"| {name} | {kind} | {r['questions']} | {r['evidence_in_top5']:.1%} | "
                    f"{r['all_evidence_in_top10']:.1%} |"
                )
    return lines
