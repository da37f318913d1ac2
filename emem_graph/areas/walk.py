"""The tree walk: from the roots down, keep the children most similar to the question, then the
best leaf of each area reached; returns chains leaf -> root.

Several walks run side by side: they start at the ``n_walks`` roots most similar to the
question; at every level each walk goes on to its best child, and the walks a tree has no room
for (fewer roots than walks) follow the best other children (the second-best branch), so a
question whose answer hides in a room that a building's summary leaves out can still be
reached. The walk scores ``n_walks x branching`` nodes per level, plus one prefiltered leaf
search per area reached (run in parallel): O(depth x branching) work, independent of the number
of leaves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from emem_graph.areas.forest import Area, Forest
from emem_graph.models import Entity, Gist, Observation

LEAF_WEIGHT = 0.6
"""Share of the leaf's similarity in a chain's score (the rest: the mean of its areas')."""

LeafSearch = Callable[[Area, np.ndarray], list[tuple[Observation | Gist | Entity, float]]]
Chooser = Callable[[str, list[Area]], int | None]


@dataclass
class Chain:
    """One walk's answer: the best leaf of the area it reached and the areas above it."""

    areas: list[Area]
    """Finest first (level 1 ... root)."""
    similarities: list[float]
    """Similarity of the question to each area, same order."""
    leaf: Observation | Gist | Entity | None = None
    leaf_similarity: float = 0.0

    @property
    def score(self) -> float:
        area_score = float(np.mean(self.similarities)) if self.similarities else 0.0
        if self.leaf is None:
            return area_score
        return LEAF_WEIGHT * self.leaf_similarity + (1 - LEAF_WEIGHT) * area_score


@dataclass
class WalkResult:
    """Chains best first, with what the walk cost."""

    chains: list[Chain]
    visited: int
    """Nodes whose similarity was computed (areas and leaves)."""
    seconds: float
    levels: int
    chosen_by_llm: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def walk(
    forest: Forest,
    probes: Callable[[Area], np.ndarray],
    query: np.ndarray,
    *,
    n_walks: int,
    leaf_search: LeafSearch | None,
    question: str = "",
    chooser: Chooser | None = None,
) -> WalkResult:
    """Walk ``forest`` for the question vector ``query``.

    Args:
        probes: an area's vectors (its summary's sentences, unit length); its similarity to
            the question is the best of theirs.
        n_walks: walks kept side by side at every level.
        leaf_search: best leaves of a level-1 area for the question (None: areas only).
        question: the question's text (for ``chooser``).
        chooser: optional LLM choice of the best child among an area's children (index or
            None); its pick leads that walk, the other children stay candidates for the
            walks left.
    """
    started = time.perf_counter()
    unit = query / max(float(np.linalg.norm(query)), 1e-12)
    roots = forest.roots()
    if not roots:
        return WalkResult([], 0, 0.0, 0)

    def similarity(area: Area) -> float:
        return float(np.max(probes(area) @ unit))

    # The walks start at the roots most similar to the question, one per root.
    paths: list[tuple[list[Area], list[float]]] = [([r], [similarity(r)]) for r in roots]
    visited = len(roots)
    paths = _best(paths, n_walks)
    llm_picks = 0
    while any(path[0][-1].level > 1 for path in paths):
        groups: list[list[tuple[list[Area], list[float]]]] = []
        for areas, sims in paths:
            if areas[-1].level == 1:
                groups.append([(areas, sims)])
                continue
            children = [forest.areas[c] for c in areas[-1].children]
            scored = _best([([*areas, c], [*sims, similarity(c)]) for c in children], len(children))
            visited += len(children)
            if chooser is not None and len(children) > 1:
                index = chooser(question, children)
                if index is not None and 0 <= index < len(children):
                    # The LLM's pick leads this walk; the rest stay candidates.
                    chosen = next(p for p in scored if p[0][-1].id == children[index].id)
                    if chosen is not scored[0]:
                        llm_picks += 1
                    scored.remove(chosen)
                    scored.insert(0, chosen)
            groups.append(scored)
        paths = _continue(groups, n_walks)
    chains = [Chain(list(reversed(areas)), list(reversed(sims))) for areas, sims in paths]
    if leaf_search is not None:
        with ThreadPoolExecutor(max_workers=max(1, len(chains))) as pool:
            found = list(pool.map(lambda c: leaf_search(c.areas[0], unit), chains))
        for chain, leaves in zip(chains, found, strict=True):
            visited += len(leaves)
            if leaves:
                chain.leaf, chain.leaf_similarity = max(leaves, key=lambda pair: pair[1])
    chains.sort(key=lambda c: -c.score)
    return WalkResult(
        chains, visited, time.perf_counter() - started, forest.depth, chosen_by_llm=llm_picks
    )


def _continue(
    groups: list[list[tuple[list[Area], list[float]]]], n: int
) -> list[tuple[list[Area], list[float]]]:
    """Every walk goes on with its best child (walks ranked by it); the slots left go to the
    best other children of any walk."""
    leaders = _best([group[0] for group in groups if group], n)
    taken = {id(p) for p in leaders}
    rest = [p for group in groups for p in group if id(p) not in taken]
    return leaders + _best(rest, n - len(leaders))


def _best(
    paths: Sequence[tuple[list[Area], list[float]]], n: int
) -> list[tuple[list[Area], list[float]]]:
    return sorted(paths, key=lambda p: (-p[1][-1], p[0][-1].id))[:n]
