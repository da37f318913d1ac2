"""Okapi BM25 as the protocol's baseline: k1 1.5, b 0.75, lower-case ``\\w+`` tokens."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _TOKEN.findall(text.lower())


class OkapiBM25:
    """BM25 over a fixed list of documents.

    Args:
        documents: the texts, in order; rank() returns their indices.
        k1: term-frequency saturation.
        b: length normalisation.
    """

    def __init__(self, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self._docs = [Counter(tokens(d)) for d in documents]
        self._lengths = [sum(c.values()) for c in self._docs]
        self._mean = sum(self._lengths) / max(1, len(self._lengths))
        frequency: Counter[str] = Counter()
        for doc in self._docs:
            frequency.update(doc.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}
        self._k1 = k1
        self._b = b

    def rank(self, query: str, n: int) -> list[int]:
        """Indices of the ``n`` best documents for ``query`` (ties: lower index first)."""
        words = tokens(query)
        scores = []
        for i, (doc, length) in enumerate(zip(self._docs, self._lengths, strict=True)):
            score = 0.0
            for word in words:
                tf = doc.get(word, 0)
                if tf:
                    norm = self._k1 * (1 - self._b + self._b * length / self._mean)
                    score += self._idf[word] * tf * (self._k1 + 1) / (tf + norm)
            scores.append((-score, i))
        return [i for _, i in sorted(scores)[:n]]
