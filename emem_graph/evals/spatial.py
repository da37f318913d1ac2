"""The spatial tools on the generated campus: success figures against the ground truth, and the
route latency at scale next to a SciPy Dijkstra over the same place graph.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra
from tqdm import tqdm

from emem_graph.evals.campus import (
    ENTITY_KINDS,
    SIDE_DISTANCE,
    Campus,
    Item,
    Question,
    build_campus,
    questions,
)
from emem_graph.spatial import places

if TYPE_CHECKING:
    from emem_graph.memory import SpatioTemporalMemory
    from emem_graph.spatial.resolve import Candidate

EVAL_MAX_DETOUR = 100.0
EVAL_MAX_DISTANCE = 150.0


def populate(memory: SpatioTemporalMemory, campus: Campus, seed: int = 0) -> None:
    """Feed the campus walk to a memory: one observation per sample (the caption, at the
    robot's position and time), and an entity sighting (near the item's true position) for
    every sample that sees an item of an entity kind or an outdoor landmark."""
    rng = random.Random(seed)
    for sample in campus.samples:
        memory.add(sample.text, sample.x, sample.y, timestamp=sample.timestamp, layer_name="camera")
        item = sample.item
        if item is not None and _is_entity(item):
            memory.add_entity(
                item.name,
                item.x + rng.gauss(0.0, 0.2),
                item.y + rng.gauss(0.0, 0.2),
                timestamp=sample.timestamp,
                entity_type="landmark" if item.kind is None else "object",
                layer_name="detections",
            )
    memory.catch_up()  # observations, places and entity links in the graph


def _is_entity(item: Item) -> bool:
    return (item.kind in ENTITY_KINDS) or (item.kind is None and not item.indoor)


@dataclass(frozen=True)
class Outcome:
    """One question's result."""

    question: Question
    first: tuple[float, float] | None
    """Position of the first-ranked candidate (None: nothing returned)."""
    error: float
    """Metres from the true instance (inf when nothing was returned)."""
    right: bool
    """The first-ranked candidate is the true instance: the true instance is the nearest one
    of its kind to the returned position, within the success radius."""


def ask(memory: SpatioTemporalMemory, campus: Campus, question: Question) -> Outcome:
    """Ask one question through the tools' typed results and judge the first answer."""
    spatial = memory.places
    spatial.flush_before_tool()
    first: Candidate | None = None
    if question.kind == "route":
        found = spatial.route_candidates(
            question.target, question.goal or "", question.anchor, EVAL_MAX_DETOUR
        )
        if not isinstance(found, str) and found[1]:
            first = found[1][0].candidate
    else:
        distance = EVAL_MAX_DISTANCE if question.kind == "compass" else SIDE_DISTANCE
        directional = spatial.directional_candidates(
            question.target, question.anchor, question.direction or "", distance, question.goal
        )
        if not isinstance(directional, str) and directional[1]:
            first = directional[1][0][0]
    if first is None:
        return Outcome(question, None, math.inf, False)
    position = (first.x, first.y)
    truth = question.answer
    error = math.dist(position, (truth.x, truth.y))
    nearest = min(campus.instances(question.target), key=lambda i: math.dist(position, (i.x, i.y)))
    return Outcome(question, position, error, nearest is truth and error <= truth.radius)


@dataclass(frozen=True)
class Evaluation:
    """Success figures of one campus run."""

    buildings: int
    items: int
    observations: int
    places: int
    connections: int
    outcomes: list[Outcome]
    seconds: float

    @property
    def right(self) -> int:
        return sum(o.right for o in self.outcomes)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        """(right, asked) per question kind."""
        kinds: dict[str, tuple[int, int]] = {}
        for outcome in self.outcomes:
            right, asked = kinds.get(outcome.question.kind, (0, 0))
            kinds[outcome.question.kind] = (right + outcome.right, asked + 1)
        return kinds

    def report(self) -> str:
        """The figures as text."""
        asked = len(self.outcomes)
        lines = [
            f"campus: {self.buildings} buildings, {self.items} items, {self.observations} "
            f"observations -> {self.places} places, {self.connections} CONNECTS edges",
            f"right instance ranked first: {self.right}/{asked} = {self.right / asked:.1%}",
        ]
        for kind, (right, n) in sorted(self.by_kind().items()):
            lines.append(f"  {kind}: {right}/{n}")
        errors = [o.error for o in self.outcomes if o.right]
        if errors:
            lines.append(
                f"position error of right answers: median {statistics.median(errors):.2f} m, "
                f"max {max(errors):.2f} m (success radius 3 m indoor, 15 m outdoor)"
            )
        for outcome in self.outcomes:
            if not outcome.right:
                where = (
                    "nothing"
                    if outcome.first is None
                    else f"({outcome.first[0]:.1f}, {outcome.first[1]:.1f})"
                )
                truth = outcome.question.answer
                lines.append(
                    f"  missed: {outcome.question.describe()}: got {where}, true "
                    f"({truth.x:.1f}, {truth.y:.1f})"
                )
        lines.append(f"({self.seconds:.1f} s including building the memory)")
        return "\n".join(lines)


