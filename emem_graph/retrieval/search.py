"""Hybrid retrieval: dense vectors plus keyword BM25, fused by score.

Both searches run with the same prefilter (VectorFilter), so a selective filter still yields n
results when n exist. The keyword side is the store's in-process BM25 (storage/keyword_index.py:
stemmed words, number words as digits, stop words out), a function of the stored texts only, so
the same memory gives the same ranking whatever its background work is doing. The two are fused
by their scores, not their ranks: a record's score is its cosine similarity to the request plus
KEYWORD_WEIGHT times its BM25 score relative to the best keyword match (rank fusion threw away
the margins: a text matching every word of the request by far ranked like one matching one word
once). Ties are broken by id. A summary (a gist) ranks no higher than the dense side alone
ranks it: its keyword match is a union over the many texts it summarises, which lifted long
summaries over the one observation that answers. A request with several parts ("the cup,
then the kettle") is searched part by part and merged so that every part is represented in the
top n.
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

from emem_graph.models import Entity, Gist, Observation, VectorHit
from emem_graph.retrieval import lookups
from emem_graph.retrieval.timewords import TimeSpan, strip_time_words, time_window
from emem_graph.storage.keyword_index import STOPWORDS, terms

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.filters import VectorFilter
    from emem_graph.storage.store import MemoryStore

Record = Observation | Gist | Entity

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCES = re.compile(r"[!?;\n]+|\.+(?=\s|$)")
"""Sentence ends: a full stop only before a space or the end ("2.5 m" is one sentence)."""
_ABBREVIATIONS = re.compile(r"\b(mr|mrs|ms|dr|prof|st|sr|jr|vs|etc|no|approx)\.", re.IGNORECASE)
"""Titles and abbreviations whose full stop ends no sentence ("Mrs. Brown's batteries": it
was searched as two parts, "where are mrs." first)."""
_JOINERS = re.compile(r",|\b(?:and then|and also|as well as|after that|then|also|plus|and)\b")
MAX_PARTS = 6
KEYWORD_THREADS = 4
"""Keyword searches running at once beside dense ones (readers of several threads)."""
KEYWORD_WEIGHT = 0.3
"""What a record holding every word of the request adds to its cosine similarity: the keyword
part is KEYWORD_WEIGHT x coverage ** KEYWORD_POWER, coverage being the share of the request's
IDF weight whose words the record holds. Measured on the requests set of ``emem-graph
retrieval-eval`` (798 requests; see the README): BM25 scores fused by rank (RRF) took rank-1
from 0.79 (dense alone) down to 0.54 on paraphrases; relative BM25 scores added at any weight
lowered it too (0.77 at 0.05); the cubed coverage keeps paraphrases at the dense figure and
lifts requests that share the memory's words from 0.985 to 0.997."""
KEYWORD_POWER = 3
TIME_WEIGHT = 0.2
"""What a record inside the span of a time phrase of the request ("yesterday", "before lunch":
retrieval/timewords.py) adds to its score: rank-1 on requests with time words 0.41 -> 0.97."""


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


