"""The rule-based way in: classify an instruction or a request and parse the common English forms
of personal facts and routines, for when no LLM is configured (or it fails).

Understood forms (case-insensitive, articles optional):

- object semantics: "X is my A", "X and Y are my A", "my A is X", "my A are X and Y",
  "my A consists of / includes / means X, Y and Z", "I call X my A";
- routines: "for my A, <steps>", "my A: <steps>", "when I say A, <steps>", "my A means <steps>",
  "my A routine is <steps>"; steps are separated by "then", "after that", "finally", ";" or a
  comma before a verb; a step is "<verb> [the] <object> <preposition> <place>", and a step
  without a verb ("then to the couch") repeats the previous action and object.

Anything else raises InvalidInputError that names the forms and the structured API.
"""

from __future__ import annotations

import re

from emem_graph.errors import InvalidInputError
from emem_graph.profile.models import (
    OBJECT_SEMANTICS,
    USER_PATTERN,
    Argument,
    Instruction,
    LocationSpec,
    ObjectSpec,
    StepSpec,
)

_ARTICLE_RE = re.compile(r"^(?:the|a|an|some|any|all|my|our|your)\s+", re.IGNORECASE)
_LOCATION_RE = re.compile(
    r"\s+(in front of|next to|on top of|close to|to|onto|on|into|in|at|near|under|beside|"
    r"behind|by|inside|over|above|below|from)\s+",
    re.IGNORECASE,
)
_STEP_SPLIT_RE = re.compile(
    r"\s*(?:;|,?\s*and then\s+|,?\s*then\s+|,?\s*after that,?\s+|,?\s*afterwards,?\s+|"
    r",?\s*finally,?\s+|,?\s*next,?\s+)\s*",
    re.IGNORECASE,
)
_PHRASAL = {
    "turn": {"on", "off"},
    "switch": {"on", "off"},
    "pick": {"up"},
    "put": {"away", "down"},
    "take": {"out", "away"},
    "clean": {"up"},
    "tidy": {"up"},
    "light": {"up"},
    "plug": {"in"},
    "close": {"up"},
}
ACTION_VERBS = frozenset(
    [
        "move",
        "put",
        "place",
        "bring",
        "take",
        "set",
        "carry",
        "fetch",
        "get",
        "hang",
        "lay",
        "open",
        "close",
        "turn",
        "switch",
        "light",
        "fill",
        "clean",
        "wipe",
        "tidy",
        "arrange",
        "stack",
        "store",
        "pour",
        "make",
        "pick",
        "water",
        "dim",
        "plug",
        "fold",
        "hand",
        "leave",
        "give",
        "return",
        "collect",
        "load",
        "unload",
        "prepare",
        "boil",
        "play",
        "start",
        "stop",
        "lock",
        "unlock",
        "draw",
        "feed",
    ]
)
"""Verbs a routine step starts with (and a comma-separated clause must start with to be one)."""

_ROUTINE_CUES = re.compile(
    r"\b(routine|time for|ready for|get ready|prepare|set up|do my|start my|it'?s|let'?s|"
    r"for my|evening|morning|night|bedtime|ritual|usual)\b",
    re.IGNORECASE,
)
_OBJECT_CUES = re.compile(
    r"\b(bring|fetch|get me|hand me|grab|pass me|where|find|locate|give me|take my|which)\b",
    re.IGNORECASE,
)


def bare(phrase: str) -> str:
    """A noun phrase without leading articles or possessives and trailing punctuation."""
    text = " ".join(phrase.strip().strip(".!?,;:").split())
    while True:
        shorter = _ARTICLE_RE.sub("", text, count=1)
        if shorter == text:
            return text
        text = shorter


def object_spec(phrase: str) -> ObjectSpec:
    """An object from its phrase: plural or "any"/"all" phrases are categories."""
    text = " ".join(phrase.strip().strip(".!?,;:").split())
    name = bare(text)
    first = text.split()[0].lower() if text else ""
    head = re.split(r"\s+(?:with|of|from|in|on|at)\s+", name, maxsplit=1)[0].split()
    plural = bool(head) and head[-1].lower().endswith("s") and not head[-1].lower().endswith("ss")
    category = first in {"any", "all", "some"} or plural
    return ObjectSpec(name=name, granularity="category" if category else "instance")


def classify_instruction(text: str) -> str | None:
    """object_semantics, user_pattern, or None when the text is neither form."""
    try:
        return parse_instruction(text).subtype
    except InvalidInputError:
        return None


def classify_request(query: str) -> str | None:
    """The kind of knowledge a request most likely needs: user_pattern for "time for my cozy
    evening", object_semantics for "bring me my favorite cup", None when it does not say."""
    routine = bool(_ROUTINE_CUES.search(query))
    obj = bool(_OBJECT_CUES.search(query))
    if routine == obj:
        return None
    return USER_PATTERN if routine else OBJECT_SEMANTICS


