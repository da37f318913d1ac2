"""The request evaluation of ``retrieval-eval``: does a paraphrased request find the memory it
names, first, among about twenty near-duplicates told at the same place?

For every place of :mod:`emem_graph.evals.retrieval_data` it builds one new memory per ranker
(in a temporary directory, deleted after), stores the place's memories there at their
timestamps (the memory's clock fixed at ``NOW``), flushes, and asks each request through
``memory.semantic_search(request, n_results=10)``: the text a planner reads. The numbered lines
of that text are matched back to the stored texts (a line that is no stored text, a gist or an
entity, still takes its slot). Three rankers, in one run:

- ``bm25``: a plain Okapi BM25 over the place's stored texts, written here (lowercase word
  tokens, no stemming, k1=1.2, b=0.75): the baseline;
- ``dense``: the memory with ``use_hybrid_retrieval=False``;
- ``hybrid``: the memory with its default configuration.

Figures per ranker: R@1 and R@5 of single requests (the reworded ones, those that share
words with their memory, and both together), both parts of a two-part request within the top
5, R@1 and R@5 of time-word requests, and the median latency of a query. Determinism: each
memory (dense, hybrid) answers every request a second time, and a third time after it is
closed and opened again from its directory; the figures count the rankings (and the texts)
that differed.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from emem_graph.config import MemoryConfig
from emem_graph.evals.retrieval_data import NOW, POOLS, Pool
from emem_graph.ingest.embeddings import EmbeddingProvider, SentenceTransformerEmbedder
from emem_graph.memory import SpatioTemporalMemory

RANKERS = ("bm25", "dense", "hybrid")
N_RESULTS = 10
QUICK_POOLS = (0, 7)
"""The places of the quick run (a kitchen counter, a wardrobe)."""

_TOKEN = re.compile(r"[a-z0-9]+")
_ITEM = re.compile(r"^\s*(\d+)\.\s")


def tokens(text: str) -> list[str]:
    """Lowercase word tokens (letters and digits), no stemming: BM25's analyser."""
    return _TOKEN.findall(text.lower())


