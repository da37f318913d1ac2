"""Driving a memory through the benchmark: the same calls for emem_graph and for eMEM.

emem_graph is a drop-in for eMEM's ``SpatioTemporalMemory``, so one ingest loop and one set of
tool calls serve both; a ``Subject`` says only how to open each memory, how to bring it to a
settled state after the adds, and how to consolidate its last episode.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.evals.bench.workload import (
    AREA_RADIUS,
    BODY_LAYER,
    INTEROCEPTION,
    OBJECTS,
    QUERIES,
    RECENT_MINUTES,
    SPATIAL_RADIUS,
    PatrolWorkload,
)
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.retrieval.schemas import CORE_TOOLS

TOOLS = CORE_TOOLS
"""The ten retrieval tools the bench times, in API.md's order."""
AREA_SEARCH = "semantic_search_area"
"""semantic_search with the 1% area prefilter (near_x, near_y, spatial_radius)."""
_NUMBERED = re.compile(r"^\d+\. ", re.MULTILINE)


class SimClock:
    """The robot's clock: follows the patrol while it is written, then stays at its end."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Subject:
    """A memory under test, with what differs between implementations.

    Attributes:
        name: shown in the report ("emem_graph", "eMEM 0.3.0").
        directory: where the memory lives (its disk use is measured there).
        open: opens (or reopens) the memory; the result has eMEM's facade methods.
        settle: after the last add, brings everything to disk and indexed (timed with ingest).
        consolidate: ends the active episode with consolidation and waits for it.
        quiesce: waits for the work the memory does beside its callers (background writes,
            index builds) to finish: ingest_side_by_side() calls it before turning to another
            memory, so that work is neither left out of this memory's time nor run in another's.
    """

    name: str
    directory: Path
    open: Callable[[], Any]
    settle: Callable[[Any], None]
    consolidate: Callable[[Any], None]
    quiesce: Callable[[Any], None] = lambda memory: None


def emem_graph_subject(
    directory: Path,
    embedder: EmbeddingProvider,
    clock: SimClock,
    batch_size: int,
    *,
    extract: bool = True,
) -> Subject:
    """emem_graph with its defaults, except: one flush per ``batch_size`` adds (not on the
    timer) and no background maintenance (eMEM has none), so the figures are repeatable. With
    ``extract=False`` no entities are extracted from the observations (what eMEM does without
    an LLM); add_entity() still merges the workload's sightings."""
    quiet = {"entity_extraction": False}
    config = MemoryConfig(
        db_path=str(directory),
        embedding_dim=embedder.dim,
        flush_batch_size=batch_size,
        flush_interval=1e9,
        maintenance_interval=None,
        **({} if extract else quiet),
    )

    def settle(memory: SpatioTemporalMemory) -> None:
        memory.flush()
        if extract:
            memory.extract_entities()
        memory.store.vectors.compact()  # merge fragments, index the last rows

    def quiesce(memory: SpatioTemporalMemory) -> None:
        memory.flush()  # the writer's batch in flight, and the rest of the buffer
        memory.store.vectors.wait_for_index()  # an ANN build on its own thread

    return Subject(
        name="emem_graph" if extract else "emem_graph, no extraction",
        directory=directory,
        open=lambda: SpatioTemporalMemory(
            config=config, embedding_provider=embedder, get_current_time=clock
        ),
        settle=settle,
        consolidate=lambda memory: memory.end_episode(consolidate=True, wait=True),
        quiesce=quiesce,
    )


STRETCH = 10_000
"""Observations written into one memory before ingest_side_by_side() turns to the next (after
quiescing it): long enough that a memory's own overlap of adds and background writes is kept,
short enough that the memories share the machine's slower and faster spells."""


def ingest(
    memory: Any,
    work: PatrolWorkload,
    clock: SimClock,
    settle: Callable[[Any], None],
    *,
    vectors_given: bool = True,
    progress: bool = False,
    desc: str = "ingest",
) -> dict[str, float]:
    """Write the patrol through the facade: one episode per lap, add() with the given vector
    (or none, letting the memory embed), add_body_state() for battery readings, add_entity()
    for the sightings; then ``settle``. The last lap's episode is left active.

    Returns:
        {"seconds", "obs_per_s"} of the whole, settle included; "adds_s" and "settle_s" split
        the seconds into the add() loop and the settling.
    """
    return ingest_side_by_side(
        [(memory, settle, None)],
        work,
        clock,
        vectors_given=vectors_given,
        progress=progress,
        desc=desc,
        stretch=1000,  # one memory, no turns: stretches only pace the progress bar
    )[0]


