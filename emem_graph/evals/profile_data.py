"""The evaluation set of evals/profile.py: personal facts and routines of three users, each
with a later underspecified request, changed routines, paraphrased references and near misses.

Written by hand to look like what people say to a household robot; nothing here is tuned to the
thresholds (the thresholds were calibrated on the pairs in matching.py's docstring).
"""

from __future__ import annotations

from dataclasses import dataclass

USERS = ("Alice", "Bob", "Carol")


@dataclass(frozen=True)
class Fact:
    """Object semantics: ``alias`` is ``objects``; ``entity`` is the world entity the first
    object is (a ``distractor`` entity of the same kind stands nearby); ``request`` comes later."""

    alias: str
    objects: tuple[str, ...]
    entity: str
    distractor: str
    request: str


@dataclass(frozen=True)
class Routine:
    """A routine: ``alias`` and its steps (phrases, in order), then a later ``request``."""

    alias: str
    steps: tuple[str, ...]
    request: str


FACTS = (
    Fact("my favorite cup", ("yellow cup with the wooden handle",), "yellow cup", "red cup",
         "bring me my favorite cup"),
    Fact("my reading glasses", ("black glasses with the thin frame",), "black glasses",
         "sunglasses", "where are my reading glasses?"),
    Fact("my work laptop", ("silver laptop with the sticker",), "silver laptop", "black tablet",
         "can you fetch the laptop I use for work"),
    Fact("my lucky pen", ("blue fountain pen",), "blue pen", "red pencil", "I need my lucky pen"),
    Fact("my gym bag", ("green duffel bag",), "green bag", "brown suitcase",
         "grab my bag for the gym please"),
    Fact("my winter coat", ("long grey wool coat",), "grey coat", "blue raincoat",
         "it's freezing, bring my warm coat"),
    Fact("my morning mug", ("white mug with the cat print",), "white mug", "glass jar",
         "where's the mug I use in the morning"),
    Fact("my travel pillow", ("purple neck pillow",), "purple pillow", "white cushion",
         "pack my travel pillow"),
    Fact("my yoga mat", ("pink yoga mat",), "pink mat", "doormat", "roll out my yoga mat"),
    Fact("my house keys", ("keys on the red keychain",), "keys", "remote control",
         "have you seen my keys?"),
    Fact("my phone charger", ("white usb charger",), "white charger", "power strip",
         "my phone is dying, get the charger"),
    Fact("my favorite book", ("old hardcover novel with the torn cover",), "hardcover book",
         "magazine", "hand me my favourite book"),
    Fact("my slippers", ("brown fuzzy slippers",), "brown slippers", "black boots",
         "bring my slippers to me"),
    Fact("my water bottle", ("steel water bottle",), "steel bottle", "plastic cup",
         "fill my bottle with water"),
    Fact("my headphones", ("black over-ear headphones",), "black headphones", "speaker",
         "where did I put my headphones"),
    Fact("my umbrella", ("large black umbrella",), "black umbrella", "walking stick",
         "it is raining, get my umbrella"),
    Fact("my medicine box", ("small white pill box",), "pill box", "tissue box",
         "bring me my pills"),
    Fact("my wallet", ("brown leather wallet",), "brown wallet", "notebook", "find my wallet"),
    Fact("my sewing kit", ("tin box with needles and thread",), "sewing tin", "cookie tin",
         "I want to fix a button, get my sewing things"),
    Fact("my dinnerware set", ("blue plates", "white bowls"), "blue plate", "red tray",
         "set the table with my dinnerware"),
    Fact("my tea cup", ("small green teacup",), "green teacup", "coffee pot",
         "pour some tea into my cup for tea"),
    Fact("my hair brush", ("wooden hair brush",), "wooden brush", "toothbrush",
         "pass me my brush"),
    Fact("my notebook", ("spiral notebook with the orange cover",), "orange notebook",
         "newspaper", "where is my notebook"),
    Fact("my bike helmet", ("red bike helmet",), "red helmet", "blue cap",
         "I'm going cycling, bring my helmet"),
    Fact("my reading lamp", ("brass desk lamp",), "brass lamp", "ceiling light",
         "switch on the lamp I read with"),
    Fact("my guitar", ("acoustic guitar",), "guitar", "violin", "can you bring my guitar"),
    Fact("my scarf", ("red knitted scarf",), "red scarf", "blue towel", "I need my scarf"),
    Fact("my backpack", ("black school backpack",), "black backpack", "laundry basket",
         "where's my backpack"),
    Fact("my watch", ("silver wrist watch",), "silver watch", "alarm clock",
         "have you seen my watch"),
    Fact("my plant", ("small cactus on the windowsill",), "cactus", "fern", "water my plant"),
)  # fmt: skip

