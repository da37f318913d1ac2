"""Ingest benchmark: emem_graph's write path against the storage floor, measured in one run.

The floor is what the two engines need at least for the same rows: one Arrow ``COPY Observation
FROM`` into a fresh Kuzu database and one LanceDB append of all vectors. emem_graph's figure is
the facade's real path (``SpatioTemporalMemory.add`` then flush every ``batch_size`` adds, as
the buffer does when a batch is full), so ``ours / floor`` says what the write path costs on top
of the engines. Optionally the same ingest embeds the texts with a real model.

The workload is a patrol: a robot walking a rectangular loop through five rooms, seeing coloured
objects (texts from a small vocabulary), with precomputed random unit vectors.

Run: ``python -m emem_graph.bench --n 100000 --batch-size 5000 [--model all-MiniLM-L6-v2]``.
"""

from __future__ import annotations

import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from emem_graph.config import MemoryConfig
from emem_graph.ingest.embeddings import EmbeddingProvider, HashingEmbedder
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.records import OBSERVATION_ARROW
from emem_graph.storage.store import GRAPH_FILE, VECTOR_DIR
from emem_graph.storage.vectors import VectorRow, VectorStore

DIM = 384
COLOURS = ("red", "blue", "green", "yellow", "white", "black", "grey", "orange")
OBJECTS = (
    "chair", "table", "door", "box", "person", "cup", "laptop", "plant",
    "shelf", "bottle", "bag", "robot", "window", "lamp", "trolley", "fire extinguisher",
)  # fmt: skip
RELATIONS = ("near", "next to", "in front of", "behind", "on the left of", "on the right of")
ROOMS = ("kitchen", "hallway", "lab", "office", "storage room")
LOOP = (40.0, 20.0)
"""Width and height of the patrol loop in metres."""
SPEED = 1.0
"""Metres per second along the loop."""
PERIOD = 0.5
"""Seconds between two observations."""


@dataclass(frozen=True)
class PatrolWorkload:
    """n observations of a patrol: columns of the Observation table plus unit vectors."""

    ids: list[str]
    texts: list[str]
    x: np.ndarray
    y: np.ndarray
    t: np.ndarray
    layers: list[str]
    source_types: list[str]
    vectors: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def patrol_workload(n: int, *, dim: int = DIM, seed: int = 0) -> PatrolWorkload:
    """A robot walking a rectangular loop, one observation every PERIOD seconds.

    Every 20th observation is a battery reading (layer "battery", source "interoception");
    the others are camera detections of an object near the room the robot is in.
    """
    rng = np.random.default_rng(seed)
    width, height = LOOP
    perimeter = 2 * (width + height)
    t = np.arange(n, dtype=np.float64) * PERIOD
    s = (t * SPEED) % perimeter
    x = np.select(
        [s < width, s < width + height, s < 2 * width + height],
        [s, np.full(n, width), width - (s - width - height)],
        np.zeros(n),
    )
    y = np.select(
        [s < width, s < width + height, s < 2 * width + height],
        [np.zeros(n), s - width, np.full(n, height)],
        height - (s - 2 * width - height),
    )
    x = x + rng.normal(0.0, 0.2, n)
    y = y + rng.normal(0.0, 0.2, n)
    room = np.minimum((s / perimeter * len(ROOMS)).astype(int), len(ROOMS) - 1)
    colour = rng.integers(0, len(COLOURS), n)
    obj = rng.integers(0, len(OBJECTS), n)
    rel = rng.integers(0, len(RELATIONS), n)
    texts: list[str] = []
    layers: list[str] = []
    sources: list[str] = []
    for i in range(n):
        if i % 20 == 19:
            texts.append(f"battery at {100 - (i // 20) % 80} percent")
            layers.append("battery")
            sources.append("interoception")
        else:
            texts.append(
                f"a {COLOURS[colour[i]]} {OBJECTS[obj[i]]} {RELATIONS[rel[i]]} "
                f"the {ROOMS[room[i]]} door"
            )
            layers.append("default")
            sources.append("camera")
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return PatrolWorkload(
        ids=[uuid.uuid4().hex for _ in range(n)],
        texts=texts,
        x=x,
        y=y,
        t=t,
        layers=layers,
        source_types=sources,
        vectors=vectors,
    )


