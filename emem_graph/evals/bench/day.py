"""A robot's day (``emem-graph bench --day``): the patrol written into one memory the way a
robot writes it, the memory open throughout, and what the process looks like along the day.

The memory has the default configuration (only its directory and graph engine are chosen). One
``add()`` per observation at the rate the memory accepts, with the patrol's vector given, or
none (``embedder="model"``: the memory embeds with its own sentence-transformers provider); the
battery readings through ``add_body_state()`` and the patrol's entity sightings through
``add_entity()``; an episode ended every EPISODE_EVERY observations without waiting for its
consolidation (``end_episode(wait=False)``) and the next one started; a tool call every
TOOL_EVERY observations, turning through every tool. SAMPLES times along the run it samples
the slice's ingest rate, the resident memory and the open descriptors (footprint.py); after
the last add, every tool again while the memory may still consolidate and compact, what was
consolidated, then the close and the descriptors left after it; the WARNING records logged
throughout. When eMEM is installed, the same day goes into it for the ingest rate ratio.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.errors import BackendUnavailableError, InvalidInputError
from emem_graph.evals.bench.compare import INSTALL_HINT, emem_subject, emem_version
from emem_graph.evals.bench.drive import SimClock, add_observation, tool_calls
from emem_graph.evals.bench.footprint import Footprint, check_available, footprint
from emem_graph.evals.bench.workload import (
    START,
    PatrolWorkload,
    patrol_workload,
)
from emem_graph.ingest.embeddings import EmbeddingProvider, HashingEmbedder
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.outputs import claim_directory, record_entries, remove_recorded
from emem_graph.storage.graph_engine import resolve_engine

COMMAND = "bench-day"
"""The name the output directory's marker records (outputs.py)."""
SCRATCH = ("memory", "emem")
EPISODE_EVERY = 500
TOOL_EVERY = 50
SAMPLES = 20
"""Samples of the process along the run (one every 5% of it)."""
WARM_UP = 5_000
"""Observations before the growth of memory and descriptors is measured (a shorter run: its
first quarter)."""
START_SHARE = 0.1
"""The share of the run whose tool calls give the latencies "at the start"."""
END_ROUNDS = 5
"""Calls of each tool right after the last add (the latencies "at the end")."""
DIM = 384
Embedder = Literal["vectors", "model"]
EMBEDDERS: tuple[Embedder, ...] = ("vectors", "model")


@dataclass(frozen=True)
class Sample:
    """The process after ``observations`` adds, and the rates since the previous sample:
    ``obs_per_s`` over the writing calls only (what the memory accepts), ``day_obs_per_s``
    over the whole loop (its tool calls included: a call may wait for the writes before it)."""

    observations: int
    obs_per_s: float
    day_obs_per_s: float
    footprint: Footprint


@dataclass(frozen=True)
class ToolCall:
    """One timed tool call, made after ``observations`` adds."""

    observations: int
    tool: str
    ms: float


