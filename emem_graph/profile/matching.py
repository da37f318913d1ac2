"""When two phrasings name the same profile node, and phrases as words (head noun, modifiers).

MiniLM cosine similarity separates most paraphrases from different things, but not all: "mouse
pad" / "mouse mat" measure 0.74 and "kitchen counter" / "countertop at kitchen" 0.88, while "red
cup" / "blue cup" measure 0.79, "mouse pad" / "mouse" 0.80 and "left drawer" / "right drawer"
0.92. So a phrase is the same thing as a node when the similarity reaches SAME_THRESHOLD *and*
no lexical conflict says otherwise: two different values of one exclusive modifier class (colour,
side, level, room, size, material), or one phrase's head noun used as a mere modifier in the
other ("mouse" in "mouse pad", "desk" in "desk lamp"). The figures come from the calibration in
evals/profile.py (``emem-graph profile-eval``), where they are reported.
"""

from __future__ import annotations

import numpy as np

from emem_graph.text.names import STOPWORDS, singular, words

SAME_THRESHOLD = 0.72
"""Cosine similarity from which two object or location phrasings may be one node."""
ALIAS_THRESHOLD = 0.85
"""Cosine similarity of two aliases ("my cozy evening" / "my cozy evening routine") from which
an instruction updates the existing knowledge of that user and type instead of adding one."""

_PREPOSITIONS = frozenset(
    [
        "with",
        "at",
        "in",
        "on",
        "of",
        "for",
        "near",
        "from",
        "by",
        "under",
        "over",
        "behind",
        "beside",
        "next",
        "inside",
        "outside",
        "to",
        "into",
        "onto",
        "above",
        "below",
        "between",
    ]
)
_POSSESSIVES = frozenset(["my", "our", "his", "her", "their", "your"])

_EXCLUSIVE_CLASSES: tuple[frozenset[str], ...] = (
    frozenset(
        [
            "red",
            "orange",
            "yellow",
            "green",
            "blue",
            "purple",
            "violet",
            "pink",
            "brown",
            "black",
            "white",
            "grey",
            "gray",
            "silver",
            "gold",
            "golden",
            "beige",
            "navy",
            "turquoise",
            "teal",
            "maroon",
            "cream",
        ]
    ),
    frozenset(["left", "right"]),
    frozenset(["top", "bottom", "middle", "upper", "lower"]),
    frozenset(["front", "back", "rear"]),
    frozenset(["big", "large", "small", "little", "tiny", "huge"]),
    frozenset(
        [
            "kitchen",
            "bedroom",
            "bathroom",
            "living",
            "dining",
            "office",
            "garage",
            "hallway",
            "hall",
            "garden",
            "balcony",
            "basement",
            "attic",
            "laundry",
            "nursery",
            "study",
        ]
    ),
    frozenset(
        [
            "wooden",
            "wood",
            "metal",
            "plastic",
            "glass",
            "ceramic",
            "paper",
            "steel",
            "leather",
            "cotton",
        ]
    ),
    frozenset(["first", "second", "third", "fourth", "last"]),
)


def content_words(phrase: str) -> list[str]:
    """The words of a phrase without articles, possessives and other stop words, singular."""
    return [singular(w) for w in words(phrase) if w not in STOPWORDS and w not in _POSSESSIVES]


def head_noun(phrase: str) -> str:
    """The head noun: the last content word before the first preposition ("yellow cup with the
    wooden handle" -> "cup", "countertop at kitchen" -> "countertop")."""
    tokens = words(phrase)
    cut = next((i for i, w in enumerate(tokens) if w in _PREPOSITIONS and i > 0), len(tokens))
    main = [singular(w) for w in tokens[:cut] if w not in STOPWORDS and w not in _POSSESSIVES]
    if main:
        return main[-1]
    rest = content_words(phrase)
    return rest[-1] if rest else ""


def core_phrase(phrase: str) -> str:
    """The words before the first preposition, without articles ("keys on the red keychain" ->
    "keys"): what an entity's name usually holds."""
    tokens = words(phrase)
    cut = next((i for i, w in enumerate(tokens) if w in _PREPOSITIONS and i > 0), len(tokens))
    return " ".join(w for w in tokens[:cut] if w not in STOPWORDS and w not in _POSSESSIVES)


def conflicts(a: str, b: str) -> bool:
    """True when the words of two phrases say they are different things (see the module)."""
    left, right = set(content_words(a)), set(content_words(b))
    for values in _EXCLUSIVE_CLASSES:
        mine, theirs = left & values, right & values
        if mine and theirs and not mine & theirs:
            return True
    head_a, head_b = head_noun(a), head_noun(b)
    # "mouse" vs "mouse pad": the bare head of one is only a modifier of the other.
    return bool(head_a and head_b and head_a != head_b and (head_a in right or head_b in left))


def same_thing(a: str, b: str, similarity: float, threshold: float = SAME_THRESHOLD) -> bool:
    """Whether phrase ``a`` and phrase ``b`` (cosine ``similarity``) name one profile node."""
    return similarity >= threshold and not conflicts(a, b)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def cosine(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Exact cosine similarity of one vector against the rows of ``matrix``."""
    if len(matrix) == 0:
        return np.zeros(0, dtype=np.float32)
    return unit_rows(matrix) @ unit_rows(query)[0]


def strip_possessive(alias: str) -> str:
    """An alias without a leading possessive or article ("my favorite cup" -> "favorite
    cup"), for comparing aliases said by different people."""
    tokens = alias.split()
    while tokens and tokens[0].lower() in _POSSESSIVES | {"the", "a", "an"}:
        tokens = tokens[1:]
    return " ".join(tokens) or alias
