"""VectorSearch: the store's nearest-neighbour search (MemoryStore.vector_hits), answered in
process where it can (a small memory's exact copy, an area's vector sketch, the vector store's
copy of the gist and entity rows) and by LanceDB otherwise.

A mixin of MemoryStore (storage/store.py); the copies it searches are loaded and kept by
storage/vector_copies.py.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from emem_graph.filters import VectorFilter
from emem_graph.models import INTEROCEPTION, VectorHit
from emem_graph.storage import ranking
from emem_graph.storage.vector_copies import VectorCopies

if TYPE_CHECKING:
    from emem_graph.storage.entity_index import EntityIndex
    from emem_graph.storage.exact import ExactVectors

EXACT_GATHER_SHARE = 4
"""An exact search whose filter admits fewer than 1 / EXACT_GATHER_SHARE of the rows gathers
and scores those rows only; a wider one scores every row in one product and picks (gathering
copies the rows: slower than the product over all of them past about a quarter)."""


class VectorSearch(VectorCopies):
    """The dense search over the in-process copies, the vector store's, or LanceDB."""

    entities: EntityIndex
    _exact_kept: tuple[tuple[Any, ...], ExactVectors, np.ndarray, np.ndarray] | None

    def vector_hits(
        self, vector: np.ndarray, n: int, where: VectorFilter | None = None
    ) -> list[VectorHit]:
        """The n nearest vector rows passing the prefilter (ids, kinds, similarities).

        Searched exactly in process: over gists and entities alone (the vector store's copy
        of their rows), and any search of a memory of at most ``exact_search_max_rows``
        observations (ExactVectors, with that copy). Otherwise an area is searched in process
        (the observations' vector sketch and the copy of the gist and entity rows): every
        area with ``sketch_min_rows`` 0, else one holding at least that many rows (counted
        from the in-process indexes, matching_rows); any other search by LanceDB."""
        if where is not None and where.kinds is not None and "observation" not in where.kinds:
            # Gists and entities only: the vector store's in-process copy of their rows, exact
            # (LanceDB's search skipping every observation cost 8-9 ms at 100k rows).
            return self.vectors.search_others(vector, n, where)
        found = self._exact_hits(vector, n, where)
        if found is not None:
            return found
        sketch = self.index.sketch
        # The area's row count only matters against a sketch_min_rows above 0, or to LanceDB:
        # counted only then (a pass over the area's grid cells: 0.3 ms at 100k rows).
        matching: int | None = None
        # A small memory's area is never scored by the sketch: its exact copy answers once
        # loaded, and LanceDB meanwhile scores as that copy will (the same answer either way).
        sketched = (
            sketch is not None
            and self._exact is None
            and where is not None
            and _sketch_answers(where)
        )
        if sketched and self.config.sketch_min_rows > 0:
            matching = self.matching_rows(where)
            sketched = matching is not None and matching >= self.config.sketch_min_rows
        if sketched and where is not None and self._sketch_loaded.is_set():
            found = self._sketch_hits(vector, n, where)
            if found is not None:
                return found
        # A memory searched in process once its exact copy (or, for this area, its sketch)
        # has loaded is searched by LanceDB until then: scored as in process (the same bits),
        # the answer is the same either way.
        if matching is None:
            matching = self.matching_rows(where)
        return self.vectors.search(
            vector,
            n,
            where,
            matching=matching,
            rescore=self._exact is not None or sketched,
            observation_scores=(
                sketch.scores_of_vectors if sketched and sketch is not None else None
            ),
        )

    def matching_rows(self, where: VectorFilter | None) -> int | None:
        """About how many vector rows pass an area filter, from the in-process indexes (the
        vector store would count them with a pass of the filter: 17 ms for a 1% area at 1M
        rows); None for other filters. Observations in the circle (with the filter's layer,
        time and body-state conditions) plus every entity: an estimate, since gists are left
        out and entities counted wherever they are, but it only chooses between an exact, an
        indexed and an in-process search."""
        area = _index_area(where)
        if area is None:
            return None
        return self.index.count_within(**area) + len(self.entities)

    def dense_in_process(self, where: VectorFilter | None) -> bool:
        """Whether vector_hits answers ``where`` in process without LanceDB (gists and
        entities alone, or a small memory's exact search): nothing to overlap with another
        search on a thread, whose handoff would only add to the call."""
        if where is not None and where.kinds is not None and "observation" not in where.kinds:
            return True
        return self.exact_search and len(self.index) <= self.config.exact_search_max_rows

    @property
    def exact_search(self) -> bool:
        """Whether vector searches are answered exactly in process now (a memory of at most
        ``exact_search_max_rows`` observations, once their vectors are loaded at open)."""
        return self._exact is not None and self._exact_loaded.is_set()

    def _exact_hits(
        self, vector: np.ndarray, n: int, where: VectorFilter | None
    ) -> list[VectorHit] | None:
        """The search of vector_hits over every row in process, exact, or None when the
        memory keeps no exact copy (grown past exact_search_max_rows, or still loading)."""
        exact = self._exact
        if exact is None or not self._exact_loaded.is_set():
            return None
        if len(self.index) > self.config.exact_search_max_rows:
            self._exact = None  # grown past the limit: LanceDB's index from now on
            self._load_deferred_sketch()
            return None
        if n < 1:
            return []
        # The last question's scores are kept until the next write to the index or the copy:
        # semantic_search asks the same question again for more results when records of one
        # text share a line.
        version = self.index.version[0]
        total = len(self.index)
        key = (np.asarray(vector).tobytes(), repr(where), version, exact.version, total)
        kept = self._exact_kept
        if kept is not None and kept[0] == key and kept[1] is exact:
            rows, scores = kept[2], kept[3]
        else:
            rows = np.flatnonzero(self.index.admitted(np.arange(total), where))
            if rows.size * EXACT_GATHER_SHARE < total:
                # A selective filter (an area, a time window): score the admitted rows only.
                scores = exact.scores_of(vector, rows)
            else:
                scores = exact.scores(vector, total)[rows]
            held = np.flatnonzero(~np.isnan(scores))
            rows, scores = rows[held], scores[held]
            self._exact_kept = (key, exact, rows, scores)
        best = ranking.best(scores, n)
        hits = [
            VectorHit(
                id=self.index.id_of(int(rows[at])), kind="observation", score=float(scores[at])
            )
            for at in best.tolist()
        ]
        kinds = ("gist", "entity") if where is None or where.kinds is None else where.kinds
        others = tuple(k for k in kinds if k != "observation")
        if others:
            hits += self.vectors.search_others(
                vector, n, replace(where or VectorFilter(), kinds=others)
            )
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:n]

    def _sketch_hits(
        self, vector: np.ndarray, n: int, where: VectorFilter
    ) -> list[VectorHit] | None:
        """An area search in process, or None when the filter has conditions the observation
        index does not hold (_sketch_answers; then LanceDB searches)."""
        area = _index_area(where)
        if area is None or not _sketch_answers(where):
            return None
        nearest = self.index.nearest_to_vector(vector, limit=n, **area)
        hits = [VectorHit(id=i, kind="observation", score=s) for i, s in nearest]
        others = tuple(k for k in where.kinds or ("gist", "entity") if k != "observation")
        if others:
            hits += self.vectors.search_others(vector, n, replace(where, kinds=others))
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:n]


