"""The text of an area gist: the LLM's summary when one answers, an extractive one otherwise.

A level-1 area summarizes its leaves (observation and gist texts, with their stored vectors); an
area above summarizes its children's summaries. Without an LLM, a level-1 summary keeps the most
representative, non-redundant texts of its leaves (consolidation's extractive selection); a
summary above keeps the most representative sentence of every child first (largest children
first) and fills up with the most representative of the rest, so a building's summary names
something of each of its rooms, which is what a walk from the top needs to find them.

Either way a summary repeats no sentence: a gist leaf's digest is split into its sentences (its
footer, count, place and time, left out), and a sentence that several leaves or children share
("A red cup left on the kitchen table" and the same with "(3x)") is one candidate.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.llm.client import MAX_PROMPT_TEXTS
from emem_graph.text.detections import parse_detections
from emem_graph.text.digest import is_digest, parse_digest, things_sentence
from emem_graph.text.extractive import Embed, select_representative, unique_texts

if TYPE_CHECKING:
    from emem_graph.llm.guard import LLMGuard

MAX_AREA_CHARS = 900
LEAF_SENTENCES = 8
"""Texts a level-1 extractive summary keeps."""
AREA_SENTENCES = 12
"""Sentences an extractive summary above level 1 keeps (at least one per child while room)."""
KNOWN_SENTENCES = 50_000
"""Sentence vectors remembered between levels and updates (least recently used out)."""
BACKGROUND_WEIGHT = 0.5
"""How much a sentence's likeness to the whole memory counts against it (see salient)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of a summary (split after . ! ?)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def as_sentence(text: str) -> str:
    """A text as a summary sentence: capitalised, ending with a full stop."""
    text = " ".join(text.split())
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


class AreaTexts:
    """Writes area summaries and gives the vectors of their sentences.

    Args:
        guard: the memory's guarded LLM (None or disabled: extractive only).
        embed: the memory's embedder.
    """

    def __init__(self, guard: LLMGuard | None, embed: Embed) -> None:
        self._guard = guard
        self._embed = embed
        self._known: OrderedDict[str, np.ndarray] = OrderedDict()
        self.background: np.ndarray | None = None
        """Unit mean vector of the whole memory: what every area shares (see salient)."""
        self.llm_texts = 0
        self.fallback_texts = 0

    def of_leaves(self, texts: Sequence[str], vectors: np.ndarray) -> str:
        """Summary of a level-1 area from its leaves' texts (time order) and vectors."""
        distinct, counts, first = unique_texts(texts)
        if not distinct:
            return ""
        matrix = np.asarray(vectors, dtype=np.float32)[first]
        answer = self._ask(distinct, matrix, counts)
        if answer:
            return answer
        self.fallback_texts += 1
        # Gist leaves summarize disjoint groups of observations: their counts add up into one
        # "Detected ..." sentence, and a detection list that names nothing else adds nothing.
        digests = [is_digest(text) for text in distinct]
        things: dict[str, int] = {}
        for text, count, digest in zip(distinct, counts, digests, strict=True):
            for label, n in (parse_digest(text)[0] if digest else {}).items():
                things[label] = things.get(label, 0) + n * count
        pool = _Pool()
        for text, count, vector, digest in zip(distinct, counts, matrix, digests, strict=True):
            if not digest:
                items = parse_detections(text) if things else None
                if items is None or not {d.label for d in items} <= things.keys():
                    pool.add(text, float(count), vector)
                continue
            # A gist's digest: its sentences (its footer left out), each a candidate of its
            # own, merged with the same sentence of another leaf.
            parts = parse_digest(text)[1]
            for part in parts:
                pool.add(part, float(count) / len(parts), None)
        if things:
            pool.add(things_sentence(_ranked(things)), float(sum(counts)) / 2, None)
        pool.embed_missing(self.sentence_vectors)
        picked = salient(
            pool.matrix(),
            pool.weights,
            LEAF_SENTENCES,
            self.background,
            max_chars=MAX_AREA_CHARS,
            lengths=[len(t) for t in pool.texts],
        )
        chosen = sorted(picked)
        for index in chosen:
            self._remember(as_sentence(pool.texts[index]), pool.vectors[index])
        return " ".join(as_sentence(pool.texts[i]) for i in chosen)

    def of_areas(self, texts: Sequence[str], weights: Sequence[float]) -> str:
        """Summary of an area from its children's summaries and sizes."""
        if len(texts) == 1:
            return texts[0]
        # Children are disjoint: their "Detected ..." counts add up into one sentence.
        things: dict[str, int] = {}
        parts: list[list[str]] = []
        for text in texts:
            child_things, own = parse_digest(text) if is_digest(text) else ({}, sentences(text))
            for label, n in child_things.items():
                things[label] = things.get(label, 0) + n
            parts.append(own)
        counted = things_sentence(_ranked(things))
        candidates = [s for part in parts for s in part]
        if not candidates:
            return counted
        owner = [child for child, part in enumerate(parts) for _ in part]
        share = [float(weights[child]) / len(parts[child]) for child in owner]
        vectors = self.sentence_vectors(candidates)
        answer = self._ask(candidates, vectors, share)
        if answer:
            return answer
        self.fallback_texts += 1
        budget = MAX_AREA_CHARS - (len(counted) + 1 if counted else 0)
        chosen: list[int] = []
        taken: set[str] = set()
        used = 0
        # The most representative sentence of each child, largest children first.
        for child in sorted(range(len(texts)), key=lambda c: -float(weights[c])):
            rows = [i for i, o in enumerate(owner) if o == child]
            if not rows or len(chosen) >= AREA_SENTENCES:
                continue
            best = rows[salient(vectors[rows], [1.0] * len(rows), 1, self.background)[0]]
            if chosen and used + len(candidates[best]) > budget:
                continue
            if _key(candidates[best]) not in taken:
                chosen.append(best)
                taken.add(_key(candidates[best]))
                used += len(candidates[best])
        room = AREA_SENTENCES - len(chosen)
        if room > 0:
            rest = [i for i in range(len(candidates)) if i not in chosen]
            picked = salient(
                vectors[rest],
                [share[i] for i in rest],
                room,
                self.background,
                max_chars=max(0, budget - used),
                lengths=[len(candidates[i]) for i in rest],
            )
            for index in picked:
                sentence = candidates[rest[index]]
                if _key(sentence) not in taken and used + len(sentence) <= budget:
                    chosen.append(rest[index])
                    taken.add(_key(sentence))
                    used += len(sentence)
        return " ".join([*(candidates[i] for i in sorted(chosen)), counted]).strip()

    def sentence_vectors(self, items: Sequence[str]) -> np.ndarray:
        """Vectors of summary sentences (remembered ones reused, the rest embedded at once)."""
        missing = [s for s in dict.fromkeys(items) if s not in self._known]
        if missing:
            for sentence, vector in zip(missing, self._embed(missing), strict=True):
                self._remember(sentence, np.asarray(vector, dtype=np.float32))
        out = np.empty((len(items), self._dim()), dtype=np.float32)
        for row, sentence in enumerate(items):
            out[row] = self._known[sentence]
            self._known.move_to_end(sentence)
        return out

    def vector_of(self, text: str) -> np.ndarray:
        """An area gist's vector: the normalised mean of its sentences' vectors (the summary's
        meaning, without embedding a long text whose sentences are embedded already)."""
        rows = self.sentence_vectors(sentences(text) or [text])
        mean = unit_rows(rows).mean(axis=0)
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)

    def probes(self, text: str) -> np.ndarray:
        """Unit vectors of a summary's sentences (what a walk compares a question with)."""
        return unit_rows(self.sentence_vectors(sentences(text) or [text]))

    def _dim(self) -> int:
        return len(next(iter(self._known.values())))

    def _remember(self, sentence: str, vector: np.ndarray) -> None:
        self._known[sentence] = np.asarray(vector, dtype=np.float32)
        self._known.move_to_end(sentence)
        while len(self._known) > KNOWN_SENTENCES:
            self._known.popitem(last=False)

    def _ask(self, texts: list[str], vectors: np.ndarray, weights: Sequence[float]) -> str | None:
        if self._guard is None or not self._guard.enabled:
            return None
        chosen = list(texts)
        if len(chosen) > MAX_PROMPT_TEXTS:
            picked = select_representative(vectors, weights, MAX_PROMPT_TEXTS)
            chosen = [texts[i] for i in sorted(picked)]
        with self._guard.job():
            answer = self._guard.call("summarize", chosen)
        if isinstance(answer, str) and answer.strip():
            self.llm_texts += 1
            text = " ".join(answer.split())
            return text if len(text) <= MAX_AREA_CHARS else text[: MAX_AREA_CHARS - 1] + "…"
        return None