ROUTINES = (
    Routine("my cozy evening", ("move the candle to the table", "to the couch"),
            "it's time for my cozy evening"),
    Routine("my morning routine", ("open the curtains", "put the mug on the kitchen counter",
                                   "turn on the kettle"), "good morning! start my day"),
    Routine("my movie night", ("dim the lights", "put the popcorn bowl on the coffee table",
                               "bring the blanket to the sofa"), "let's get ready for a film"),
    Routine("my bedtime", ("close the window", "turn off the lamp",
                           "put the glass of water on the nightstand"), "I'm going to bed"),
    Routine("my work setup", ("put the laptop on the desk", "plug in the charger",
                              "bring the coffee to the desk"), "set up my workspace"),
    Routine("my dinner prep", ("take out the cutting board", "put the vegetables on the counter",
                               "place the pot on the stove"), "help me get dinner started"),
    Routine("my laundry day", ("collect the clothes from the bedroom",
                               "put the clothes in the washing machine",
                               "bring the basket to the balcony"), "the laundry needs doing"),
    Routine("my tea time", ("fill the kettle", "place the teapot on the tray",
                            "bring the tray to the balcony"), "I'd love a cup of tea"),
    Routine("my reading hour", ("bring the book to the armchair", "turn on the reading lamp",
                                "put the blanket on the armchair"), "I'd like to read for a while"),
    Routine("my workout", ("put the yoga mat on the living room floor",
                           "bring the water bottle to the mat", "turn on the music"),
            "let's exercise"),
    Routine("my breakfast", ("put the bowl on the table", "bring the cereal to the table",
                             "take out the milk"), "make me breakfast"),
    Routine("my guest welcome", ("open the front door", "put the slippers by the door",
                                 "bring the towels to the guest room"), "guests are coming"),
    Routine("my plant care", ("fill the watering can", "water the plants in the living room",
                              "move the cactus to the windowsill"), "the plants need care"),
    Routine("my cleanup", ("put the dishes in the sink", "wipe the table", "take out the trash"),
            "clean up after dinner"),
    Routine("my study session", ("put the notebook on the desk", "bring the pens to the desk",
                                 "turn off the tv"), "I need to study"),
    Routine("my bath time", ("fill the bathtub", "put the towel on the rack",
                             "bring the bathrobe to the bathroom"), "prepare a bath for me"),
    Routine("my date night", ("put the candles on the dining table",
                              "set the wine glasses on the table", "dim the lights"),
            "it's date night"),
    Routine("my lunch box", ("put the sandwich in the lunch box", "put the apple in the lunch box",
                             "place the lunch box by the door"), "pack my lunch"),
    Routine("my pet feeding", ("fill the food bowl", "put the food bowl in the kitchen",
                               "fill the water dish"), "feed the cat"),
    Routine("my sunday brunch", ("set the plates on the dining table",
                                 "bring the orange juice to the table",
                                 "put the pancakes on the table"), "brunch time"),
    Routine("my music practice", ("bring the guitar to the living room",
                                  "put the music stand by the sofa",
                                  "place the sheet music on the stand"),
            "I want to practice guitar"),
    Routine("my rainy day", ("bring the umbrella to the door", "put the boots by the door",
                             "hang the raincoat on the hook"), "it's raining outside"),
    Routine("my game night", ("put the board games on the coffee table",
                              "bring the snacks to the coffee table",
                              "set the cards on the table"), "friends are coming over to play"),
    Routine("my gardening", ("bring the gloves to the garden", "take out the shears",
                             "place the basket in the garden"), "I'm going to work in the garden"),
    Routine("my office packing", ("put the laptop in the backpack",
                                  "put the charger in the backpack",
                                  "place the backpack by the front door"),
            "pack my bag for the office"),
)  # fmt: skip

