"""Tool latency benchmark: p50 of each retrieval tool at N observations, next to the exact NumPy
computation of the same answer on the same data, measured in the same run.

The NumPy side is the "physical limit" of each question with everything in RAM and no storage:
cosine top-k over the normalised float32 matrix (argpartition), boolean masks for area and time,
a group-by for body state. ``ours / numpy`` says what the graph + vector stores and the
formatting cost on top.

The workload: n observations spread over a 100 m x 100 m floor, one per second, texts from a
small vocabulary ("a red chair next to the kitchen door"), 2% body-state readings, one episode
per 1,000 observations (every 10th, and the last, consolidated into gists by the library), one
entity per 500. Vectors come from ``embedder`` (HashingEmbedder by
default), computed once per distinct text.

Run: ``python -m emem_graph.bench_tools --n 100000 --out bench-tools``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from emem_graph.config import MemoryConfig
from emem_graph.ingest.embeddings import EmbeddingProvider, HashingEmbedder
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.retrieval import graph_reads

COLOURS = ("red", "blue", "green", "black", "white", "grey", "yellow", "orange")
OBJECTS = ("chair", "cup", "door", "box", "plant", "laptop", "lamp", "bottle", "bag", "sofa")
PLACES = ("kitchen", "hallway", "office", "lab", "storage room", "garage")
SIDE = 100.0
START = 1_700_000_000.0
BODY_EVERY = 50
EPISODE_EVERY = 1_000
CONSOLIDATE_EVERY = 10
ENTITY_EVERY = 500
TOOLS = (
    "semantic_search",
    "spatial_query",
    "temporal_query",
    "episode_summary",
    "get_current_context",
    "search_gists",
    "entity_query",
    "locate",
    "recall",
    "body_status",
)


def _text(rng: np.random.Generator) -> str:
    colour, thing, place = rng.choice(COLOURS), rng.choice(OBJECTS), rng.choice(PLACES)
    return f"a {colour} {thing} next to the {place} door"


def _build(
    memory: SpatioTemporalMemory, n: int, embedder: EmbeddingProvider, seed: int
) -> dict[str, Any]:
    """Fill ``memory``; returns the arrays the NumPy side answers from."""
    rng = np.random.default_rng(seed)
    texts = [_text(rng) for _ in range(n)]
    distinct = sorted(set(texts))
    table = dict(zip(distinct, embedder.embed(distinct), strict=True))
    xy = rng.uniform(0.0, SIDE, size=(n, 2))
    body = np.zeros(n, dtype=bool)
    body[::BODY_EVERY] = True
    episode_of = np.arange(n) // EPISODE_EVERY
    entity_names: list[str] = []
    entity_xy: list[tuple[float, float]] = []
    for i in range(n):
        if i % EPISODE_EVERY == 0:
            if i:
                # Every CONSOLIDATE_EVERY-th episode is consolidated into gists (and waited
                # for, so no background work runs while the tools are timed).
                number = i // EPISODE_EVERY
                memory.end_episode(consolidate=number % CONSOLIDATE_EVERY == 0, wait=True)
            memory.start_episode(f"patrol {i // EPISODE_EVERY}")
        x, y = float(xy[i, 0]), float(xy[i, 1])
        if body[i]:
            texts[i] = f"battery {100 - (i // BODY_EVERY) % 100}%"
            memory.add_body_state(texts[i], "battery", x=x, y=y, timestamp=START + i)
            continue
        memory.add(texts[i], x, y, timestamp=START + i, layer_name="captions",
                   embedding=table[texts[i]])  # fmt: skip
        if i % ENTITY_EVERY == 0:
            name = f"{texts[i].split()[1]} {texts[i].split()[2]} {i // ENTITY_EVERY}"
            memory.add_entity(name, x, y, timestamp=START + i, entity_type="object")
            entity_names.append(name)
            entity_xy.append((x, y))
    memory.end_episode(consolidate=True, wait=True)
    memory.flush()
    gists = graph_reads.gists_in_window(
        memory.store, time_after=None, time_before=None, limit=10**6
    )
    vectors = np.zeros((n, embedder.dim), dtype=np.float32)
    for i, text in enumerate(texts):
        if not body[i]:
            vectors[i] = table[text]
    return {
        "texts": texts,
        "vectors": vectors,
        "xy": xy,
        "t": START + np.arange(n, dtype=np.float64),
        "body": body,
        "episode": episode_of,
        "entity_names": entity_names,
        "entity_xy": np.array(entity_xy).reshape(-1, 2),
        "embed": embedder.embed,
        "gist_vectors": embedder.embed([g.text for g in gists]).reshape(-1, embedder.dim),
    }


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, scores.shape[0])
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part])]


def _numpy_side(data: dict[str, Any], now: float) -> dict[str, Callable[[int], object]]:
    """The exact NumPy answer of each tool's question, as functions of a query index."""
    vectors, xy, t, body = data["vectors"], data["xy"], data["t"], data["body"]
    perception = ~body
    perception_rows = np.flatnonzero(perception)
    perception_vectors = np.ascontiguousarray(vectors[perception_rows])
    queries = [f"where is the {c} {o}?" for c in COLOURS for o in OBJECTS]
    embed = data["embed"]

    def query_vector(i: int) -> np.ndarray:
        # Embedding the query is part of both sides' time.
        return np.asarray(embed([queries[i % len(queries)]])[0])

    def centre(i: int) -> np.ndarray:
        return np.random.default_rng(i).uniform(0, SIDE, size=2)

    def semantic(i: int, q: np.ndarray | None = None) -> np.ndarray:
        q = query_vector(i) if q is None else q
        return perception_rows[_top(perception_vectors @ q, 10)]

    def spatial(i: int, radius: float = 2.0) -> object:
        d = np.hypot(xy[:, 0] - centre(i)[0], xy[:, 1] - centre(i)[1])
        index = np.flatnonzero((d <= radius) & perception)
        return index[np.argsort(d[index])[:10]]

    def temporal(i: int) -> object:
        index = np.flatnonzero((t >= now - 600) & perception)
        return index[_top(t[index], 10)]

    def episode(i: int) -> object:
        members = data["episode"] == data["episode"][-1]
        return int(members.sum()), float(t[members].min()), float(t[members].max())

    def body_latest(i: int) -> object:
        rows = np.flatnonzero(body)
        return rows[np.argmax(t[rows])] if rows.size else None

    def context(i: int) -> object:
        here = xy[-1]
        d = np.hypot(xy[:, 0] - here[0], xy[:, 1] - here[1])
        near = np.flatnonzero((d <= 3.0) & perception)
        recent = np.flatnonzero((t >= now - 300) & perception)
        ed = np.hypot(data["entity_xy"][:, 0] - here[0], data["entity_xy"][:, 1] - here[1])
        return near[:10], recent[-10:], np.flatnonzero(ed <= 3.0), body_latest(i)

    gist_vectors = data["gist_vectors"]

    def gists(i: int) -> object:
        return _top(gist_vectors @ query_vector(i), 10)

    def entities(i: int) -> object:
        needle = OBJECTS[i % len(OBJECTS)]
        return [n for n in data["entity_names"] if needle in n.lower()][:10]

    def locate(i: int) -> np.ndarray:
        q = query_vector(i)
        hits = semantic(i, q)
        s = vectors[hits] @ q
        w = np.exp((s - s.max()) / 0.05) * (s >= s.max() - 0.1)
        return (w[:, None] * xy[hits]).sum(axis=0) / w.sum()

    def recall(i: int) -> object:
        c = locate(i)
        d = np.hypot(xy[:, 0] - c[0], xy[:, 1] - c[1])
        index = np.flatnonzero((d <= 2.0) & perception)
        return index[np.argsort(d[index])[:10]]

    return {
        "semantic_search": semantic,
        "spatial_query": spatial,
        "temporal_query": temporal,
        "episode_summary": episode,
        "get_current_context": context,
        "search_gists": gists,
        "entity_query": entities,
        "locate": locate,
        "recall": recall,
        "body_status": body_latest,
    }