def parse_instruction(text: str) -> Instruction:
    """Parse a personal fact or routine (see the module docstring for the forms).

    Raises:
        InvalidInputError: none of the forms matches.
    """
    sentence = " ".join(str(text).split()).strip().rstrip(".!")
    if not sentence:
        raise InvalidInputError("the instruction is empty")
    routine = _routine(sentence)
    if routine is not None:
        return routine
    semantics = _object_semantics(sentence)
    if semantics is not None:
        return semantics
    raise InvalidInputError(
        f"could not understand {sentence[:80]!r} without an LLM: say 'X is my A', 'my A is X' "
        "or 'for my A, move X to Y, then ...' (or use add_object_semantics / add_user_pattern, "
        "or configure an LLM)"
    )


def _routine(sentence: str) -> Instruction | None:
    forms = (
        r"^(?:for|during|on)\s+(?P<alias>(?:my|our)\s+.+?)\s*[,:]\s*(?P<steps>.+)$",
        r"^when i say\s+(?P<alias>.+?)\s*[,:]\s*(?P<steps>.+)$",
        r"^(?P<alias>(?:my|our)\s+.+?)\s+(?:means|is|goes like this|works like this)\s*:?\s+"
        r"(?P<steps>(?:to\s+)?(?:" + "|".join(sorted(ACTION_VERBS)) + r")\b.+)$",
        r"^(?P<alias>(?:my|our)\s+.+?)\s*:\s*(?P<steps>.+)$",
    )
    for form in forms:
        match = re.match(form, sentence, re.IGNORECASE)
        if match is None:
            continue
        steps = parse_steps(match.group("steps"))
        if steps:
            alias = match.group("alias").strip().strip("'\"")
            return Instruction(subtype=USER_PATTERN, alias=alias, description=sentence, steps=steps)
    return None


def _object_semantics(sentence: str) -> Instruction | None:
    forms = (
        (r"^i call\s+(?P<objects>.+?)\s+(?P<alias>(?:my|our)\s+.+)$", False),
        (
            r"^(?P<alias>(?:my|our)\s+.+?)\s+(?:consists of|is made of|includes|include|"
            r"means|is|are)\s+(?P<objects>.+)$",
            False,
        ),
        (r"^(?P<objects>.+?)\s+(?:is|are)\s+(?P<alias>(?:my|our)\s+.+)$", False),
    )
    for form, _ in forms:
        match = re.match(form, sentence, re.IGNORECASE)
        if match is None:
            continue
        phrases = [p for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", match.group("objects")) if p]
        objects = [object_spec(p) for p in phrases if bare(p)]
        if objects:
            return Instruction(
                subtype=OBJECT_SEMANTICS,
                alias=match.group("alias").strip(),
                description=sentence,
                objects=objects,
            )
    return None


def parse_steps(text: str) -> list[StepSpec]:
    """Steps of a routine in order (see the module docstring). Clauses that are not steps
    (no verb, nothing to repeat) are dropped."""
    clauses: list[str] = []
    for part in _STEP_SPLIT_RE.split(text):
        # A comma also separates steps when the next clause starts with a verb.
        pieces = re.split(r",\s*(?:and\s+)?", part)
        current = pieces[0]
        for piece in pieces[1:]:
            if _verb_of(piece) is not None:
                clauses.append(current)
                current = piece
            else:
                current = f"{current}, {piece}"
        clauses.append(current)
    steps: list[StepSpec] = []
    previous: StepSpec | None = None
    for clause in clauses:
        step = parse_step(clause, previous)
        if step is not None:
            steps.append(step)
            previous = step
    return steps


def parse_step(clause: str, previous: StepSpec | None = None) -> StepSpec | None:
    """One step: "move the candle to the table"; "to the couch" after it repeats "move the
    candle". None when the clause is not a step."""
    text = " ".join(clause.strip().strip(".!?,;:").split())
    text = re.sub(r"^(?:first|please|and)\s+", "", text, flags=re.IGNORECASE)
    if text.lower().startswith("to ") and _verb_of(text[3:]) is not None:
        text = text[3:]
    if not text:
        return None
    verb = _verb_of(text)
    if verb is None:
        if previous is None:
            return None
        action = previous.action
        objects = [a for a in previous.arguments if a.kind == "object"]
        rest = text
    else:
        action = verb
        rest = text[len(verb) :].strip()
        objects = []
    padded = f" {rest} "
    split = _LOCATION_RE.search(padded)
    if split is not None:
        object_text = padded[: split.start()].strip()
        preposition = split.group(1).lower()
        place = bare(padded[split.end() :])
    else:
        object_text, preposition, place = rest, "", ""
    if object_text:
        objects = [Argument(kind="object", spec=object_spec(object_text))]
    arguments = list(objects)
    if place:
        expression = f"{preposition} the {place}" if preposition else place
        arguments.append(
            Argument(kind="location", spec=LocationSpec(name=place, expression=expression))
        )
    if not arguments:
        return StepSpec(action=action) if verb is not None else None
    return StepSpec(action=action, arguments=arguments)


def _verb_of(text: str) -> str | None:
    tokens = text.strip().split()
    if not tokens or tokens[0].lower() not in ACTION_VERBS:
        return None
    verb = tokens[0].lower()
    if len(tokens) > 1 and tokens[1].lower() in _PHRASAL.get(verb, set()):
        return f"{verb} {tokens[1].lower()}"
    return verb
