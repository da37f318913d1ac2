"""Entity names as words: tokens, singular forms, head nouns, and when two names can be one thing.

"chair" (a detector's label) and "red chair" (from a caption) name the same kind of thing with
more or less detail; "red chair" and "blue chair" do not. Name embeddings alone put "chair" and
"red chair" below a 0.85 similarity threshold, so the merge test also accepts a name whose words
contain the other's, with the same head noun.
"""

from __future__ import annotations

import functools
import re

_WORD_RE = re.compile(r"[a-z][a-z0-9'-]*")

_STOPWORD_TEXT = """
a an the this that these those some any each every another other its it his her their our my
your of on in at by to for from with without near next beside behind under over above below
between into onto off up down and or but is are was were be been there
here very just also only about around than then while where which who what when how one two
three four five six seven eight nine ten several many few lots lot couple pair multiple no
not all both either neither same
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words that are never an entity's label: articles, prepositions, numbers, pronouns."""

_IRREGULAR = {
    "people": "person",
    "persons": "person",
    "men": "man",
    "women": "woman",
    "children": "child",
    "mice": "mouse",
    "feet": "foot",
    "teeth": "tooth",
    "knives": "knife",
    "shelves": "shelf",
    "leaves": "leaf",
    "glasses": "glass",
    "boxes": "box",
    "couches": "couch",
    "benches": "bench",
    "dishes": "dish",
    "buses": "bus",
}
_KEEP = frozenset({"glass", "bus", "gas", "grass", "class", "dress", "mattress", "cactus", "press"})

PERSON_WORDS = frozenset({"person", "man", "woman", "child", "boy", "girl", "human", "visitor"})
ANIMAL_WORDS = frozenset({"dog", "cat", "bird", "horse", "cow", "sheep", "animal"})


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters, digits, apostrophes and hyphens)."""
    return _WORD_RE.findall(text.lower())


def singular(word: str) -> str:
    """A plural noun's singular form by the common English rules ("chairs" -> "chair")."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word in _KEEP or len(word) <= 2 or word.endswith("ss") or word.endswith("us"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=1 << 16)
def normalize(name: str) -> str:
    """A name as singular lower-case words without articles ("The Red Chairs" -> "red chair")."""
    tokens = [t for t in words(name) if t not in {"a", "an", "the"}]
    if tokens:
        tokens[-1] = singular(tokens[-1])
    return " ".join(tokens)


def head(name: str) -> str:
    """The head noun of a name: its last word, singular ("red dining chairs" -> "chair")."""
    tokens = normalize(name).split()
    return tokens[-1] if tokens else ""


@functools.lru_cache(maxsize=1 << 16)
def compatible(a: str, b: str) -> bool:
    """True when one name is the other with more detail: same head noun, and the words of one
    contain the other's ("chair" ~ "red chair"; not "red chair" ~ "blue chair")."""
    left, right = normalize(a).split(), normalize(b).split()
    if not left or not right or left[-1] != right[-1]:
        return False
    return set(left) <= set(right) or set(right) <= set(left)


@functools.lru_cache(maxsize=1 << 16)
def generic(name: str) -> bool:
    """True for a bare noun without modifiers ("chair", not "red chair")."""
    return len(normalize(name).split()) <= 1


def more_specific(current: str, candidate: str) -> bool:
    """True when ``candidate`` names the same thing as ``current`` with strictly more words."""
    now, new = set(normalize(current).split()), set(normalize(candidate).split())
    return compatible(current, candidate) and now < new


def entity_type_of(name: str) -> str | None:
    """A coarse type for a name from its head noun: person, animal, or None (unknown)."""
    noun = head(name)
    if noun in PERSON_WORDS:
        return "person"
    if noun in ANIMAL_WORDS:
        return "animal"
    return None