def ingest_side_by_side(
    memories: Sequence[tuple[Any, Callable[[Any], None], Callable[[Any], None] | None]],
    work: PatrolWorkload,
    clock: SimClock,
    *,
    vectors_given: bool = True,
    progress: bool = False,
    desc: str = "ingest",
    stretch: int = STRETCH,
) -> list[dict[str, float]]:
    """ingest() into several memories (each with its ``settle`` and ``quiesce``, see Subject)
    at once: ``stretch`` observations into the first, which is then quiesced, the same into the
    next, and so on, then the next stretch; each memory's time is its own calls' time (its
    quiescing included), so their rates are measured under the same load of the machine.
    Then each memory is settled, in turn. A single memory is written straight through."""
    n = len(work)
    writers = [_PatrolWriter(memory, work, clock, vectors_given) for memory, _, _ in memories]
    bar = tqdm(total=n, desc=desc, unit="obs", disable=not progress, leave=False)
    try:
        for start in range(0, n, stretch):
            stop = min(n, start + stretch)
            for writer, (memory, _, quiesce) in zip(writers, memories, strict=True):
                writer.write(start, stop)
                if len(writers) > 1 and quiesce is not None:
                    started = time.perf_counter()
                    quiesce(memory)
                    writer.seconds += time.perf_counter() - started
            bar.update(stop - start)
        bar.set_description(f"{desc} (settling)")
        rates = []
        for writer, (memory, settle, _) in zip(writers, memories, strict=True):
            started = time.perf_counter()
            settle(memory)
            settle_s = time.perf_counter() - started
            seconds = writer.seconds + settle_s
            rates.append(
                {
                    "seconds": seconds,
                    "adds_s": writer.seconds,
                    "settle_s": settle_s,
                    "obs_per_s": n / seconds if seconds > 0 else 0.0,
                }
            )
    finally:
        bar.close()
    return rates


def ingest_beside(
    memory: Any,
    work: PatrolWorkload,
    clock: SimClock,
    settle: Callable[[Any], None],
    other: Callable[[int, int], object],
    *,
    vectors_given: bool = False,
    stretch: int = 1000,
) -> tuple[float, float]:
    """ingest() a stretch at a time, each stretch flushed, with ``other(start, stop)`` timed
    before it (the embedder alone on the same texts): both see the same load of the machine.

    Returns:
        (seconds of the memory's calls, settling included; seconds of ``other``).
    """
    writer = _PatrolWriter(memory, work, clock, vectors_given)
    other_s = 0.0
    for start in range(0, len(work), stretch):
        stop = min(len(work), start + stretch)
        started = time.perf_counter()
        other(start, stop)
        other_s += time.perf_counter() - started
        writer.write(start, stop)
        started = time.perf_counter()
        memory.flush()
        writer.seconds += time.perf_counter() - started
    started = time.perf_counter()
    settle(memory)
    return writer.seconds + time.perf_counter() - started, other_s


class _PatrolWriter:
    """Writes a patrol into one memory a stretch of observations at a time (ingest())."""

    def __init__(self, memory: Any, work: PatrolWorkload, clock: SimClock, vectors_given: bool):
        self.memory = memory
        self.work = work
        self.clock = clock
        self.vectors_given = vectors_given
        self.seconds = 0.0
        """Time spent in this memory's calls so far."""
        self._xs, self._ys, self._ts = work.x.tolist(), work.y.tolist(), work.t.tolist()
        self._laps = work.lap.tolist()
        self._sightings = dict(zip(work.entity_rows.tolist(), work.entity_names, strict=True))
        self._lap = -1

    def write(self, start: int, stop: int) -> None:
        """Write observations ``start`` to ``stop`` - 1."""
        memory, work, clock = self.memory, self.work, self.clock
        xs, ys, ts = self._xs, self._ys, self._ts
        started = time.perf_counter()
        for i in range(start, stop):
            clock.now = ts[i]
            if self._laps[i] != self._lap:
                if self._lap >= 0:
                    memory.end_episode(consolidate=False)
                self._lap = self._laps[i]
                memory.start_episode(f"patrol lap {self._lap}")
            add_observation(memory, work, i, xs[i], ys[i], ts[i], vectors_given=self.vectors_given)
            name = self._sightings.get(i)
            if name is not None:
                memory.add_entity(name, xs[i], ys[i], timestamp=ts[i], entity_type="object")
        self.seconds += time.perf_counter() - started


def add_observation(
    memory: Any,
    work: PatrolWorkload,
    i: int,
    x: float,
    y: float,
    t: float,
    *,
    vectors_given: bool,
) -> None:
    """Add the patrol's observation ``i`` at (x, y) and time t: body state through
    add_body_state(), perception through add() (with its vector when ``vectors_given``)."""
    if work.source_types[i] == INTEROCEPTION:
        memory.add_body_state(work.texts[i], BODY_LAYER, x=x, y=y, timestamp=t)
        return
    memory.add(
        work.texts[i],
        x,
        y,
        timestamp=t,
        layer_name=work.layers[i],
        source_type=work.source_types[i],
        embedding=work.vectors[i] if vectors_given else None,
    )


