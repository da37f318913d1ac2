"""Rule-based entity extraction: what a robot without an LLM still gets from its detectors.

Detection-style texts ("2 chairs, 1 person", "Detected: chair (0.92), person (0.81)",
"cup x2; bottle: 0.7") are parsed exactly: every item is a count, a label of at most three
words and a score. The labels form a vocabulary; free text ("a red chair by the door") is then
searched for known labels, keeping one modifier before the label ("red chair"). Text that
mentions nothing known yields nothing: this extractor does not guess.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from emem_graph.llm.client import MAX_EXTRACTED_NAME_CHARS, ExtractedEntity
from emem_graph.text.detections import (
    MAX_LABEL_WORDS,
    Detection,
    is_detection_text,
    parse_detections,
)
from emem_graph.text.names import STOPWORDS, entity_type_of, normalize, singular, words

__all__ = [
    "CAPTION_CONFIDENCE",
    "MAX_LABEL_WORDS",
    "Detection",
    "RuleBasedExtractor",
    "is_detection_text",
    "parse_detections",
]

CAPTION_CONFIDENCE = 0.8
"""Confidence of an entity found by name in free text (not scored by a detector)."""


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
        parsed = [_named(parse_detections(t)) for t in texts]
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
                    if len(name) <= MAX_EXTRACTED_NAME_CHARS  # a modifier word may be any size
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


def _is_modifier(token: str) -> bool:
    return token.isalpha() and token not in STOPWORDS and len(token) > 1


def _named(items: list[Detection] | None) -> list[Detection] | None:
    """The detections whose label can be an entity's name: one of thousands of characters
    (a hostile or broken detector line) is no name of a thing, and is left out."""
    if items is None:
        return None
    return [d for d in items if len(d.label) <= MAX_EXTRACTED_NAME_CHARS]