@dataclass
class DayLog:
    """One memory's day.

    Attributes:
        samples: the process along the run.
        calls: the tool calls made between the adds.
        write_s: seconds inside the writing calls (add, add_body_state, add_entity and the
            episodes' ends and starts): the time the memory took to accept the day.
        wall_s: seconds of the whole loop, tool calls and samples included.
    """

    samples: list[Sample]
    calls: list[ToolCall]
    write_s: float
    wall_s: float

    @property
    def observations(self) -> int:
        return self.samples[-1].observations if self.samples else 0

    @property
    def obs_per_s(self) -> float:
        """Observations accepted per second of the writing calls, over the whole run."""
        return self.observations / self.write_s if self.write_s > 0 else 0.0

    @property
    def day_obs_per_s(self) -> float:
        """Observations per second of the whole loop, tool calls included."""
        return self.observations / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class DayResult:
    """What a day measured (day_report.py turns it into figures, a table and JSON).

    Attributes:
        n: observations.
        engine: the graph engine the memory ran on.
        embedder: "vectors" (given) or "model" (the memory's own).
        directory: where the memory was kept (None: removed).
        open_s: seconds to open the memory (the model loaded, with "model").
        before_open: the process before the memory opened (the workload built).
        day: emem_graph's day.
        end_calls: the tool calls right after the last add.
        counts_at_end: node counts right after the last add (store.counts()).
        close_s: seconds of close() (the last flush and the queued consolidation included).
        after_close: the process right after close().
        counts_after_close: node counts of the closed memory, reopened read-only.
        warnings: WARNING (and higher) records logged from open to close, by level and logger.
        emem: eMEM's day (None without eMEM).
        emem_note: eMEM's name and version, or why it was not run.
    """

    n: int
    engine: str
    embedder: Embedder
    directory: Path | None
    open_s: float
    before_open: Footprint
    day: DayLog
    end_calls: list[ToolCall]
    counts_at_end: dict[str, int]
    close_s: float
    after_close: Footprint
    counts_after_close: dict[str, int]
    warnings: dict[str, dict[str, int]]
    emem: DayLog | None
    emem_note: str

    @property
    def warm_up(self) -> int:
        """Observations before growth is measured: WARM_UP, or a quarter of a shorter run."""
        return min(WARM_UP, self.n // 4)


def run_day(
    n: int,
    out_dir: Path | str | None = None,
    *,
    engine: str | None = None,
    embedder: Embedder = "vectors",
    compare: bool | None = None,
    keep: bool = False,
    progress: bool = False,
    seed: int = 0,
) -> DayResult:
    """Write a day of ``n`` patrol observations into a memory of the default configuration.

    Args:
        n: observations.
        out_dir: where the memories go (its memory/ and emem/ replaced); None: a new temporary
            directory.
        engine: the graph engine ("ladybug" or "kuzu"); None: the configuration's default.
        embedder: "vectors": the patrol's vectors given (hashing, no model); "model": text
            only, embedded by the memory's sentence-transformers provider (all-MiniLM-L6-v2).
        compare: also write the day into eMEM: None when it is installed, True always (an
            error without it), False never.
        keep: leave the memories in the directory (reported in ``directory``).
        progress: show a progress bar.
        seed: workload seed.

    Raises:
        InvalidInputError: n below 1, an unknown engine or embedder.
        BackendUnavailableError: no /proc/self (not Linux), the model cannot be loaded, or
            ``compare`` is True and eMEM is not installed.
    """
    if n < 1:
        raise InvalidInputError(f"--observations {n}: give at least 1 observation")
    if embedder not in EMBEDDERS:
        raise InvalidInputError(f"unknown embedder {embedder!r}: use one of {EMBEDDERS}")
    check_available()
    engine = resolve_engine(engine)
    version = emem_version()
    if compare and version is None:
        raise BackendUnavailableError(f"--compare emem needs eMEM, not installed: {INSTALL_HINT}")
    with_emem = version is not None and compare is not False
    out = Path(tempfile.mkdtemp(prefix="emem-graph-day-") if out_dir is None else out_dir)
    # The day deletes its scratch memories only in a directory it created (or an empty one).
    claim_directory(out, COMMAND, replace=True)
    record_entries(out, COMMAND, SCRATCH)
    try:
        result = _run(n, out, engine, embedder, with_emem, progress, seed)
    finally:
        if not keep:
            remove_recorded(out, COMMAND)
    result.directory = out if keep else None
    result.emem_note = (
        f"eMEM {version}"
        if with_emem
        else f"eMEM is not installed: no eMEM column ({INSTALL_HINT})"
        if version is None
        else "eMEM not run"
    )
    return result


def _run(
    n: int,
    out: Path,
    engine: str,
    embedder: Embedder,
    with_emem: bool,
    progress: bool,
    seed: int,
) -> DayResult:
    given = embedder == "vectors"
    # With the model the patrol's vectors go unused: an 8-d hashing keeps them small in RAM.
    work = patrol_workload(n, embedder=HashingEmbedder(DIM if given else 8), seed=seed)
    config = MemoryConfig(db_path=str(out / "memory"), graph_engine=engine)
    clock = SimClock(START)
    if not given:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the packaged model, never a download
    before = footprint()
    with counting_warnings() as warnings:
        started = time.perf_counter()
        memory = SpatioTemporalMemory(
            config=config,
            embedding_provider=HashingEmbedder(DIM) if given else None,
            get_current_time=clock,
        )
        open_s = time.perf_counter() - started
        provider = memory.embedder
        try:
            calls = tool_calls(memory, work)
            day = write_day(
                memory,
                work,
                clock,
                calls,
                vectors_given=given,
                end_episode=lambda m: m.end_episode(wait=False),
                progress=progress,
                desc="day",
            )
            end_calls = _call_each(calls, END_ROUNDS, day.observations, len(day.calls))
            counts_at_end = memory.store.counts()
        finally:
            started = time.perf_counter()
            memory.close()
            close_s = time.perf_counter() - started
        after = footprint()
        with SpatioTemporalMemory(
            config=config, embedding_provider=provider, get_current_time=clock, read_only=True
        ) as closed:
            counts_after = closed.store.counts()
    emem = None
    if with_emem:
        emem = _emem_day(work, out / "emem", provider, given, progress)
    return DayResult(
        n=n,
        engine=engine,
        embedder=embedder,
        directory=None,
        open_s=open_s,
        before_open=before,
        day=day,
        end_calls=end_calls,
        counts_at_end=counts_at_end,
        close_s=close_s,
        after_close=after,
        counts_after_close=counts_after,
        warnings=warnings.by_level(),
        emem=emem,
        emem_note="",
    )


def _emem_day(
    work: PatrolWorkload,
    directory: Path,
    embedder: EmbeddingProvider,
    vectors_given: bool,
    progress: bool,
) -> DayLog:
    """The same day written into eMEM with its default flushing (its end_episode()
    consolidates before it returns: it has no other way)."""
    clock = SimClock(START)
    memory = emem_subject(directory, embedder, clock, None).open()
    try:
        return write_day(
            memory,
            work,
            clock,
            tool_calls(memory, work),
            vectors_given=vectors_given,
            end_episode=lambda m: m.end_episode(),
            progress=progress,
            desc="eMEM day",
        )
    finally:
        memory.close()


def write_day(
    memory: Any,
    work: PatrolWorkload,
    clock: SimClock,
    calls: Mapping[str, Callable[[int], object]],
    *,
    vectors_given: bool,
    end_episode: Callable[[Any], object],
    progress: bool = False,
    desc: str = "day",
) -> DayLog:
    """Write the patrol into ``memory`` one call per observation (the module docstring), with a
    tool call every TOOL_EVERY and a sample of the process every SAMPLES-th of the run; the
    last episode is ended too (timed with the writes, after the last sample)."""
    n = len(work)
    every = max(1, n // SAMPLES)
    xs, ys, ts = work.x.tolist(), work.y.tolist(), work.t.tolist()
    sightings = dict(zip(work.entity_rows.tolist(), work.entity_names, strict=True))
    names = list(calls)
    samples: list[Sample] = []
    made: list[ToolCall] = []
    write_s = 0.0
    bar = tqdm(total=n, desc=desc, unit="obs", disable=not progress, leave=False)
    began = time.perf_counter()
    sampled_at, sampled_s, sampled_wall = 0, 0.0, began
    try:
        for i in range(n):
            clock.now = ts[i]
            started = time.perf_counter()
            if i % EPISODE_EVERY == 0:
                if i:
                    end_episode(memory)
                memory.start_episode(f"patrol, stretch {i // EPISODE_EVERY}")
            add_observation(memory, work, i, xs[i], ys[i], ts[i], vectors_given=vectors_given)
            name = sightings.get(i)
            if name is not None:
                memory.add_entity(name, xs[i], ys[i], timestamp=ts[i], entity_type="object")
            write_s += time.perf_counter() - started
            done = i + 1
            if done % TOOL_EVERY == 0:
                tool = names[len(made) % len(names)]
                made += _call_each({tool: calls[tool]}, 1, done, len(made))
            if done % every == 0 or done == n:
                now = time.perf_counter()
                samples.append(
                    Sample(
                        done,
                        _rate(done - sampled_at, write_s - sampled_s),
                        _rate(done - sampled_at, now - sampled_wall),
                        footprint(),
                    )
                )
                sampled_at, sampled_s, sampled_wall = done, write_s, now
                bar.update(done - bar.n)
        started = time.perf_counter()
        end_episode(memory)  # the day's last stretch, as the robot ends it
        write_s += time.perf_counter() - started
    finally:
        bar.close()
    return DayLog(samples, made, write_s, time.perf_counter() - began)


def _rate(observations: int, seconds: float) -> float:
    return observations / seconds if seconds > 0 else 0.0


def _call_each(
    calls: Mapping[str, Callable[[int], object]], rounds: int, observations: int, first: int
) -> list[ToolCall]:
    """Each call ``rounds`` times in turn, timed; query indices from ``first`` on."""
    made: list[ToolCall] = []
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            call(first + len(made))
            made.append(ToolCall(observations, name, (time.perf_counter() - started) * 1000.0))
    return made


class WarningCounter(logging.Handler):
    """Counts the WARNING (and higher) records that reach the root logger, by logger."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[tuple[str, str]] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[(record.levelname, record.name)] += 1

    def by_level(self) -> dict[str, dict[str, int]]:
        """{level: {logger: records}}."""
        levels: dict[str, dict[str, int]] = {}
        for (level, logger), count in sorted(self.counts.items()):
            levels.setdefault(level, {})[logger] = count
        return levels


@contextmanager
def counting_warnings() -> Iterator[WarningCounter]:
    """A WarningCounter on the root logger while the block runs."""
    counter = WarningCounter()
    root = logging.getLogger()
    root.addHandler(counter)
    try:
        yield counter
    finally:
        root.removeHandler(counter)