class _TimedEmbedder:
    """Wraps an embedder and adds up the seconds spent in embed()."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)


def directory_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (or of ``path`` itself when it is a file)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure_floor(work: PatrolWorkload, out_dir: Path) -> dict[str, float]:
    """One Arrow COPY of all rows into a fresh Kuzu database plus one LanceDB append."""
    n = len(work)
    table = pa.table(
        {
            "id": work.ids,
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
            id=work.ids[i],
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
        "graph_bytes": directory_bytes(out_dir / GRAPH_FILE),
        "vectors_bytes": directory_bytes(out_dir / VECTOR_DIR),
    }


def measure_ingest(
    work: PatrolWorkload,
    out_dir: Path,
    *,
    batch_size: int,
    embedder: EmbeddingProvider | None = None,
    **config: Any,
) -> dict[str, float]:
    """emem_graph's ingest: add() every observation, flushing every ``batch_size`` adds.

    With ``embedder`` the memory embeds the texts itself; without, the precomputed vectors are
    given to add() and a HashingEmbedder (never called) stands in for the model.
    """
    n = len(work)
    timed = _TimedEmbedder(embedder) if embedder is not None else None
    provider = timed if timed is not None else HashingEmbedder(work.vectors.shape[1])
    memory = SpatioTemporalMemory(
        config=MemoryConfig(
            db_path=str(out_dir),
            embedding_dim=provider.dim,
            flush_batch_size=batch_size,
            flush_interval=3600.0,
            **config,
        ),
        embedding_provider=provider,
        get_current_time=lambda: 0.0,
    )
    xs, ys, ts = work.x.tolist(), work.y.tolist(), work.t.tolist()
    flushes = 0
    try:
        start = time.perf_counter()
        for i in range(n):
            memory.add(
                work.texts[i],
                xs[i],
                ys[i],
                timestamp=ts[i],
                layer_name=work.layers[i],
                source_type=work.source_types[i],
                embedding=None if embedder is not None else work.vectors[i],
            )
            if (i + 1) % batch_size == 0:
                memory.flush()
                flushes += 1
        memory.flush()
        seconds = time.perf_counter() - start
        counts = memory.store.counts()
    finally:
        start = time.perf_counter()
        memory.close()
        close_s = time.perf_counter() - start
    if counts["observations"] != n:
        raise RuntimeError(f"ingest stored {counts['observations']} of {n} observations")
    return {
        "seconds": seconds,
        "obs_per_s": n / seconds,
        "embed_s": timed.seconds if timed is not None else 0.0,
        "flushes": flushes,
        "close_s": close_s,
        "graph_bytes": directory_bytes(out_dir / GRAPH_FILE),
        "vectors_bytes": directory_bytes(out_dir / VECTOR_DIR),
    }


def bench_ingest(
    n: int,
    out_dir: Path,
    embedder: EmbeddingProvider | None = None,
    batch_size: int = 1000,
    *,
    model_n: int | None = None,
    keep: bool = False,
) -> dict[str, Any]:
    """Measure the storage floor and emem_graph's ingest of the same n patrol observations.

    Args:
        n: observations written by the floor and by the vectors-given ingest.
        out_dir: directory for the databases (sub-directories floor/, ours/, model/).
        embedder: when given, also ingest ``model_n`` observations letting the memory embed the
            texts with it, and measure the embedder alone on the same texts.
        batch_size: adds between two flushes (the memory's flush_batch_size).
        model_n: observations for the embedder run (default: n).
        keep: leave the databases in out_dir (default: remove them).

    Returns:
        A dict with "floor", "ours" (and "model") sections of seconds and obs_per_s,
        "ratio" = ours obs/s divided by floor obs/s, and disk sizes. The model section also
        says how many of its seconds were spent embedding (embed_s) and storing (storage_s).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = patrol_workload(n)
    result: dict[str, Any] = {"n": n, "batch_size": batch_size, "dim": work.vectors.shape[1]}
    try:
        result["floor"] = measure_floor(work, out_dir / "floor")
        result["ours"] = measure_ingest(work, out_dir / "ours", batch_size=batch_size)
        result["ratio"] = result["ours"]["obs_per_s"] / result["floor"]["obs_per_s"]
        if embedder is not None:
            m = min(n, model_n or n)
            texts = work.texts[:m]
            start = time.perf_counter()
            for i in range(0, m, batch_size):
                embedder.embed(texts[i : i + batch_size])
            embed_s = time.perf_counter() - start
            sub = _head(work, m)
            model = measure_ingest(sub, out_dir / "model", batch_size=batch_size, embedder=embedder)
            floor_s = result["floor"]["seconds"] * m / n
            model["n"] = m
            model["embed_only_obs_per_s"] = m / embed_s
            model["storage_s"] = model["seconds"] - model["embed_s"]
            model["storage_share"] = model["storage_s"] / model["seconds"]
            model["ratio_to_floor"] = model["obs_per_s"] / result["floor"]["obs_per_s"]
            model["ratio_to_embed_plus_floor"] = model["obs_per_s"] / (m / (embed_s + floor_s))
            result["model"] = model
    finally:
        if not keep:
            for name in ("floor", "ours", "model"):
                shutil.rmtree(out_dir / name, ignore_errors=True)
    return result


def _head(work: PatrolWorkload, m: int) -> PatrolWorkload:
    return PatrolWorkload(
        ids=[uuid.uuid4().hex for _ in range(m)],
        texts=work.texts[:m],
        x=work.x[:m],
        y=work.y[:m],
        t=work.t[:m],
        layers=work.layers[:m],
        source_types=work.source_types[:m],
        vectors=work.vectors[:m],
    )
