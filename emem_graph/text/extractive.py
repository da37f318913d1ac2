"""Extractive summaries: the no-LLM gist text, chosen with the embeddings.

Rather than concatenating every observation, the summary keeps the few texts that best represent
the whole (closest to the frequency-weighted centroid of their embeddings) while skipping texts
that repeat one already chosen (maximal marginal relevance), in the order they were perceived.
The same selection trims long inputs before they go to an LLM.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from emem_graph.text.detections import parse_detections
from emem_graph.text.names import STOPWORDS, singular, words

Embed = Callable[[list[str]], np.ndarray]

RELEVANCE_WEIGHT = 0.7
"""MMR trade-off: 1.0 = only representativeness, 0.0 = only novelty."""
REDUNDANT_SIMILARITY = 0.9
"""A text this similar (cosine) to one already chosen adds nothing and is skipped."""
MAX_SUMMARY_CHARS = 600


def unique_texts(texts: Sequence[str]) -> tuple[list[str], list[int], list[int]]:
    """Distinct texts (case and spacing ignored) in first-seen order, how often each occurs,
    and the index in ``texts`` of each one's first occurrence."""
    seen: dict[str, int] = {}
    distinct: list[str] = []
    counts: list[int] = []
    first: list[int] = []
    for index, text in enumerate(texts):
        cleaned = " ".join(text.split())
        if not cleaned:
            continue
        key = cleaned.lower().rstrip(".")
        if key in seen:
            counts[seen[key]] += 1
            continue
        seen[key] = len(distinct)
        distinct.append(cleaned)
        counts.append(1)
        first.append(index)
    return distinct, counts, first


def select_representative(
    vectors: np.ndarray, weights: Sequence[float], k: int, *, max_chars: int | None = None,
    lengths: Sequence[int] | None = None, background: np.ndarray | None = None,
    background_weight: float = 0.0,
) -> list[int]:  # fmt: skip
    """Indices of up to ``k`` rows chosen by maximal marginal relevance to the weighted centroid
    (most representative first; near-duplicates of a chosen row are skipped). With
    ``background`` (a unit vector), a row's relevance loses ``background_weight`` times its
    similarity to it: what sets the rows apart comes before what is everywhere."""
    count = len(vectors)
    if count == 0 or k <= 0:
        return []
    unit = _unit(np.asarray(vectors, dtype=np.float32))
    weight = np.asarray(weights, dtype=np.float32).reshape(-1, 1)
    centroid = _unit((unit * weight).sum(axis=0, keepdims=True))[0]
    relevance = unit @ centroid
    if background is not None:
        relevance = relevance - background_weight * (unit @ background)
    sizes = list(lengths) if lengths is not None else [0] * count
    budget = float("inf") if max_chars is None else float(max_chars)
    chosen: list[int] = []
    redundancy = np.full(count, -1.0, dtype=np.float32)
    available = np.ones(count, dtype=bool)
    used_chars = 0
    while len(chosen) < k and available.any():
        score = RELEVANCE_WEIGHT * relevance - (1 - RELEVANCE_WEIGHT) * np.maximum(redundancy, 0)
        score[~available] = -np.inf
        best = int(np.argmax(score))
        available[best] = False
        if redundancy[best] >= REDUNDANT_SIMILARITY:
            continue
        if chosen and used_chars + sizes[best] > budget:
            continue
        chosen.append(best)
        used_chars += sizes[best]
        redundancy = np.maximum(redundancy, unit @ unit[best])
    return chosen


def extractive_summary(
    texts: Sequence[str],
    embed: Embed,
    *,
    vectors: np.ndarray | None = None,
    max_sentences: int = 5,
    max_chars: int = MAX_SUMMARY_CHARS,
) -> str:
    """The most representative, non-redundant texts, in perception order, as one paragraph.

    Args:
        texts: observation texts in time order (duplicates count as weight).
        embed: embedder for texts without a vector.
        vectors: one vector per text of ``texts`` (e.g. the stored observation vectors), or
            None to embed the distinct texts.
        max_sentences: texts kept at most.
        max_chars: length budget of the summary (the first text is always kept).
    """
    distinct, counts, first = unique_texts(texts)
    if not distinct:
        return ""
    if len(distinct) == 1:
        return _sentence(distinct[0])
    matrix = (
        np.asarray(vectors, dtype=np.float32)[first] if vectors is not None else embed(distinct)
    )
    picked = select_representative(
        matrix, counts, max_sentences, max_chars=max_chars, lengths=[len(t) for t in distinct]
    )
    return " ".join(_sentence(distinct[i]) for i in sorted(picked))


def cross_layer_summary(
    texts_by_layer: dict[str, list[str]],
    embed: Embed,
    *,
    vectors_by_layer: dict[str, np.ndarray] | None = None,
    max_sentences: int = 5,
) -> str:
    """Per-layer extractive summaries, tagged ``[layer]``, then the things named by more than
    one layer ("Seen by 2 layers: chair, table.") — the agreements a rule can find."""
    layers = [layer for layer, texts in texts_by_layer.items() if texts]
    if not layers:
        return ""
    # Each layer keeps a fair share of a doubled budget: two layers get max_sentences each.
    per_layer = max(2, math.ceil(2 * max_sentences / len(layers)))
    parts = []
    for layer in sorted(layers):
        vectors = (vectors_by_layer or {}).get(layer)
        summary = extractive_summary(
            texts_by_layer[layer],
            embed,
            vectors=vectors,
            max_sentences=per_layer,
            max_chars=2 * MAX_SUMMARY_CHARS // len(layers),
        )
        parts.append(f"[{layer}] {summary}")
    shared = shared_terms(texts_by_layer)
    if shared:
        parts.append(f"Seen by {len(layers)} layers: {', '.join(shared)}.")
    return " ".join(parts)


def shared_terms(texts_by_layer: dict[str, list[str]], limit: int = 8) -> list[str]:
    """Things (singular) that at least two layers mention, most mentioned first. The labels
    of detection lists are whole names: "coffee machine" is one term, not "coffee" and
    "machine"; other content words count alone."""
    if len(texts_by_layer) < 2:
        return []
    names = {
        tuple(d.label.split())
        for texts in texts_by_layer.values()
        for text in texts
        for d in parse_detections(text) or []
    }
    longest_first = sorted((n for n in names if len(n) > 1), key=len, reverse=True)
    layers_of: dict[str, set[str]] = {}
    mentions: dict[str, int] = {}
    for layer, texts in texts_by_layer.items():
        for text in texts:
            for term in _terms([singular(w) for w in words(text)], longest_first):
                layers_of.setdefault(term, set()).add(layer)
                mentions[term] = mentions.get(term, 0) + 1
    shared = [t for t, owners in layers_of.items() if len(owners) >= 2]
    shared.sort(key=lambda t: (-len(layers_of[t]), -mentions[t], t))
    return shared[:limit]


def _terms(tokens: list[str], names: list[tuple[str, ...]]) -> list[str]:
    """The terms of a tokenized text: multi-word ``names`` where their words stand together,
    the remaining content words alone."""
    taken = [False] * len(tokens)
    terms: list[str] = []
    for name in names:
        size = len(name)
        for start in range(len(tokens) - size + 1):
            if not any(taken[start : start + size]) and tuple(tokens[start : start + size]) == name:
                taken[start : start + size] = [True] * size
                terms.append(" ".join(name))
    for token, used in zip(tokens, taken, strict=True):
        if not used and token not in STOPWORDS and len(token) >= 3 and token.isalpha():
            terms.append(token)
    return terms


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