class BM25:
    """Plain Okapi BM25 over a fixed list of documents.

    idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)) (never negative); a document's score is
    sum over query tokens of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen)).
    """

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.docs = [Counter(tokens(d)) for d in documents]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avglen = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for counts in self.docs:
            df.update(counts.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """The score of every document for ``query`` (query tokens counted with repeats)."""
        out: list[float] = []
        for counts, length in zip(self.docs, self.lengths, strict=True):
            norm = self.k1 * (1.0 - self.b + self.b * length / self.avglen) if self.avglen else 0
            score = 0.0
            for t in tokens(query):
                tf = counts.get(t, 0)
                if tf:
                    score += self.idf[t] * tf * (self.k1 + 1.0) / (tf + norm)
            out.append(score)
        return out

    def rank(self, query: str) -> list[int]:
        """Document indices, best first (ties: the earlier document first)."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def ranking_from_text(output: str, stored: Sequence[str]) -> list[str | None]:
    """The stored texts a semantic_search answer lists, in order: one entry per numbered item
    (its continuation lines included); an item that contains no stored text (a gist, an entity)
    is None, and keeps its slot."""
    items: list[str] = []
    for line in output.splitlines():
        if _ITEM.match(line):
            items.append(line)
        elif items:
            items[-1] += "\n" + line
    by_length = sorted(set(stored), key=len, reverse=True)
    return [next((s for s in by_length if s in item), None) for item in items]


def _rank_of(ranking: Sequence[str | None], text: str) -> int | None:
    """1-based position of ``text`` in ``ranking``, None when absent."""
    for i, found in enumerate(ranking):
        if found == text:
            return i + 1
    return None


class _Tally:
    """Hits and latencies of one ranker."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.ms: list[float] = []
        self.repeat_ms: list[float] = []
        self.misses: list[dict[str, Any]] = []

    def add(self, pool: Pool, kind: str, request: str, expected: tuple[str, ...],
            ranking: Sequence[str | None], ms: float) -> None:  # fmt: skip
        self.ms.append(ms)
        ranks = [_rank_of(ranking, e) for e in expected]
        self.counts[f"{kind}_n"] += 1
        if kind == "pair":
            hit5 = all(r is not None and r <= 5 for r in ranks)
            self.counts["pair_both5"] += hit5
            hit1 = hit5
        else:
            rank = ranks[0]
            hit1 = rank == 1
            self.counts[f"{kind}_r1"] += hit1
            self.counts[f"{kind}_r5"] += rank is not None and rank <= 5
        if not hit1:
            self.misses.append(
                {
                    "place": pool.place,
                    "kind": kind,
                    "request": request,
                    "expected": list(expected),
                    "ranks": ranks,
                    "first": ranking[0] if ranking else None,
                }
            )

    def figures(self) -> dict[str, Any]:
        c = self.counts

        def ratio(hits: str, n: str) -> float | None:
            return c[hits] / c[n] if c[n] else None

        def ratio2(hits: str, hits2: str, n: str, n2: str) -> float | None:
            return (c[hits] + c[hits2]) / (c[n] + c[n2]) if c[n] + c[n2] else None

        ms = sorted(self.ms)
        return {
            "alone_r1": ratio2("single_r1", "shared_r1", "single_n", "shared_n"),
            "alone_r5": ratio2("single_r5", "shared_r5", "single_n", "shared_n"),
            "single_r1": ratio("single_r1", "single_n"),
            "single_r5": ratio("single_r5", "single_n"),
            "shared_r1": ratio("shared_r1", "shared_n"),
            "shared_r5": ratio("shared_r5", "shared_n"),
            "pair_both5": ratio("pair_both5", "pair_n"),
            "timed_r1": ratio("timed_r1", "timed_n"),
            "timed_r5": ratio("timed_r5", "timed_n"),
            "latency_ms_p50": statistics.median(ms) if ms else None,
            "latency_ms_p90": ms[min(len(ms) - 1, int(0.9 * len(ms)))] if ms else None,
            "latency_ms_p50_repeat": statistics.median(self.repeat_ms) if self.repeat_ms else None,
            "queries": len(ms),
            "misses": self.misses,
        }


class CachedEmbedder:
    """An embedder shared by every memory of the run that embeds each distinct text once:
    a place's texts and requests are embedded in one batch (:meth:`warm`) before its memories
    are built, so that the dense and hybrid memories see the same vectors and the latencies
    measure the search, not the model (the query's embedding is not in them)."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self._cache: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    def warm(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = np.asarray(self.inner.embed(missing), dtype=np.float32)
            self._cache.update(zip(missing, vectors, strict=True))

    def embed(self, texts: list[str]) -> np.ndarray:
        self.warm(texts)
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def _open(path: Path, embedder: EmbeddingProvider, hybrid: bool) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(path), use_hybrid_retrieval=hybrid)
    return SpatioTemporalMemory(
        config=config, embedding_provider=embedder, get_current_time=lambda: NOW
    )


def _ask(memory: SpatioTemporalMemory, request: str) -> tuple[str, float]:
    start = time.perf_counter()
    output = memory.semantic_search(request, n_results=N_RESULTS)
    return output, 1000.0 * (time.perf_counter() - start)


def _evaluate_pool(
    pool: Pool,
    embedder: CachedEmbedder,
    workdir: Path,
    tallies: dict[str, _Tally],
    determinism: dict[str, Counter[str]],
    tick: Callable[[int], object],
) -> None:
    texts = [s.text for s in pool.stored]
    embedder.warm(texts + [r.text for r in pool.requests])
    bm25 = BM25(texts)
    for request in pool.requests:
        start = time.perf_counter()
        order = bm25.rank(request.text)
        ms = 1000.0 * (time.perf_counter() - start)
        top = [texts[i] for i in order[:N_RESULTS]]
        tallies["bm25"].add(pool, request.kind, request.text, request.expected, top, ms)
    for ranker in ("dense", "hybrid"):
        path = workdir / f"{ranker}-{pool.place}"
        memory = _open(path, embedder, hybrid=ranker == "hybrid")
        try:
            for s in pool.stored:
                memory.add(s.text, pool.x, pool.y, timestamp=s.timestamp, layer_name="speech")
            memory.flush()
            first: list[str] = []
            for request in pool.requests:
                output, ms = _ask(memory, request.text)
                first.append(output)
                ranking = ranking_from_text(output, texts)
                tallies[ranker].add(pool, request.kind, request.text, request.expected, ranking, ms)
                tick(1)
            for request, before in zip(pool.requests, first, strict=True):
                again, ms = _ask(memory, request.text)
                tallies[ranker].repeat_ms.append(ms)
                _compare(determinism[ranker], "repeat", before, again, texts)
        finally:
            memory.close()
        with _open(path, embedder, hybrid=ranker == "hybrid") as memory:
            for request, before in zip(pool.requests, first, strict=True):
                _compare(
                    determinism[ranker], "reopen", before, _ask(memory, request.text)[0], texts
                )


def _compare(
    counts: Counter[str], label: str, before: str, after: str, texts: Sequence[str]
) -> None:
    counts[f"{label}_compared"] += 1
    counts[f"{label}_rankings_differed"] += ranking_from_text(before, texts) != ranking_from_text(
        after, texts
    )
    counts[f"{label}_texts_differed"] += before != after


def _label(embedder: EmbeddingProvider) -> str:
    """What the table calls an embedder: its ``name`` when it has one, else its class."""
    name = getattr(embedder, "name", None)
    return name if isinstance(name, str) else type(embedder).__name__


def run(
    embedder: EmbeddingProvider | None = None, *, quick: bool = False, progress: bool = False
) -> dict[str, Any]:
    """Evaluate the three rankers on every place (``quick``: two places, under a minute
    with MiniLM); returns JSON-able figures (see the module docstring)."""
    from tqdm import tqdm

    model = CachedEmbedder(
        embedder if embedder is not None else SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    )
    pools = [POOLS[i] for i in QUICK_POOLS] if quick else list(POOLS)
    tallies = {name: _Tally() for name in RANKERS}
    determinism: dict[str, Counter[str]] = {"dense": Counter(), "hybrid": Counter()}
    total = 2 * sum(len(p.requests) for p in pools)
    start = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="emem-retrieval-") as scratch,
        tqdm(
            total=total,
            desc="requests",
            unit="query",
            disable=not (progress and sys.stderr.isatty()),
        ) as bar,
    ):
        for pool in pools:
            _evaluate_pool(pool, model, Path(scratch), tallies, determinism, bar.update)
    kinds = Counter(r.kind for p in pools for r in p.requests)
    return {
        "name": "requests",
        "quick": quick,
        "embedder": "all-MiniLM-L6-v2" if embedder is None else _label(embedder),
        "places": len(pools),
        "stored": sum(len(p.stored) for p in pools),
        "requests": {k: kinds[k] for k in ("single", "shared", "pair", "timed")},
        "rankers": {name: tally.figures() for name, tally in tallies.items()},
        "determinism": {name: dict(counts) for name, counts in determinism.items()},
        "seconds": time.perf_counter() - start,
    }


def describe(result: dict[str, Any]) -> list[str]:
    """The figures of :func:`run` as a table."""
    n = result["requests"]

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{100.0 * value:.1f}%"

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    lines = [
        f"requests: {result['places']} places, {result['stored']} stored memories "
        f"({result['embedder']}); {n['single'] + n['shared']} single requests "
        f"({n['single']} reworded, {n['shared']} sharing words), {n['pair']} two-part, "
        f"{n['timed']} time-word" + (" [quick]" if result.get("quick") else ""),
        "",
        "| ranker | single R@1 | single R@5 | reworded R@1 | sharing words R@1 "
        "| two-part both in top 5 | time-word R@1 | time-word R@5 | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in RANKERS:
        f = result["rankers"][name]
        lines.append(
            f"| {name} | {pct(f['alone_r1'])} | {pct(f['alone_r5'])} | "
            f"{pct(f['single_r1'])} | {pct(f['shared_r1'])} | {pct(f['pair_both5'])} | "
            f"{pct(f['timed_r1'])} | {pct(f['timed_r5'])} | {ms(f['latency_ms_p50'])} |"
        )
    lines.append("")
    for name, d in result["determinism"].items():
        lines.append(
            f"determinism ({name}): rankings that differed when asked again "
            f"{d.get('repeat_rankings_differed', 0)}/{d.get('repeat_compared', 0)} "
            f"(texts {d.get('repeat_texts_differed', 0)}); after closing and reopening the "
            f"memory {d.get('reopen_rankings_differed', 0)}/{d.get('reopen_compared', 0)} "
            f"(texts {d.get('reopen_texts_differed', 0)})"
        )
    lines.append(
        "(single: the reworded and the word-sharing requests together; latency: semantic_search "
        "with the query's embedding precomputed; bm25 is scored in the evaluation itself)"
    )
    return lines