def _sketch_answers(where: VectorFilter) -> bool:
    """Whether _sketch_hits can answer an area filter: every condition held by the
    observation index (_index_area: kinds that include observations, one layer at most),
    archived rows left out and nothing else, body states alone left out if any."""
    if _index_area(where) is None or where.tiers is not None:
        return False
    if set(where.exclude_tiers or ()) != {"archived"}:
        return False  # the index never answers archived rows, and only leaves those out
    return set(where.exclude_source_types or ()) <= {INTEROCEPTION}


def _index_area(where: VectorFilter | None) -> dict[str, Any] | None:
    """The observation-index reading (count_within / nearest_to_vector keywords) of an area
    filter, or None when the filter has no circle or a condition the index does not hold
    (a box, an episode, a source-type list, kinds without observations, several layers)."""
    if where is None or where.center is None or where.radius is None:
        return None
    if where.box is not None or where.episode_id is not None or where.source_types:
        return None
    if where.kinds is not None and "observation" not in where.kinds:
        return None
    layers = where.layers
    if layers is not None and len(layers) != 1:
        return None
    radius = float(where.radius)
    if not math.isfinite(radius) or radius < 0:
        return None  # the vector store gives the error
    return {
        "x": float(where.center[0]),
        "y": float(where.center[1]),
        "radius": radius,
        "layer": None if layers is None else layers[0],
        "time_after": where.time_after,
        "time_before": where.time_before,
        "include_body_state": (
            not where.exclude_source_types or INTEROCEPTION not in where.exclude_source_types
        ),
    }
