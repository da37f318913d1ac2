"""Hybrid retrieval: dense vectors plus keyword full text, fused by reciprocal rank.

Both searches run with the same prefilter (VectorFilter), so a selective filter still yields n
results when n exist. Keyword search gets the content words of the request (a question such as
"where is the red chair?" searches "red chair"), so it matches words, not only phrases, and
behaves the same whether or not LanceDB has built its full-text index yet. Texts holding every
content word of the request form a third ranking in the fusion. A request with
several parts ("the cup, then the kettle") is searched part by part and merged so that every
part is represented in the top n.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.models import Entity, Gist, Observation
from emem_graph.retrieval import lookups

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.filters import VectorFilter
    from emem_graph.storage.store import MemoryStore

Record = Observation | Gist | Entity

_STOPWORD_LIST = """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just let me
    more most my myself no nor not now of off on once only or other our ours out over own
    please same she should so some such than that the their them then there these they this
    those through to too under until up very was we were what when where which while who whom
    why will with would you your yours find show tell get give remember recall see seen saw
    put place bring take go look"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())
"""Words left out of keyword queries and of the test for a meaningful request part."""
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCES = re.compile(r"[.!?;\n]+")
_JOINERS = re.compile(r",|\b(?:and then|and also|as well as|after that|then|also|plus|and)\b")
MAX_PARTS = 6
KEYWORD_THREADS = 4
"""Keyword searches running at once beside dense ones (readers of several threads)."""


@dataclass(frozen=True)
class Scored:
    """A retrieved record with its fused score (higher is better) and, for dense hits, its
    cosine similarity to the query."""

    record: Record
    score: float
    similarity: float | None = None


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry meaning (lower case, stop words and punctuation out)."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def keyword_query(text: str) -> str:
    """The full-text query for a request: its content words, space separated ("" if none)."""
    return " ".join(dict.fromkeys(content_words(text)))