CHANGED_ROUTINES = (
    Routine("my cozy evening", ("bring the blanket to the sofa", "move the candle to the table",
                                "turn on the fairy lights"), "it's time for my cozy evening"),
    Routine("my morning routine", ("turn on the kettle", "open the curtains",
                                   "put the mug on the countertop at the kitchen"),
            "good morning! start my day"),
    Routine("my bedtime", ("turn off the lamp", "close the window"), "I'm going to bed"),
    Routine("my tea time", ("fill the kettle", "bring the teapot to the terrace"),
            "I'd love a cup of tea"),
    Routine("my workout", ("bring the water bottle to the living room floor",
                           "put the yoga mat on the living room floor", "turn on the music"),
            "let's exercise"),
    Routine("my cleanup", ("take out the trash", "put the dishes in the dishwasher",
                           "wipe the table"), "clean up after dinner"),
    Routine("my game night", ("set the cards on the table",
                              "bring the snacks to the low table"),
            "friends are coming over to play"),
    Routine("my rainy day", ("hang the raincoat on the hook", "bring the umbrella to the door"),
            "it's raining outside"),
    Routine("my lunch box", ("put the apple in the lunch box", "put the sandwich in the lunch box",
                             "place the lunch box by the front door"), "pack my lunch"),
    Routine("my study session", ("turn off the tv", "put the notebook on the desk"),
            "I need to study"),
)  # fmt: skip
"""Later instructions that change a routine of the same user (each must update in place)."""

PARAPHRASES = (
    ("mouse pad", "mouse mat"),
    ("kitchen counter", "countertop at kitchen"),
    ("couch", "sofa"),
    ("fridge", "refrigerator"),
    ("nightstand", "bedside table"),
    ("living room floor", "floor of the living room"),
    ("front door", "entrance door"),
    ("dining table", "table in the dining room"),
    ("kitchen shelf", "shelf in the kitchen"),
    ("bathroom sink", "sink in the bathroom"),
    ("hallway closet", "closet in the hallway"),
    ("bookshelf", "book shelf"),
    ("tv stand", "television stand"),
    ("laundry basket", "basket for the laundry"),
    ("tv remote", "remote control of the tv"),
    ("coffee mug", "mug for coffee"),
    ("cell phone", "mobile phone"),
    ("laptop", "notebook computer"),
    ("trash can", "garbage can"),
    ("bath towel", "towel for the bath"),
    ("reading glasses", "glasses for reading"),
    ("water bottle", "bottle of water"),
    ("tissue box", "box of tissues"),
    ("flower vase", "vase for flowers"),
    ("sofa cushion", "couch cushion"),
    ("desk chair", "office chair"),
    ("shoe rack", "rack for shoes"),
    ("kitchen sink", "sink in the kitchen"),
    ("garden hose", "hose in the garden"),
    ("bedroom window", "window of the bedroom"),
)
"""(first phrasing, later phrasing) of one thing: the later one must reuse the first's node."""

NEAR_MISSES = (
    ("red cup", "blue cup"),
    ("mouse pad", "mouse"),
    ("left drawer", "right drawer"),
    ("top shelf", "bottom shelf"),
    ("desk", "desk lamp"),
    ("coffee table", "coffee mug"),
    ("fridge", "freezer"),
    ("bedroom", "bathroom"),
    ("book", "bookshelf"),
    ("living room", "dining room"),
    ("spoon", "fork"),
    ("plate", "bowl"),
    ("sofa", "armchair"),
    ("pillow", "blanket"),
    ("kitchen counter", "kitchen sink"),
)
"""(first, later) phrasings of different things: the later one must get a node of its own."""
