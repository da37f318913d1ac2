"""Rule-based entity extraction: what a robot without an LLM still gets from its detectors.

Detection-style texts ("2 chairs, 1 person", "Detected: chair (0.92), person (0.81)",
"cup x2; bottle: 0.7") are parsed exactly: every item is a count, a label of at most three
words and a score. The labels form a vocabulary; free text ("a red chair by the door") is then
searched for known labels, keeping one modifier before the label ("red chair"). Text that
mentions nothing known yields nothing: this extractor does not guess.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from emem_graph.llm.client import ExtractedEntity
from emem_graph.text.names import (
    STOPWORDS,
    entity_type_of,
    normalize,
    singular,
    words,
)

_SPLIT_RE = re.compile(r"\s*(?:[,;|\n]|\band\b)\s*")
_NUMBER_RE = re.compile(r"^(\d+(?:\.\d+)?)(%?)$")
_COUNT_X_RE = re.compile(r"^(?:x(\d+)|(\d+)x)$")
_NOT_A_THING = frozenset({"nothing", "none", "empty", "unknown", "background", "clear"})
MAX_LABEL_WORDS = 3
CAPTION_CONFIDENCE = 0.8
"""Confidence of an entity found by name in free text (not scored by a detector)."""


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


class RuleBasedExtractor:
    """Entities from detection lists, and from free text that names a known label.

    Thread-safe; the vocabulary grows with every detection list seen and can be seeded with
    the names of entities already in the memory.
    """

    def __init__(self, vocabulary: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._labels: set[tuple[str, ...]] = set()
        self.learn(vocabulary)

    def learn(self, names: Iterable[str]) -> None:
        """Add names (and their head nouns) to the vocabulary used on free text."""
        with self._lock:
            for name in names:
                tokens = tuple(normalize(name).split())
                if tokens:
                    self._labels.add(tokens)
                    self._labels.add(tokens[-1:])

    @property
    def vocabulary(self) -> set[str]:
        with self._lock:
            return {" ".join(label) for label in self._labels}

    def extract(self, texts: Sequence[str]) -> list[ExtractedEntity]:
        """Entities of ``texts`` with the index of the text each came from. Detection lists
        are read first, so a caption in the same batch can name what a detector just taught."""
        parsed = [parse_detections(t) for t in texts]
        self.learn(d.label for items in parsed if items for d in items)
        found: list[ExtractedEntity] = []
        for index, (text, items) in enumerate(zip(texts, parsed, strict=True)):
            if items is not None:
                found.extend(
                    ExtractedEntity(
                        name=d.label,
                        entity_type=entity_type_of(d.label) or "object",
                        confidence=1.0 if d.score is None else d.score,
                        index=index,
                    )
                    for d in items
                )
            else:
                found.extend(
                    ExtractedEntity(
                        name=name,
                        entity_type=entity_type_of(name) or "object",
                        confidence=CAPTION_CONFIDENCE,
                        index=index,
                    )
                    for name in self.mentions(text)
                )
        return found

    def mentions(self, text: str) -> list[str]:
        """Known labels named in free text, each with at most one modifier word before it
        ("a red chair by the door" -> ["red chair"] once "chair" is known)."""
        tokens = [singular(t) for t in words(text)]
        with self._lock:
            labels = sorted(self._labels, key=len, reverse=True)
        taken = [False] * len(tokens)
        names: list[str] = []
        for label in labels:
            size = len(label)
            for start in range(len(tokens) - size + 1):
                end = start + size
                if any(taken[start:end]) or tuple(tokens[start:end]) != label:
                    continue
                for i in range(start, end):
                    taken[i] = True
                name = list(label)
                before = start - 1
                if before >= 0 and not taken[before] and _is_modifier(tokens[before]):
                    name.insert(0, tokens[before])
                    taken[before] = True
                joined = " ".join(name)
                if joined not in names:
                    names.append(joined)
        return names


def is_detection_text(text: str) -> bool:
    """True when ``text`` is a detection list: its words carry no context beyond the labels."""
    return parse_detections(text) is not None


def _is_modifier(token: str) -> bool:
    return token.isalpha() and token not in STOPWORDS and len(token) > 1