def evaluate_campus(
    memory_factory: Callable[[], SpatioTemporalMemory],
    *,
    columns: int = 3,
    rows: int = 2,
    instances_per_kind: int = 4,
    count: int = 40,
    seed: int = 0,
    progress: bool = False,
) -> Evaluation:
    """Build a campus, feed it to a new memory, ask ``count`` questions, judge the answers."""
    started = time.perf_counter()
    campus = build_campus(columns, rows, instances_per_kind, seed=seed)
    asked = questions(campus, count, seed=seed)
    memory = memory_factory()
    try:
        populate(memory, campus, seed)
        outcomes = [ask(memory, campus, q) for q in tqdm(asked, disable=not progress, desc="ask")]
        counts = places.map_counts(memory.store)
    finally:
        memory.close()
    return Evaluation(
        buildings=len(campus.buildings),
        items=len(campus.items),
        observations=len(campus.samples),
        places=counts.places,
        connections=counts.connections,
        outcomes=outcomes,
        seconds=time.perf_counter() - started,
    )


# --- latency at scale ------------------------------------------------------------------------


@dataclass(frozen=True)
class RouteBench:
    """route_query latency at scale, its parts, and SciPy over the same place graph."""

    observations: int
    places: int
    connections: int
    linked: int
    """Perception observations linked to their place (AT_PLACE)."""
    ingest_s: float
    compact_s: float
    """LanceDB compaction after the ingest: merged fragments, the ANN index built."""
    ann_rows: int
    """Vectors under the ANN index when timed (0: exact search)."""
    route_query_ms: list[float]
    """The whole tool (flush, candidates, the route and the candidates' route lengths)."""
    candidates_ms: list[float]
    """Its semantic part: the entity and observation vector searches (LanceDB)."""
    cypher_ms: list[float]
    """Its graph part: spatial_route (the path) and spatial_route_costs from start and goal."""
    scipy_ms: list[float]
    """The same graph work with SciPy: Dijkstra from start (with the path) and from goal."""
    lengths_agree: bool

    def report(self) -> str:
        """The figures as text."""

        def p50(values: list[float]) -> str:
            return f"{statistics.median(values):.1f} ms"

        return "\n".join(
            [
                f"{self.observations} observations ({self.linked} linked to a place) -> "
                f"{self.places} places, {self.connections} CONNECTS edges (ingest "
                f"{self.ingest_s:.0f} s, compaction {self.compact_s:.0f} s, ANN index over "
                f"{self.ann_rows} vectors)",
                f"route_query p50 {p50(self.route_query_ms)} over {len(self.route_query_ms)} "
                "queries (start and goal as coordinates)",
                f"  its candidate search (2 LanceDB vector searches) p50 {p50(self.candidates_ms)}",
                f"  its graph part in Kuzu Cypher (spatial_route + 2x spatial_route_costs) p50 "
                f"{p50(self.cypher_ms)}",
                f"SciPy csgraph.dijkstra, same graph work (from start with the path, from goal) "
                f"p50 {p50(self.scipy_ms)}",
                f"route lengths agree (Cypher vs SciPy, 1e-6): {self.lengths_agree}",
            ]
        )