def split_request(text: str) -> list[str]:
    """The parts of a multi-part request, in order: sentences, then clauses joined by commas,
    "and", "then", "also", "plus". Parts without a content word are dropped; a request of one
    part (or of more than MAX_PARTS) comes back as ``[text]``."""
    parts: list[str] = []
    for sentence in _SENTENCES.split(_ABBREVIATIONS.sub(r"\1", text)):
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
        self,
        query: str,
        n: int,
        where: VectorFilter,
        vector: np.ndarray | None = None,
        window: TimeSpan | None = None,
    ) -> list[Scored]:
        """The ``n`` best records for ``query`` passing ``where`` (hybrid when configured).

        A record's score is its cosine similarity, plus the keyword part (KEYWORD_WEIGHT), plus
        TIME_WEIGHT when ``window`` (a time phrase's span) holds its time; a summary then ranks
        no higher than the dense side alone ranks it (summaries_behind). Candidates are the
        best ``depth`` of each side; a keyword candidate the dense side did not return gets the
        lowest dense similarity returned (its own is at most that). Only the best
        ``n + max(n, 10)`` fused candidates are read from the graph (all of them with recency
        weighting or a time window, which need their times).
        """
        if vector is None:
            vector = self._embed([query])[0]
        depth = max(3 * n, 30)
        query_terms = terms(query) if self._config.use_hybrid_retrieval else []
        # The keyword search runs beside the dense one (LanceDB releases the GIL): one query's
        # latency is the slower of the two, not their sum. When the dense side is in process
        # too (gists and entities alone, a small memory's exact search) there is nothing to
        # overlap: a thread would only add its handoff (at 20k rows: 28 -> 20 ms a call on the
        # loaded 2-core machine).
        beside = not self._store.dense_in_process(where)
        pending = (
            self._pool().submit(self._store.keyword_hits, query_terms, depth, where)
            if query_terms and beside
            else None
        )
        dense = self._store.vector_hits(vector, depth, where)
        if pending is not None:
            keyword = pending.result()
        else:
            keyword = self._store.keyword_hits(query_terms, depth, where) if query_terms else []
        similarity = {hit.id: hit.score for hit in dense}
        kinds = {hit.id: hit.kind for hit in dense}
        kinds.update({hit.id: hit.kind for hit in keyword})
        floor = min(similarity.values(), default=0.0)
        coverage = {hit.id: hit.coverage for hit in keyword}
        fused = {
            node_id: similarity.get(node_id, floor)
            + KEYWORD_WEIGHT * coverage.get(node_id, 0.0) ** KEYWORD_POWER
            for node_id in kinds
        }
        pool = sorted(fused, key=lambda i: (-fused[i], i))
        if self._config.recency_weight <= 0 and window is None:
            pool = pool[: n + max(n, 10)]
        records = lookups.records_by_id(self._store, {i: kinds[i] for i in pool})
        if window is not None:
            for node_id, record in records.items():
                fused[node_id] += TIME_WEIGHT * window.weight * _share_inside(record, window)
        relevance_max = 1.0 + KEYWORD_WEIGHT + (TIME_WEIGHT if window is not None else 0.0)
        scored = [Scored(records[i], fused[i], similarity.get(i)) for i in pool if i in records]
        ranked = summaries_behind(self._rank(scored, relevance_max), dense_ranks(dense))
        return ranked[:n]

    def search_request(self, request: str, n: int, where: VectorFilter) -> list[Scored]:
        """Like search(), but a time phrase of the request ("yesterday", "before lunch")
        favours records of its span (and is left out of what is searched), and a multi-part
        request is searched part by part: the whole request's best hit first, then the best
        hits of every part (round robin), the rest by fusing the parts' rankings with the
        whole request's."""
        window = time_window(request, self._clock())
        if window is not None and window.strip:
            request = strip_time_words(request) or request
        parts = split_request(request)
        if len(parts) < 2:
            return self.search(request, n, where, window=window)
        vectors = self._embed([request, *parts])
        whole = self.search(request, n, where, vector=vectors[0], window=window)
        per_part = [
            self.search(part, n, where, vector=vector, window=window)
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


def dense_ranks(hits: Sequence[VectorHit]) -> dict[str, int]:
    """Each dense hit's 0-based place in the embedder's own order (similarity, then id)."""
    ordered = sorted(hits, key=lambda hit: (-hit.score, hit.id))
    return {hit.id: place for place, hit in enumerate(ordered)}


def summaries_behind(ranked: list[Scored], dense_rank: dict[str, int]) -> list[Scored]:
    """``ranked`` with every summary (a gist) moved down to no higher than the embedder alone
    places it among the candidates (``dense_rank``, 0-based): behind every observation or
    entity whose fused place is at most the summary's dense place. A summary the dense side did
    not return goes behind them all. Observations keep their order, and so do summaries among
    themselves; a summary the embedder itself places first keeps its fused place.

    A summary's keyword match is a union over many texts: a digest of hundreds of turns holds
    most words of most questions, and that full keyword coverage lifted it over the one turn
    that answers (LoCoMo's development half: a summary line took one of the first 5 slots
    above the evidence, or with no evidence shown, in 6 of 786 questions; 8 summary lines in
    all top 10s, 1 with this rule). Ranks are compared, not one model's similarity scale."""
    keys: list[tuple[float, int, int]] = []
    floor = 0.0
    for place, hit in enumerate(ranked):
        if isinstance(hit.record, Gist):
            floor = max(floor, place, dense_rank.get(hit.record.id, math.inf))
            keys.append((floor, 1, place))
        else:
            keys.append((place, 0, place))
    order = sorted(range(len(ranked)), key=keys.__getitem__)
    return [ranked[i] for i in order]


def _share_inside(record: Record, window: TimeSpan) -> float:
    """How much of a record's time lies inside ``window``: 1 or 0 for an observation (a point),
    the share of its span for a gist or an entity's sightings (a summary of two weeks that
    touches yesterday is hardly about yesterday: such summaries took up to 5 of 10 slots of
    questions with a time phrase)."""
    if isinstance(record, Observation):
        start = end = record.timestamp
    elif isinstance(record, Gist):
        start, end = record.time_start, record.time_end
    else:
        start, end = record.first_seen, record.last_seen
    if end <= start:
        return 1.0 if window.start <= start <= window.end else 0.0
    inside = min(end, window.end) - max(start, window.start)
    return max(0.0, inside) / (end - start)


def merge_parts(
    whole: list[Scored], per_part: list[list[Scored]], n: int, rrf_k: int
) -> list[Scored]:
    """Merge the rankings of a request's parts: the whole request's best hit first, then each
    part's best hits, taken in turn (``n // (parts + 1)`` rounds, at least one), then the rest
    by RRF over all rankings.

    The whole request's best goes first because a request read as parts is often one memory
    told in steps ("First, move the shoe ... Then, place them ..."): a part's best hit at rank
    1 then answered the first clause alone. The parts still fill the next slots (a part whose
    best hit is that one has its slot), so each part of a true two-part request keeps a place
    near the top."""
    chosen: list[Scored] = whole[:1]
    seen: set[str] = {s.record.id for s in chosen}
    rounds = max(1, n // (len(per_part) + 1))
    for round_number in range(rounds):
        for ranking in per_part:
            if round_number == 0 and ranking and ranking[0].record.id in seen:
                continue  # this part's best is the whole request's: it has its slot
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