def tool_calls(memory: Any, work: PatrolWorkload) -> dict[str, Callable[[int], str]]:
    """Each tool (and the area-prefiltered search) as a function of the query index."""
    points = work.query_points

    def query(i: int) -> str:
        return QUERIES[i % len(QUERIES)]

    def point(i: int) -> tuple[float, float]:
        x, y = points[i % len(points)]
        return float(x), float(y)

    def area_search(i: int) -> str:
        x, y = point(i)
        return str(memory.semantic_search(query(i), near_x=x, near_y=y, spatial_radius=AREA_RADIUS))

    return {
        "semantic_search": lambda i: memory.semantic_search(query(i)),
        "spatial_query": lambda i: memory.spatial_query(*point(i), radius=SPATIAL_RADIUS),
        "temporal_query": lambda i: memory.temporal_query(last_n_minutes=RECENT_MINUTES),
        "episode_summary": lambda i: memory.episode_summary(),
        "get_current_context": lambda i: memory.get_current_context(),
        "search_gists": lambda i: memory.search_gists(query(i)),
        "entity_query": lambda i: memory.entity_query(name=OBJECTS[i % len(OBJECTS)]),
        "locate": lambda i: memory.locate(query(i)),
        "recall": lambda i: memory.recall(query(i)),
        "body_status": lambda i: memory.body_status(),
        AREA_SEARCH: area_search,
    }


def result_count(answer: object) -> int:
    """How many results an answer holds: numbered lines of a tool's text, or its length."""
    if isinstance(answer, str):
        return len(_NUMBERED.findall(answer))
    return len(answer)  # type: ignore[arg-type]


def latencies(
    runs: Sequence[Callable[[int], object]], repeats: int, bar: tqdm[Any] | None = None
) -> list[tuple[list[float], list[object]]]:
    """Milliseconds of ``repeats`` calls of each run (after one warm-up call each) and their
    answers. Several runs are called in turn, query by query (run 1 with query 1, run 2 with
    query 1, run 1 with query 2, ...), so a slower spell of the machine falls on all alike."""
    for run in runs:
        run(0)  # warm caches and connections
    measured: list[tuple[list[float], list[object]]] = [([], []) for _ in runs]
    for i in range(1, repeats + 1):
        for run, (times, answers) in zip(runs, measured, strict=True):
            started = time.perf_counter()
            answers.append(run(i))
            times.append((time.perf_counter() - started) * 1000.0)
            if bar is not None:
                bar.update(1)
    return measured


def percentiles(times_ms: list[float]) -> dict[str, float]:
    """p50 and p95 of a list of milliseconds."""
    p50, p95 = np.percentile(np.asarray(times_ms), [50, 95])
    return {"p50_ms": float(p50), "p95_ms": float(p95)}


def measure_tools(
    calls: Mapping[str, Callable[[int], object]], repeats: int, bar: tqdm[Any] | None = None
) -> dict[str, dict[str, float]]:
    """p50/p95 of each call; for the two semantic searches also the mean result count."""
    return measure_side_by_side([calls], repeats, bar)[0]


def measure_side_by_side(
    sides: Sequence[Mapping[str, Callable[[int], object]]],
    repeats: int,
    bar: tqdm[Any] | None = None,
    *,
    by_tool: bool = False,
) -> list[dict[str, dict[str, float]]]:
    """measure_tools() for several memories at once (the same tools on each), so that their
    latencies are compared under the same load of the machine: each tool's calls alternate
    between the memories call by call (two sizes of emem_graph), or, ``by_tool``, each tool
    is called ``repeats`` times on one memory, then on the next, before the next tool
    (different libraries: calls of one between calls of the other would evict each other's
    caches, which a robot running one of them does not see)."""
    measured: list[dict[str, dict[str, float]]] = [{} for _ in sides]
    for name in sides[0]:
        runs = [side[name] for side in sides]
        timed = (
            [latencies([run], repeats, bar)[0] for run in runs]
            if by_tool
            else latencies(runs, repeats, bar)
        )
        for row_of, (times, answers) in zip(measured, timed, strict=True):
            row = percentiles(times)
            if name in ("semantic_search", AREA_SEARCH):
                row["results"] = float(np.mean([result_count(a) for a in answers]))
            row_of[name] = row
    return measured


def reopen(subject: Subject) -> tuple[float, Any]:
    """Seconds to open the (closed) memory and answer a first semantic search; the memory."""
    start = time.perf_counter()
    memory = subject.open()
    memory.semantic_search(QUERIES[0])
    return time.perf_counter() - start, memory
