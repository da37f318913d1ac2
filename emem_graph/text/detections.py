"""Detection lists as data: "2 chairs, 1 person", "Detected: chair (0.92), person (0.81)",
"cup x2; bottle: 0.7" — every item a count, a label of at most three words and a score.

Pure string parsing, shared by entity extraction (consolidation) and by summaries (digest.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from emem_graph.text.names import STOPWORDS, singular

_SPLIT_RE = re.compile(r"\s*(?:[,;|\n]|\band\b)\s*")
_NUMBER_RE = re.compile(r"^(\d+(?:\.\d+)?)(%?)$")
_COUNT_X_RE = re.compile(r"^(?:x(\d+)|(\d+)x)$")
_NOT_A_THING = frozenset({"nothing", "none", "empty", "unknown", "background", "clear"})
MAX_LABEL_WORDS = 3


@dataclass(frozen=True)
class Detection:
    """One item of a detection list."""

    label: str
    count: int = 1
    score: float | None = None


def parse_detections(text: str) -> list[Detection] | None:
    """The items of a detection-style text, or None when ``text`` is not one.

    A text is detection-style when every comma/semicolon-separated item is an optional count,
    a label of 1-3 plain words (no articles or prepositions) and an optional score; an optional
    ``prefix:`` ("Detected:", "objects:") is ignored.
    """
    body = text.strip().rstrip(".")
    if not body:
        return None
    prefix, colon, rest = body.partition(":")
    first_item = _SPLIT_RE.split(rest.strip().lower(), maxsplit=1)[0] if colon else ""
    is_value = bool(_NUMBER_RE.match(first_item))  # "chair: 0.9" is a label and its score
    short_prefix = len(prefix.split()) <= 3 and not any(ch.isdigit() for ch in prefix)
    if colon and first_item and not is_value and short_prefix:
        body = rest
    items = [i for i in _SPLIT_RE.split(body.lower()) if i.strip()]
    if not items:
        return None
    found: list[Detection] = []
    for item in items:
        detection = _parse_item(item)
        if detection is None:
            return None
        if not set(detection.label.split()) & _NOT_A_THING:
            found.append(detection)
    return found


def _parse_item(item: str) -> Detection | None:
    tokens = item.replace("(", " ").replace(")", " ").replace(":", " ").replace("=", " ").split()
    count, score = 1, None
    label: list[str] = []
    for position, token in enumerate(tokens):
        number = _NUMBER_RE.match(token)
        times = _COUNT_X_RE.match(token)
        if times:
            count = int(times.group(1) or times.group(2))
        elif number:
            value = float(number.group(1))
            if number.group(2):
                score = value / 100.0
            elif position == 0 and "." not in token:
                count = int(value)
            elif "." in token and value <= 1.0:
                score = value
            elif "." not in token:
                count = int(value)
            else:
                return None
        elif token == "x" and label:
            continue
        elif token.isalpha() or "-" in token:
            if token in STOPWORDS:
                return None
            label.append(token)
        else:
            return None
    if not label or len(label) > MAX_LABEL_WORDS:
        return None
    label[-1] = singular(label[-1])
    return Detection(" ".join(label), max(count, 1), None if score is None else min(score, 1.0))


def is_detection_text(text: str) -> bool:
    """True when ``text`` is a detection list: its words carry no context beyond the labels."""
    return parse_detections(text) is not None