def split_request(text: str) -> list[str]:
    """The parts of a multi-part request, in order: sentences, then clauses joined by commas,
    "and", "then", "also", "plus". Parts without a content word are dropped; a request of one
    part (or of more than MAX_PARTS) comes back as ``[text]``."""
    parts: list[str] = []
    for sentence in _SENTENCES.split(text):
        for clause in _JOINERS.split(sentence.lower()):
            clause = " ".join(clause.split())
            if clause and content_words(clause) and clause not in parts:
                parts.append(clause)
    return parts if 1 < len(parts) <= MAX_PARTS else [text]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int) -> dict[str, float]:
    """RRF: each id scores the sum of 1 / (k + rank) over the rankings it appears in."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, node_id in enumerate(ranking, 1):
            fused[node_id] = fused.get(node_id, 0.0) + 1.0 / (k + rank)
    return fused


def has_all_words(record: Record, words: Sequence[str]) -> bool:
    """Whether a record's text (an entity: its name) holds every one of ``words`` (a trailing
    plural "s" ignored on both sides)."""
    text = record.name if isinstance(record, Entity) else record.text
    present = {_singular(w) for w in _WORD.findall(text.lower())}
    return all(_singular(w) in present for w in words)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def record_time(record: Record) -> float:
    """When a record was last true: an observation's time, a gist's end, an entity's last
    sighting."""
    if isinstance(record, Observation):
        return record.timestamp
    if isinstance(record, Gist):
        return record.time_end
    return record.last_seen


class HybridSearch:
    """Dense + keyword retrieval over one store, fused by reciprocal rank.

    Args:
        store: the memory's store (callers flush before searching).
        embed: the memory's embedder, ``embed(texts) -> (N, dim)``.
        config: use_hybrid_retrieval, rrf_k, recency_weight and recency_halflife are read here.
        clock: the memory's clock (recency is measured on it).
    """

    def __init__(
        self,
        store: MemoryStore,
        embed: Callable[[list[str]], np.ndarray],
        config: MemoryConfig,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._embed = embed
        self._config = config
        self._clock = clock
        self._keyword_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Stop the keyword-search threads (idempotent)."""
        with self._pool_lock:
            pool, self._keyword_pool = self._keyword_pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _pool(self) -> ThreadPoolExecutor:
        # Made on first use, in the process that searches (a pool copied by fork has no threads).
        with self._pool_lock:
            if self._keyword_pool is None:
                self._keyword_pool = ThreadPoolExecutor(
                    max_workers=KEYWORD_THREADS, thread_name_prefix="emem-keyword"
                )
            return self._keyword_pool

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in one call."""
        return self._embed(texts)

    def dense(self, vector: np.ndarray, n: int, where: VectorFilter) -> list[tuple[Record, float]]:
        """The ``n`` nearest records passing ``where``, with cosine similarity, best first."""
        return [(record, hit.score) for hit, record in self._store.nearest(vector, n, where)]

    def search(
        self, query: str, n: int, where: VectorFilter, vector: np.ndarray | None = None
    ) -> list[Scored]:
        """The ``n`` best records for ``query`` passing ``where`` (hybrid when configured).

        Ranking works on ids; only the best ``n + max(n, 10)`` fused candidates (all of them
        with recency weighting, which needs their times) are read from the graph.
        """
        if vector is None:
            vector = self._embed([query])[0]
        depth = n + max(n, 10)
        terms = keyword_query(query) if self._config.use_hybrid_retrieval else ""
        # The keyword search runs beside the dense one (LanceDB releases the GIL): one query's
        # latency is the slower of the two, not their sum.
        pending = (
            self._pool().submit(self._store.vectors.keyword_search, terms, depth, where)
            if terms
            else None
        )
        dense = self._store.vector_hits(vector, depth, where)
        keyword = pending.result() if pending is not None else []
        similarity = {hit.id: hit.score for hit in dense}
        kinds = {hit.id: hit.kind for hit in dense}
        kinds.update({hit.id: hit.kind for hit in keyword})
        rankings = [[hit.id for hit in dense]]
        if keyword:
            rankings.append([hit.id for hit in keyword])
        fused = reciprocal_rank_fusion(rankings, self._config.rrf_k)
        pool = sorted(fused, key=lambda i: (-fused[i], i))
        if self._config.recency_weight <= 0:
            pool = pool[:depth]
        records = lookups.records_by_id(self._store, {i: kinds[i] for i in pool})
        # Rank fusion alone lets texts matching one word twice (dense and keyword) outrank the
        # one text holding every word of the request; those get a ranking of their own.
        words = terms.split()
        complete = [
            hit.id
            for hit in keyword
            if len(words) > 1 and hit.id in records and has_all_words(records[hit.id], words)
        ]
        if complete:
            rankings.append(complete)
            fused = reciprocal_rank_fusion(rankings, self._config.rrf_k)
        if len(rankings) == 1:  # dense only: rank by similarity itself
            fused = {i: similarity[i] for i in pool}
            relevance_max = 1.0
        else:
            relevance_max = len(rankings) / (self._config.rrf_k + 1)
        scored = [Scored(records[i], fused[i], similarity.get(i)) for i in pool if i in records]
        return self._rank(scored, relevance_max)[:n]

    def search_request(self, request: str, n: int, where: VectorFilter) -> list[Scored]:
        """Like search(), but a multi-part request is searched part by part: the best hits of
        every part come first (round robin), the rest by fusing the parts' rankings with the
        whole request's."""
        parts = split_request(request)
        if len(parts) < 2:
            return self.search(request, n, where)
        vectors = self._embed([request, *parts])
        whole = self.search(request, n, where, vector=vectors[0])
        per_part = [
            self.search(part, n, where, vector=vector)
            for part, vector in zip(parts, vectors[1:], strict=True)
        ]
        return merge_parts(whole, per_part, n, self._config.rrf_k)

    def _rank(self, scored: list[Scored], relevance_max: float) -> list[Scored]:
        weight = self._config.recency_weight
        if weight > 0:
            now = self._clock()
            halflife = self._config.recency_halflife
            scored = [
                replace(
                    s,
                    score=(1 - weight) * s.score / relevance_max
                    + weight * math.pow(0.5, max(0.0, now - record_time(s.record)) / halflife),
                )
                for s in scored
            ]
        return sorted(scored, key=lambda s: (-s.score, s.record.id))


def merge_parts(
    whole: list[Scored], per_part: list[list[Scored]], n: int, rrf_k: int
) -> list[Scored]:
    """Merge the rankings of a request's parts: each part's best hits first, taken in turn
    (``n // (parts + 1)`` rounds, at least one), then the rest by RRF over all rankings."""
    chosen: list[Scored] = []
    seen: set[str] = set()
    rounds = max(1, n // (len(per_part) + 1))
    for _ in range(rounds):
        for ranking in per_part:
            pick = next((s for s in ranking if s.record.id not in seen), None)
            if pick is not None and len(chosen) < n:
                chosen.append(pick)
                seen.add(pick.record.id)
    rankings = [whole, *per_part]
    by_id = {s.record.id: s for ranking in rankings for s in ranking}
    fused = reciprocal_rank_fusion([[s.record.id for s in r] for r in rankings], rrf_k)
    for node_id, score in sorted(fused.items(), key=lambda item: (-item[1], item[0])):
        if len(chosen) >= n:
            break
        if node_id not in seen:
            chosen.append(replace(by_id[node_id], score=score))
            seen.add(node_id)
    return chosen
