"""The baseline side of every figure: the same data and the same questions without a memory.

Ingest: one Arrow ``COPY Observation FROM`` into a fresh Kuzu database plus one LanceDB append
of all vectors (the floor of this storage stack). Queries: exact NumPy on arrays in RAM, cosine
top-k over the normalised float32 matrix (``argpartition``), boolean masks for areas and time
windows. Disk and reopen: the raw arrays and texts saved with ``numpy.save``, loaded back and
searched once.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from emem_graph.evals.bench.workload import (
    AREA_RADIUS,
    OBJECTS,
    QUERIES,
    RECENT_MINUTES,
    SPATIAL_RADIUS,
    PatrolWorkload,
    room_of,
)
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.records import OBSERVATION_ARROW
from emem_graph.storage.store import GRAPH_FILE, VECTOR_DIR
from emem_graph.storage.vector_schema import VectorRow
from emem_graph.storage.vectors import VectorStore

Answer = Callable[[int], object]


def directory_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (or of ``path`` itself when it is a file)."""
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure_floor(work: PatrolWorkload, out_dir: Path) -> dict[str, float]:
    """One Arrow COPY of all rows into a fresh Kuzu database plus one LanceDB append."""
    n = len(work)
    ids = [uuid.uuid4().hex for _ in range(n)]
    table = pa.table(
        {
            "id": ids,
            "text": work.texts,
            "x": work.x,
            "y": work.y,
            "z": np.zeros(n),
            "timestamp": work.t,
            "layer": work.layers,
            "source_type": work.source_types,
            "confidence": np.ones(n),
            "tier": ["short_term"] * n,
            "episode_id": pa.nulls(n, pa.string()),
            "metadata": ["{}"] * n,
        },
        schema=OBSERVATION_ARROW,
    )
    rows = [
        VectorRow(
            id=ids[i],
            kind="observation",
            vector=work.vectors[i],
            x=float(work.x[i]),
            y=float(work.y[i]),
            z=0.0,
            t=float(work.t[i]),
            t_end=float(work.t[i]),
            layer=work.layers[i],
            source_type=work.source_types[i],
            episode_id=None,
            tier="short_term",
            text=work.texts[i],
        )
        for i in range(n)
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    graph = GraphDB(out_dir / GRAPH_FILE)
    try:
        graph.ensure_schema({"embedding_dim": str(work.vectors.shape[1])})
        start = time.perf_counter()
        with graph.write() as tx:
            tx.copy_nodes("Observation", table)
        kuzu_s = time.perf_counter() - start
    finally:
        graph.close()
    vectors = VectorStore(out_dir / VECTOR_DIR, work.vectors.shape[1])
    start = time.perf_counter()
    vectors.add(rows)
    lance_s = time.perf_counter() - start
    total = kuzu_s + lance_s
    return {
        "kuzu_copy_s": kuzu_s,
        "lance_add_s": lance_s,
        "seconds": total,
        "obs_per_s": n / total,
        "disk_bytes": directory_bytes(out_dir),
    }


def save_raw(work: PatrolWorkload, out_dir: Path) -> int:
    """Save the raw columns (vectors, x, y, t, texts); returns their bytes on disk."""
    out_dir.mkdir(parents=True, exist_ok=True)
    np.save(out_dir / "vectors.npy", work.vectors)
    np.save(out_dir / "xyt.npy", np.stack([work.x, work.y, work.t], axis=1))
    (out_dir / "texts.txt").write_text("\n".join(work.texts), encoding="utf-8")
    return directory_bytes(out_dir)


def reopen_raw(out_dir: Path, query: np.ndarray) -> float:
    """Seconds to load the raw columns back and answer one exact top-10 search."""
    start = time.perf_counter()
    vectors = np.load(out_dir / "vectors.npy")
    np.load(out_dir / "xyt.npy")
    texts = (out_dir / "texts.txt").read_text(encoding="utf-8").split("\n")
    hits = top_k(vectors @ query, 10)
    _ = [texts[i] for i in hits]
    return time.perf_counter() - start


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first."""
    k = min(k, scores.shape[0])
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part])]


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """BLAS limited to one thread (when threadpoolctl, a dependency of scikit-learn, is there).

    One small matrix-vector product is faster on one thread than woken across several, by up to
    50x on a busy 2-core machine; a large one can be faster on all. The baseline is measured both
    ways and the faster kept (``run``), so it stays the physical limit on any machine.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def exact_answers(work: PatrolWorkload, embedder: EmbeddingProvider) -> dict[str, Answer]:
    """The exact NumPy answer of each tool's question (and of the area-prefiltered search), as
    functions of the query index. Embedding the query is part of the time, as in the tools.

    The consolidated episode is the last lap (the benchmark consolidates only that one); its
    gists are the mean vectors of its perception observations per room.
    """
    xy = np.stack([work.x, work.y], axis=1)
    t = work.t
    body = work.body
    perception = ~body
    rows = np.flatnonzero(perception)
    matrix = np.ascontiguousarray(work.vectors[rows])
    now = work.now
    points = work.query_points
    entity_xy = xy[work.entity_rows] if work.entity_rows.size else np.zeros((0, 2))
    last_lap = work.lap == work.lap[-1]
    gist_vectors = _gist_vectors(work, last_lap & perception)

    def query_vector(i: int) -> np.ndarray:
        return np.asarray(embedder.embed([QUERIES[i % len(QUERIES)]])[0])

    def semantic(i: int, q: np.ndarray | None = None) -> np.ndarray:
        q = query_vector(i) if q is None else q
        return rows[top_k(matrix @ q, 10)]

    def semantic_area(i: int) -> np.ndarray:
        q = query_vector(i)
        cx, cy = points[i % len(points)]
        inside = np.flatnonzero(np.hypot(xy[:, 0] - cx, xy[:, 1] - cy) <= AREA_RADIUS)
        inside = inside[perception[inside]]
        return inside[top_k(work.vectors[inside] @ q, 10)]

    def near(cx: float, cy: float, radius: float) -> np.ndarray:
        d = np.hypot(xy[:, 0] - cx, xy[:, 1] - cy)
        index = np.flatnonzero((d <= radius) & perception)
        return index[np.argsort(d[index])[:10]]

    def spatial(i: int) -> object:
        cx, cy = points[i % len(points)]
        return near(cx, cy, SPATIAL_RADIUS)

    def temporal(i: int) -> object:
        index = np.flatnonzero((t >= now - RECENT_MINUTES * 60) & perception)
        return index[top_k(t[index], 10)]

    def episode(i: int) -> object:
        return int(last_lap.sum()), float(t[last_lap].min()), float(t[last_lap].max())

    def body_latest(i: int) -> object:
        index = np.flatnonzero(body)
        return index[np.argmax(t[index])] if index.size else None

    def context(i: int) -> object:
        here = xy[rows[-1]] if rows.size else np.zeros(2)
        recent = np.flatnonzero((t >= now - 300) & perception)
        entity_d = np.hypot(entity_xy[:, 0] - here[0], entity_xy[:, 1] - here[1])
        return near(here[0], here[1], 3.0), recent[-10:], entity_d <= 3.0, body_latest(i)

    def gists(i: int) -> object:
        return top_k(gist_vectors @ query_vector(i), 10)

    def entities(i: int) -> object:
        needle = OBJECTS[i % len(OBJECTS)]
        return [name for name in work.entity_names if needle in name][:10]

    def locate(i: int) -> np.ndarray:
        q = query_vector(i)
        hits = semantic(i, q)
        s = work.vectors[hits] @ q
        w = np.exp((s - s.max()) / 0.05) * (s >= s.max() - 0.1)
        return np.asarray((w[:, None] * xy[hits]).sum(axis=0) / w.sum())

    def recall(i: int) -> object:
        c = locate(i)
        return near(float(c[0]), float(c[1]), 2.0)

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
        "semantic_search_area": semantic_area,
    }


def _gist_vectors(work: PatrolWorkload, rows: np.ndarray) -> np.ndarray:
    """One unit vector per room visited by the given rows: the mean of their vectors."""
    index = np.flatnonzero(rows)
    rooms = room_of(work.x[index], work.y[index])
    means = [work.vectors[index[rooms == r]].mean(axis=0) for r in np.unique(rooms)]
    if not means:
        return np.zeros((0, work.vectors.shape[1]), dtype=np.float32)
    matrix = np.asarray(means, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