def bench_routes(
    memory_factory: Callable[[], SpatioTemporalMemory],
    observations: int = 100_000,
    queries: int = 30,
    seed: int = 0,
    progress: bool = False,
) -> RouteBench:
    """Fill a memory with ``observations`` along repeated campus walks (random unit vectors
    given to add(): no embedding), wait for the background entity extraction, reopen it, then
    time route_query and its parts, and SciPy's Dijkstra over the same places and CONNECTS
    edges, on the same random start/goal pairs. ``memory_factory`` must open the same
    directory each time."""
    campus = build_campus(seed=seed)
    memory = memory_factory()
    rng = np.random.default_rng(seed)
    try:
        started = time.perf_counter()
        texts = [s.text for s in campus.samples]
        lap = len(campus.samples)
        vectors = rng.standard_normal((256, memory.embedder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for n in tqdm(range(observations), disable=not progress, desc="ingest", unit="obs"):
            sample = campus.samples[n % lap]
            memory.add(
                texts[n % lap],
                sample.x,
                sample.y,
                timestamp=float(n),
                embedding=vectors[n % len(vectors)],
            )
        memory.catch_up()
        memory.extract_entities()  # the timings below must not share the CPU with it
        ingest_s = time.perf_counter() - started
        # A robot's memory compacts every compact_every commits, which builds the ANN index
        # once ann_index_min_rows vectors are in; the 100 commits here may not reach that.
        started = time.perf_counter()
        memory.store.vectors.compact()
        compact_s = time.perf_counter() - started
        # Timed on the memory as a robot finds it after a restart: reopened, LanceDB compacted.
        memory.close()
        memory = memory_factory()
        spatial = memory.places
        positions, a, b, d, ids = spatial.keeper.snapshot()
        n_places = len(ids)
        graph = coo_matrix((d, (a, b)), shape=(n_places, n_places)).tocsr()
        pairs = [tuple(rng.choice(n_places, 2, replace=False)) for _ in range(queries)]
        target = "vending machine"
        found = [spatial.keeper.nearest(c.x, c.y) for c in spatial.candidates(target)]
        candidate_places = sorted({f[0].id for f in found if f is not None})
        timings: dict[str, list[float]] = {k: [] for k in ("tool", "candidates", "cypher", "scipy")}
        agree = True
        for i, j in pairs:
            start = f"{positions[i][0]:.3f}, {positions[i][1]:.3f}"
            goal = f"{positions[j][0]:.3f}, {positions[j][1]:.3f}"
            with _timed(timings["tool"]):
                memory.route_query(target, goal, start, 1000.0)
            with _timed(timings["candidates"]):
                spatial.candidates(target)
            with _timed(timings["cypher"]):
                route = places.shortest_route(memory.store.graph, ids[i], ids[j])
                places.route_lengths(memory.store.graph, ids[i], candidate_places)
                places.route_lengths(memory.store.graph, ids[j], candidate_places)
            with _timed(timings["scipy"]):
                dist, predecessors = dijkstra(
                    graph, directed=False, indices=int(i), return_predecessors=True
                )
                chain = [int(j)]
                while chain[-1] != i and predecessors[chain[-1]] >= 0:
                    chain.append(int(predecessors[chain[-1]]))
                dijkstra(graph, directed=False, indices=int(j))
            if route is None or abs(route.length - float(dist[j])) > 1e-6:
                agree = False
        counts = places.map_counts(memory.store)
        ann_rows = int(memory.store.vectors.stats()["ann_indexed_rows"])
    finally:
        memory.close()
    return RouteBench(
        observations=observations,
        places=counts.places,
        connections=counts.connections,
        linked=counts.linked_observations,
        ingest_s=ingest_s,
        compact_s=compact_s,
        ann_rows=ann_rows,
        route_query_ms=timings["tool"],
        candidates_ms=timings["candidates"],
        cypher_ms=timings["cypher"],
        scipy_ms=timings["scipy"],
        lengths_agree=agree,
    )


@contextmanager
def _timed(into: list[float]) -> Iterator[None]:
    started = time.perf_counter()
    yield
    into.append((time.perf_counter() - started) * 1000.0)


def memory_factory(
    directory: Path, embedder: Any, **config: Any
) -> Callable[[], SpatioTemporalMemory]:
    """A factory opening the memory in ``directory``: no background maintenance, a fixed
    clock (the campus walk brings its own timestamps)."""
    from emem_graph.config import MemoryConfig
    from emem_graph.memory import SpatioTemporalMemory

    def build() -> SpatioTemporalMemory:
        fields = {"db_path": str(directory), "maintenance_interval": None, **config}
        return SpatioTemporalMemory(
            config=MemoryConfig.build(**fields),
            embedding_provider=embedder,
            get_current_time=lambda: 1.0e6,
        )

    return build