def salient(
    vectors: np.ndarray,
    weights: Sequence[float],
    k: int,
    background: np.ndarray | None,
    *,
    max_chars: int | None = None,
    lengths: Sequence[int] | None = None,
) -> list[int]:
    """Indices of up to ``k`` rows by maximal marginal relevance, where a row's relevance is
    its similarity to the weighted centroid minus BACKGROUND_WEIGHT times its similarity to
    ``background`` (what the whole memory is like): a room's summary keeps what sets it apart
    (the coffee machine) before what every room has (a closed door)."""
    return select_representative(
        vectors, weights, k, max_chars=max_chars, lengths=lengths, background=background,
        background_weight=BACKGROUND_WEIGHT,
    )  # fmt: skip


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class _Pool:
    """Candidate sentences of a summary: each distinct sentence once (its weights added up),
    with its vector (or None until embed_missing)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.weights: list[float] = []
        self.vectors: list[np.ndarray] = []
        self._rows: dict[str, int] = {}
        self._missing: list[int] = []

    def add(self, text: str, weight: float, vector: np.ndarray | None) -> None:
        key = _key(text)
        row = self._rows.get(key)
        if row is not None:
            self.weights[row] += weight
            return
        self._rows[key] = len(self.texts)
        self.texts.append(_COUNT_RE.sub("", " ".join(text.split())))
        self.weights.append(weight)
        if vector is None:
            self._missing.append(len(self.vectors))
            self.vectors.append(np.zeros(0, dtype=np.float32))
        else:
            self.vectors.append(np.asarray(vector, dtype=np.float32))

    def embed_missing(self, embed: Callable[[Sequence[str]], np.ndarray]) -> None:
        if self._missing:
            rows = embed([as_sentence(self.texts[i]) for i in self._missing])
            for index, vector in zip(self._missing, rows, strict=True):
                self.vectors[index] = np.asarray(vector, dtype=np.float32)
            self._missing = []

    def matrix(self) -> np.ndarray:
        return np.vstack(self.vectors)


_COUNT_RE = re.compile(r" \(\d+x\)(?=\.?$)")


def _key(sentence: str) -> str:
    """A sentence without case, spacing, final full stop and ``(3x)`` count."""
    return _COUNT_RE.sub("", " ".join(sentence.split()).rstrip(".")).lower()


def _ranked(things: dict[str, int]) -> dict[str, int]:
    order = {label: i for i, label in enumerate(things)}
    return dict(sorted(things.items(), key=lambda item: (-item[1], order[item[0]])))
