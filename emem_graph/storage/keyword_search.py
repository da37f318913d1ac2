"""KeywordSearch: the store's BM25 search (MemoryStore.keyword_hits) over the in-process
keyword indexes (storage/keyword_index.py): observations scored by distinct text and walked
best first until n rows pass the filter, gists and entities from the vector store's copy.

A mixin of MemoryStore (storage/store.py), which sets the attributes declared here at open.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.filters import VectorFilter
from emem_graph.storage import ranking
from emem_graph.storage.keyword_index import KeywordHit, KeywordIndex, Matches, bm25

if TYPE_CHECKING:
    from emem_graph.storage.observation_index import ObservationIndex
    from emem_graph.storage.vectors import VectorStore

FIRST_TEXT_BLOCK = 8
"""Distinct texts whose rows the keyword search filters first (then twice as many each time):
the best few texts of a robot's repeated observations hold enough rows for n."""


class KeywordSearch:
    """The keyword (BM25) search of observations, gists and entities as one collection."""

    index: ObservationIndex
    vectors: VectorStore

    def keyword_hits(
        self, query_terms: Sequence[str], n: int, where: VectorFilter | None = None
    ) -> list[KeywordHit]:
        """The ``n`` best BM25 matches of ``query_terms`` (keyword_index.terms of a request)
        passing the prefilter, best first, ties by id: observations, gists and entities scored
        as one collection by the in-process keyword indexes, so the same texts always give the
        same scores (LanceDB's full-text scores change as its index catches up)."""
        if n < 1 or not query_terms:
            return []
        others, columns = self.vectors.keyword_others()
        listed = columns.rows
        # Observations still count in the collection's statistics when the filter leaves
        # them out (search_gists), but their matches are not scored. They are scored once per
        # distinct text: a robot repeats itself (a 1M patrol holds ~8,600 texts).
        wanted = where is None or where.kinds is None or "observation" in where.kinds
        keywords = self.index.keywords()
        observed, other = bm25(
            [keywords, others], query_terms, scored=(wanted, True), by_text=(True, False)
        )
        hits: list[KeywordHit] = []
        if observed.rows.shape[0]:
            hits += self._best_observations(keywords, observed, n, where)
        # The gist and entity rows are listed by id: best first by (score, row) is by (score,
        # id), and the filter is asked only until n rows have passed it.
        order = np.lexsort((other.rows, -other.scores))
        if where is not None:
            # The rows of other kinds or outside an area left out at once (a 1% area at 1M
            # rows walked ~500 entities elsewhere, one admits_row each).
            order = order[columns.kinds_and_circle(where)[other.rows[order]]]
        taken = 0
        for at in order.tolist():
            if taken == n:
                break
            found = listed[int(other.rows[at])]
            if where is None or where.admits_row(found):
                hits.append(
                    KeywordHit(
                        found.id, found.kind, float(other.scores[at]), float(other.coverage[at])
                    )
                )
                taken += 1
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:n]

    def _best_observations(
        self, keywords: KeywordIndex, texts: Matches, n: int, where: VectorFilter | None
    ) -> list[KeywordHit]:
        """The n best observations by (score, id) passing ``where``, of a BM25 scored by
        distinct text (``texts.rows`` are text numbers): the texts are walked best first in
        blocks (doubling) that end where the score changes, each block's rows filtered at
        once, until n rows have passed; every text left then scores lower than they do.
        An area is read from its own side instead (_best_in_area)."""
        found = self._best_in_area(keywords, texts, n, where)
        if found is not None:
            return found
        total = texts.scores.shape[0]
        wanted = max(4 * n, 8 * FIRST_TEXT_BLOCK)
        order = ranking.best_first(texts.scores, wanted)
        descending = -texts.scores[order]  # ascending: searchsorted finds a tie group's end
        rows_found: list[np.ndarray] = []
        texts_found: list[np.ndarray] = []
        passed, start, block = 0, 0, FIRST_TEXT_BLOCK
        while passed < n:
            if start >= order.shape[0]:
                if order.shape[0] == total:
                    break
                # Every text read and too few rows passed (a selective filter): the next
                # best texts; the longer order starts with the one walked so far.
                wanted *= 8
                order = ranking.best_first(texts.scores, wanted)
                descending = -texts.scores[order]
                continue
            stop = min(order.shape[0], start + block)
            stop = int(np.searchsorted(descending, descending[stop - 1], side="right"))
            chosen = order[start:stop]
            rows, owner = keywords.rows_of_texts(texts.rows[chosen].tolist())
            keep = self.index.admitted(rows, where)
            rows_found.append(rows[keep])
            texts_found.append(chosen[owner[keep]])
            passed += int(np.count_nonzero(keep))
            start, block = stop, 2 * block
        if not rows_found:
            return []
        return self._text_hits(texts, np.concatenate(rows_found), np.concatenate(texts_found), n)

    def _best_in_area(
        self, keywords: KeywordIndex, texts: Matches, n: int, where: VectorFilter | None
    ) -> list[KeywordHit] | None:
        """_best_observations for a filter with a circle, from the circle's side: its rows
        (the observation index's grid), those passing the whole filter, each scored by its
        text. The walk by text expands the best texts into every row holding them, most of
        them outside a small area (a 1% area at 100k rows: 3.3 ms, of which ~3 went to
        rows of other places). None when the filter has no circle or the circle's cells
        hold a large share of the rows (then the walk stops early)."""
        if where is None or where.center is None or where.radius is None:
            return None
        x, y, radius = float(where.center[0]), float(where.center[1]), float(where.radius)
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(radius)) or radius < 0:
            return None
        # A hair wider than the circle: admitted() then decides the edge as the walk does.
        rows = self.index.rows_in_circle(x, y, radius * (1.0 + 1e-9) + 1e-9)
        if rows is None:
            return None
        rows = rows[self.index.admitted(rows, where)]
        text_of = keywords.texts_of_rows(rows)
        # texts.rows: the matched text numbers, ascending (never empty here).
        at = np.minimum(np.searchsorted(texts.rows, text_of), texts.rows.shape[0] - 1)
        matched = (text_of >= 0) & (texts.rows[at] == text_of)
        return self._text_hits(texts, rows[matched], at[matched], n)

    def _text_hits(
        self, texts: Matches, rows: np.ndarray, of_text: np.ndarray, n: int
    ) -> list[KeywordHit]:
        """The n best of these observation rows by (score, id), each scored by its matched
        text (``of_text``: its position in ``texts``)."""
        scores = texts.scores[of_text]
        best = ranking.best(scores, n)
        return [
            KeywordHit(
                self.index.id_of(int(rows[at])),
                "observation",
                float(scores[at]),
                float(texts.coverage[of_text[at]]),
            )
            for at in ranking.cut_by_id(scores, best, n, lambda at: self.index.id_of(int(rows[at])))
        ]