def _tool_calls(memory: SpatioTemporalMemory) -> dict[str, Callable[[int], str]]:
    queries = [f"where is the {c} {o}?" for c in COLOURS for o in OBJECTS]

    def centre(i: int) -> np.ndarray:
        return np.random.default_rng(i).uniform(0, SIDE, size=2)

    return {
        "semantic_search": lambda i: memory.semantic_search(queries[i % len(queries)]),
        "spatial_query": lambda i: memory.spatial_query(float(centre(i)[0]), float(centre(i)[1])),
        "temporal_query": lambda i: memory.temporal_query(last_n_minutes=10),
        "episode_summary": lambda i: memory.episode_summary(),
        "get_current_context": lambda i: memory.get_current_context(),
        "search_gists": lambda i: memory.search_gists(queries[i % len(queries)]),
        "entity_query": lambda i: memory.entity_query(name=OBJECTS[i % len(OBJECTS)]),
        "locate": lambda i: memory.locate(queries[i % len(queries)]),
        "recall": lambda i: memory.recall(queries[i % len(queries)]),
        "body_status": lambda i: memory.body_status(),
    }


def _p50_ms(run: Callable[[int], object], repeats: int) -> float:
    run(0)  # warm caches and connections
    times = []
    for i in range(1, repeats + 1):
        started = time.perf_counter()
        run(i)
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def bench_tools(
    n: int,
    out_dir: Path | str,
    *,
    embedder: EmbeddingProvider | None = None,
    repeats: int = 20,
    seed: int = 0,
) -> dict[str, Any]:
    """Measure each tool's p50 latency at ``n`` observations against exact NumPy.

    Args:
        n: observations in the memory.
        out_dir: where the memory is built (``out_dir/memory``, replaced) and where
            ``bench_tools.json`` and ``bench_tools.md`` are written.
        embedder: vectors of the synthetic texts (default HashingEmbedder(384)).
        repeats: timed calls per tool (after one warm-up call).
        seed: workload seed.

    Returns:
        {"n", "build_seconds", "index_seconds", "tools": {name: {"p50_ms", "numpy_p50_ms",
        "ratio"}}}
    """
    out = Path(out_dir)
    directory = out / "memory"
    if directory.exists():
        shutil.rmtree(directory)
    out.mkdir(parents=True, exist_ok=True)
    provider = embedder if embedder is not None else HashingEmbedder(384)
    now = [START]
    config = MemoryConfig(
        db_path=str(directory),
        embedding_dim=provider.dim,
        flush_batch_size=5_000,
        flush_interval=1e9,
        vector_compact_every=1_000_000,
        # Entities come from add_entity and the consolidated episodes; no background work
        # competes with the timed calls.
        entity_extract_flush_interval=10**9,
        entity_extract_time_interval=1e12,
        maintenance_interval=None,
    )
    with SpatioTemporalMemory(
        config=config, embedding_provider=provider, get_current_time=lambda: now[0]
    ) as memory:
        started = time.perf_counter()
        data = _build(memory, n, provider, seed)
        built = time.perf_counter() - started
        started = time.perf_counter()
        memory.store.vectors.compact()  # scalar, full-text and (from 50k rows) ANN indexes
        indexed = time.perf_counter() - started
        now[0] = START + n
        ours = _tool_calls(memory)
        exact = _numpy_side(data, now[0])
        tools: dict[str, dict[str, float]] = {}
        for name in TOOLS:
            ours_ms = _p50_ms(ours[name], repeats)
            numpy_ms = _p50_ms(exact[name], repeats)
            tools[name] = {
                "p50_ms": round(ours_ms, 2),
                "numpy_p50_ms": round(numpy_ms, 3),
                "ratio": round(ours_ms / max(numpy_ms, 1e-3), 1),
            }
    result = {
        "n": n,
        "embedder": getattr(provider, "name", type(provider).__name__),
        "build_seconds": round(built, 1),
        "index_seconds": round(indexed, 1),
        "tools": tools,
    }
    (out / "bench_tools.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    (out / "bench_tools.md").write_text(markdown_table(result), encoding="utf-8")
    return result


def markdown_table(result: dict[str, Any]) -> str:
    """The result as a Markdown table (tool, p50 ms, NumPy p50 ms, ratio)."""
    lines = [
        f"Tool latency at n = {result['n']:,} observations ({result['embedder']}; build "
        f"{result['build_seconds']} s, indexes {result['index_seconds']} s)",
        "",
        "| tool | p50 ms | exact NumPy p50 ms | ratio |",
        "|---|---:|---:|---:|",
    ]
    for name, row in result["tools"].items():
        lines.append(f"| {name} | {row['p50_ms']} | {row['numpy_p50_ms']} | {row['ratio']}x |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m emem_graph.bench_tools --n 100000 --out DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("bench-tools"))
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    result = bench_tools(args.n, args.out, repeats=args.repeats)
    print(markdown_table(result))


if __name__ == "__main__":
    main()
