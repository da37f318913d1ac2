"""Evaluation of the area forest on the generated scene (``emem-graph areas-eval``).

Accuracy: each implicit question is answered by ``global_search``'s walk; it counts as resolved
when the best chain's room-level area (level 1) lies in the question's region — the region most
of that area's memories were generated in. The leaf-level figure asks the same of the single
memory the chain ends in, and the flat baseline of the nearest observation to the question
(dense search over all observations, no areas). Global questions must return the roots.
Cost: build time of the whole forest per 10k observations, and the walk's latency and visited
nodes.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from emem_graph.config import MemoryConfig
from emem_graph.evals.scene import Scene, generate_scene
from emem_graph.filters import VectorFilter
from emem_graph.memory import SpatioTemporalMemory

GLOBAL_QUESTIONS = (
    "what is this place like?",
    "give me an overview of everything you have seen",
    "describe the whole area",
)


@dataclass
class QuestionResult:
    question: str
    region: str
    area_region: str | None
    leaf_region: str | None
    flat_region: str | None
    seconds: float
    visited: int

    @property
    def resolved(self) -> bool:
        return self.area_region == self.region


@dataclass
class Evaluation:
    """Figures of one scene."""

    observations: int
    areas_per_level: dict[int, int]
    build_seconds: float
    purity: float
    """Share of level-1 areas' memories generated in their area's majority region."""
    results: list[QuestionResult] = field(default_factory=list)
    global_ok: int = 0
    global_total: int = 0

    def accuracy(self, which: str = "area") -> float:
        if not self.results:
            return 0.0
        hits = sum(getattr(r, f"{which}_region") == r.region for r in self.results)
        return hits / len(self.results)

    def describe(self) -> str:
        latencies = [r.seconds * 1000 for r in self.results]
        visited = [r.visited for r in self.results]
        levels = ", ".join(f"L{k}: {v}" for k, v in sorted(self.areas_per_level.items()))
        lines = [
            f"scene: {self.observations} observations; forest {levels}; "
            f"built in {self.build_seconds:.2f} s; level-1 purity {self.purity:.1%}",
            f"implicit questions: {len(self.results)}; resolved to the right region: "
            f"{self.accuracy('area'):.1%} (room-level area), {self.accuracy('leaf'):.1%} (leaf "
            f"memory); flat nearest-observation baseline {self.accuracy('flat'):.1%}",
        ]
        if latencies:
            lines.append(
                f"walk: median {statistics.median(latencies):.1f} ms, max "
                f"{max(latencies):.1f} ms; nodes visited median {statistics.median(visited):.0f}"
                f", max {max(visited)}"
            )
        lines.append(f"global questions answered with the top-level areas: {self.global_ok}/"
                     f"{self.global_total}")  # fmt: skip
        return "\n".join(lines)

    def misses(self) -> list[str]:
        return [
            f"{r.question!r}: expected {r.region}, got {r.area_region} (leaf {r.leaf_region})"
            for r in self.results
            if not r.resolved
        ]


def remember_scene(
    memory: SpatioTemporalMemory, scene: Scene, vectors: np.ndarray | None = None
) -> dict[str, str]:
    """Add the scene's observations (with their ``vectors`` when given, else embedded);
    returns observation id -> region."""
    regions: dict[str, str] = {}
    for index, observation in enumerate(scene.observations):
        node_id = memory.add(
            observation.text,
            observation.x,
            observation.y,
            timestamp=observation.timestamp,
            layer_name=observation.layer,
            embedding=None if vectors is None else vectors[index],
        )
        regions[node_id] = observation.region
    memory.flush()
    return regions


def evaluate_scene(
    memory: SpatioTemporalMemory, scene: Scene, regions: dict[str, str], *, n_walks: int = 3
) -> Evaluation:
    """Build the forest of ``memory`` (holding ``scene``) and ask every question."""
    started = time.perf_counter()
    memory.areas.build()
    build_seconds = time.perf_counter() - started
    forest = memory.areas.forest
    per_level = Counter(a.level for a in forest.areas.values())
    majority: dict[str, str | None] = {}
    pure = total = 0
    for area in forest.at_level(1):
        counts = Counter(regions.get(c) for c in area.children if c in regions)
        if counts:
            region, count = counts.most_common(1)[0]
            majority[area.id] = region
            pure += count
            total += sum(counts.values())
    evaluation = Evaluation(
        observations=len(scene.observations),
        areas_per_level=dict(per_level),
        build_seconds=build_seconds,
        purity=pure / total if total else 0.0,
    )
    for question in scene.questions:
        result = memory.areas.search(question.text, n_walks)
        best = next((c for c in result.chains if c.leaf is not None), None)
        area_region = majority.get(best.areas[0].id) if best else None
        leaf_region = regions.get(best.leaf.id) if best and best.leaf is not None else None
        evaluation.results.append(
            QuestionResult(
                question.text,
                question.region,
                area_region,
                leaf_region,
                _flat_region(memory, question.text, regions),
                result.seconds,
                result.visited,
            )
        )
    # A global question is answered with the top-level summaries: the overview
    # (describe_area without arguments) shows every root, and a global search's chains end at
    # them (each walk starts at its own root).
    roots = forest.roots()
    overview = memory.describe_area(n_results=len(roots))
    for text in GLOBAL_QUESTIONS:
        answer = memory.global_search(text, n_results=3, n_walks=max(3, len(roots)))
        evaluation.global_total += 1
        expected = roots[:3]
        if all(r.text in answer and r.text in overview for r in expected):
            evaluation.global_ok += 1
    return evaluation


def _flat_region(
    memory: SpatioTemporalMemory, question: str, regions: dict[str, str]
) -> str | None:
    vector = memory.embed([question])[0]
    hits = memory._store.vectors.search(vector, 1, VectorFilter(kinds=("observation",)))
    return regions.get(hits[0].id) if hits else None


def build_timing(
    sizes: list[int], embedder: Any, *, seed: int = 0, progress: Callable[[str], None] = print
) -> list[tuple[int, float, int]]:
    """Seconds to build the whole forest of scenes of about ``sizes`` observations: (n,
    seconds, areas)."""
    figures = []
    for size in sizes:
        # Sites of ~1,000 observations each (60 per region), as many as the size needs: the
        # world grows with the memory, as it does for a robot that keeps exploring.
        sites = max(1, round(size / 1000))
        per_region = max(2, round(size / sites / 16.5))
        scene = generate_scene(per_region, seed=seed, sites=sites)
        with tempfile.TemporaryDirectory() as directory:
            memory = _memory(Path(directory) / "m", embedder)
            try:
                remember_scene(memory, scene)
                started = time.perf_counter()
                memory.areas.build()
                seconds = time.perf_counter() - started
                figures.append((len(scene.observations), seconds, len(memory.areas.forest.areas)))
                progress(f"  {len(scene.observations)} observations: {seconds:.2f} s")
            finally:
                memory.close()
    return figures


def _memory(path: Path, embedder: Any, **fields: Any) -> SpatioTemporalMemory:
    config = MemoryConfig(
        db_path=str(path),
        flush_batch_size=500,
        maintenance_interval=None,
        embedding_dim=embedder.dim,
        **fields,
    )
    return SpatioTemporalMemory(config=config, embedding_provider=embedder)


def run(
    per_region: int = 30,
    seeds: tuple[int, ...] = (0,),
    *,
    embedder: Any,
    n_walks: int = 3,
    directory: Path | None = None,
) -> list[Evaluation]:
    """Evaluate one scene per seed (in ``directory``, or a temporary one)."""
    evaluations = []
    for seed in seeds:
        scene = generate_scene(per_region, seed=seed)
        with tempfile.TemporaryDirectory() as scratch:
            root = directory or Path(scratch)
            memory = _memory(root / f"scene-{seed}", embedder)
            try:
                regions = remember_scene(memory, scene)
                evaluations.append(evaluate_scene(memory, scene, regions, n_walks=n_walks))
            finally:
                memory.close()
    return evaluations


def summary(evaluations: list[Evaluation]) -> dict[str, float]:
    """Mean figures over scenes."""
    return {
        "area_accuracy": float(np.mean([e.accuracy("area") for e in evaluations])),
        "leaf_accuracy": float(np.mean([e.accuracy("leaf") for e in evaluations])),
        "flat_accuracy": float(np.mean([e.accuracy("flat") for e in evaluations])),
        "questions": float(sum(len(e.results) for e in evaluations)),
    }


def to_json(evaluations: list[Evaluation], timing: list[tuple[int, float, int]]) -> dict[str, Any]:
    """The figures as JSON-ready values."""
    return {
        "summary": summary(evaluations),
        "scenes": [
            {
                "observations": e.observations,
                "areas_per_level": {str(k): v for k, v in e.areas_per_level.items()},
                "build_seconds": e.build_seconds,
                "purity": e.purity,
                "area_accuracy": e.accuracy("area"),
                "leaf_accuracy": e.accuracy("leaf"),
                "flat_accuracy": e.accuracy("flat"),
                "walk_ms": [r.seconds * 1000 for r in e.results],
                "visited": [r.visited for r in e.results],
                "global_ok": e.global_ok,
                "global_total": e.global_total,
                "misses": e.misses(),
            }
            for e in evaluations
        ],
        "build_timing": [{"observations": n, "seconds": s, "areas": a} for n, s, a in timing],
    }
