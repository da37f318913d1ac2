"""The n best positions of an array of scores, ties at the n-th place included, for the
store's searches to break ties by id (vector_search.py, keyword_search.py)."""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np


def best(scores: np.ndarray, n: int) -> np.ndarray:
    """Positions of the ``n`` highest scores, and of every score tied with the n-th (so that
    the caller's tie break on ids decides, not the order of the rows)."""
    if scores.shape[0] <= n:
        return np.arange(scores.shape[0])
    kth = np.partition(scores, scores.shape[0] - n)[scores.shape[0] - n]
    return np.flatnonzero(scores >= kth)


def best_first(scores: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` highest ``scores`` and of every score tied with the
    count-th, best first (equal scores by position): a longer count's order starts with a
    shorter one's."""
    chosen = best(scores, count)
    return chosen[np.argsort(-scores[chosen], kind="stable")]


def cut_by_id(
    scores: np.ndarray, best: np.ndarray, n: int, id_of: Callable[[int], str]
) -> list[int]:
    """Of the positions ``best`` (as best() gives them: the n highest ``scores`` and every one
    tied with the n-th), the n first by score, then id (``id_of`` a position), best first; only
    the tie group at the n-th place has its ids read."""
    if best.shape[0] <= n:
        return sorted(best.tolist(), key=lambda at: (-scores[at], id_of(at)))
    chosen = scores[best]
    kth = np.partition(chosen, chosen.shape[0] - n)[chosen.shape[0] - n]
    above = best[chosen > kth].tolist()
    tied = heapq.nsmallest(n - len(above), best[chosen == kth].tolist(), key=id_of)
    return sorted(above, key=lambda at: (-scores[at], id_of(at))) + tied
