"""A request's answer as the protocol reads it, and the figures computed from many."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Answer:
    """One request's answer: for each line in order, the stored ids it shows (empty for a
    line that shows none: a gist, an area, an entity); ``gold`` the ids that count.

    ``group`` is the scene or conversation (the unit of cross-validation), ``summaries`` the
    number of lines among the first 10 that are gists or areas."""

    group: str
    request: str
    gold: frozenset[str]
    lines: tuple[frozenset[str], ...]
    summaries: int = 0
    kind: str = "single"
    answer_text: str = ""

    def first_rank(self) -> int | None:
        """The 1-based rank of the first line showing a gold id, or None."""
        for rank, ids in enumerate(self.lines, 1):
            if ids & self.gold:
                return rank
        return None

    def found_within(self, k: int) -> frozenset[str]:
        """The gold ids shown within the first ``k`` lines."""
        shown: set[str] = set()
        for ids in self.lines[:k]:
            shown |= ids
        return frozenset(shown & self.gold)


def hit_at(answers: Sequence[Answer], k: int) -> float:
    """Share of answers with a gold id within the first ``k`` lines."""
    return _mean([1.0 if a.found_within(k) else 0.0 for a in answers])


def all_at(answers: Sequence[Answer], k: int) -> float:
    """Share of answers with every gold id within the first ``k`` lines."""
    return _mean([1.0 if a.found_within(k) == a.gold else 0.0 for a in answers])


def recall_at(answers: Sequence[Answer], k: int) -> float:
    """The share of each answer's gold ids within the first ``k`` lines, averaged."""
    return _mean([len(a.found_within(k)) / len(a.gold) for a in answers])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def memento_figures(answers: Sequence[Answer]) -> dict[str, float]:
    """R@1, R@5 (single requests) and joint@5 (two-part requests)."""
    single = [a for a in answers if a.kind == "single"]
    joint = [a for a in answers if a.kind == "joint"]
    return {
        "R@1": hit_at(single, 1),
        "R@5": hit_at(single, 5),
        "joint@5": all_at(joint, 5),
    }


def locomo_figures(answers: Sequence[Answer]) -> dict[str, float]:
    """hit@1, hit@5, recall@5, recall@10 and summary lines in the top 10 (a count)."""
    return {
        "hit@1": hit_at(answers, 1),
        "hit@5": hit_at(answers, 5),
        "recall@5": recall_at(answers, 5),
        "recall@10": recall_at(answers, 10),
        "summaries@10": float(sum(a.summaries for a in answers)),
    }
