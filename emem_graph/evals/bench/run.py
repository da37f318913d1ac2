"""One benchmark run: build the patrol, measure emem_graph, the baselines and (optionally)
eMEM on it, and turn the measurements into figures."""

from __future__ import annotations

import dataclasses
import gc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from emem_graph.errors import InvalidInputError
from emem_graph.evals.bench.baseline import (
    directory_bytes,
    exact_answers,
    measure_floor,
    reopen_raw,
    single_threaded_blas,
)
from emem_graph.evals.bench.baseline import save_raw as save_raw_columns
from emem_graph.evals.bench.compare import emem_subject
from emem_graph.evals.bench.drive import (
    AREA_SEARCH,
    TOOLS,
    SimClock,
    Subject,
    emem_graph_subject,
    ingest,
    ingest_beside,
    ingest_side_by_side,
    measure_side_by_side,
    measure_tools,
    reopen,
    tool_calls,
)
from emem_graph.evals.bench.report import Figure, Target
from emem_graph.evals.bench.workload import (
    AREA_RADIUS,
    QUERIES,
    START,
    PatrolWorkload,
    patrol_workload,
)
from emem_graph.ingest.embeddings import EmbeddingProvider, HashingEmbedder
from emem_graph.outputs import claim_directory, record_entries, remove_recorded

SCRATCH = ("raw", "floor", "ours", "store", "emem", "model", "scale")
WORKLOAD = "5 layers incl. body state, one observation every 0.4 s"
BASELINES = {
    "ingest": "one Arrow COPY into Kuzu + one LanceDB add",
    "queries": "exact NumPy (cosine top-k, masks for area and time)",
    "disk and reopen": "the raw arrays (numpy.save, load + one exact search)",
}
STORE_ONLY = "ingest, no entity extraction"
MODEL_INGEST_SHARE = 0.9
"""Ingest letting the memory embed (--model) keeps at least this share of the embedder's own
throughput on the same texts (the goal: the memory adds little cost around the model)."""
EXTRACTING = "ingest, with entity extraction"
"""Measured on the first ``extract_n`` observations only (setup["extract_n"])."""
TARGETS = {
    # eMEM extracts no entities without an LLM: its ingest compares with ours without them.
    STORE_ONLY: Target(">=", 3.0),
    "semantic_search p50": Target("<=", 1.0),
    "spatial_query p50": Target("<=", 1.0),
    "temporal_query p50": Target("<=", 10.0),
    "recall p50": Target("<=", 0.05),
    "results, 1% area": Target(">=", 10.0, of="ours"),
    "reopen + first query": Target("<=", 0.5),
    "disk": Target("<=", 1.0),
}
"""Goals against eMEM 0.3.0 (ratios emem_graph / eMEM, or an absolute count)."""


@dataclass
class BenchResult:
    """What a run measured: the setup (what, how much, which baselines) and the figures."""

    setup: dict[str, Any]
    figures: list[Figure]


def run_bench(
    n: int,
    out_dir: Path | str,
    *,
    repeats: int = 20,
    batch_size: int = 1000,
    model: EmbeddingProvider | None = None,
    model_n: int | None = None,
    compare: str | None = None,
    keep: bool = False,
    progress: bool = False,
    seed: int = 0,
    extract_n: int = 20_000,
    scale_n: int | None = None,
) -> BenchResult:
    """Run the benchmark on a patrol of ``n`` observations.

    Args:
        n: observations.
        out_dir: scratch directory; the memories go to its sub-directories ours/, emem/,
            floor/, raw/ and model/ (replaced, and removed at the end unless ``keep``).
        repeats: timed calls per tool (after one warm-up call).
        batch_size: adds between two flushes, for emem_graph and eMEM alike.
        model: also ingest ``model_n`` observations letting emem_graph embed them with this
            embedder, against the embedder alone plus the floor.
        compare: "emem" to drive eMEM through the same workload.
        keep: leave the databases in ``out_dir``.
        progress: show progress bars.
        seed: workload seed.
        extract_n: observations of the ingest measured with entity extraction on.
        scale_n: also write a patrol of this many observations (fewer than ``n``) to a second
            memory and time every tool on both memories in turn, call by call: the ratios of
            the latencies at ``n`` to those at ``scale_n`` (setup["scale"]) are then measured
            under the same load of the machine, which two separate runs are not.

    Raises:
        InvalidInputError: n, repeats, batch_size or ``model_n`` below 1, ``scale_n`` not
            between 1 and n - 1, or an unknown ``compare``.
        BackendUnavailableError: ``compare="emem"`` and eMEM is not installed.
    """
    if n < 1 or repeats < 1 or batch_size < 1 or extract_n < 1:
        raise InvalidInputError("n, queries, batch size and extract-n must be at least 1")
    if model_n is not None and model_n < 1:
        raise InvalidInputError(f"--model-n {model_n}: give at least 1 observation")
    if scale_n is not None and not 1 <= scale_n < n:
        raise InvalidInputError(
            f"--scale-with {scale_n}: the smaller patrol needs 1 to {n - 1:,} observations "
            f"(fewer than --n {n:,})"
        )
    if compare not in (None, "emem"):
        raise InvalidInputError(f"unknown --compare {compare!r}: the one choice is 'emem'")
    out = Path(out_dir)
    embedder = HashingEmbedder(384)
    clock = SimClock(START)
    # The tools, disk and reopen are measured on a memory without text extraction, as eMEM
    # (which extracts no entities without an LLM) keeps them; extraction's own ingest rate is
    # measured on the first ``extract_n`` observations (it is far slower, see the README).
    subjects = [emem_graph_subject(out / "ours", embedder, clock, batch_size, extract=False)]
    if compare == "emem":
        subjects.append(emem_subject(out / "emem", embedder, clock, batch_size))
    # Bench deletes its scratch subdirectories: only in a directory it created (or an empty
    # one), never inside a memory or in someone else's directory (outputs.py).
    claim_directory(out, "bench", replace=True)
    record_entries(out, "bench", SCRATCH)
    try:
        work = patrol_workload(n, embedder=embedder, queries=repeats + 1, progress=progress)
        raw_bytes = save_raw_columns(work, out / "raw")
        raw_reopen_s = reopen_raw(out / "raw", embedder.embed([QUERIES[0]])[0])
        floor = measure_floor(work, out / "floor")
        smaller = None
        if scale_n is not None:
            small_clock = SimClock(START)
            smaller = _Smaller(
                small_clock,
                emem_graph_subject(out / "scale", embedder, small_clock, batch_size, extract=False),
                patrol_workload(scale_n, embedder=embedder, queries=repeats + 1),
            )
        measured = _measure(subjects, work, clock, repeats, progress, smaller)
        m_extract = min(n, extract_n)
        extracting = _ingest_only(
            emem_graph_subject(out / "store", embedder, clock, batch_size, extract=True),
            work.head(m_extract),
            clock,
            progress,
        )
        exact = _measure_exact(work, embedder, repeats, progress)
        model_row = (
            _measure_model(work, model, model_n, floor, out / "model", clock, batch_size)
            if model is not None
            else None
        )
    finally:
        if not keep:
            remove_recorded(out, "bench")
    setup: dict[str, Any] = {
        "n": n,
        "dim": embedder.dim,
        "queries": repeats,
        "batch_size": batch_size,
        "workload": WORKLOAD,
        "baselines": dict(BASELINES),
        "area_radius_m": round(AREA_RADIUS, 2),
        "extract_n": m_extract,
        "details": {
            "floor": {k: round(v, 4) for k, v in floor.items()},
            **{m["name"]: m["details"] for m in measured},
        },
    }
    ours, emem = measured[0], measured[1] if len(measured) > 1 else None
    if smaller is not None:
        setup["scale"] = {"n": scale_n, "ours": _tool_figures(ours["smaller_tools"])}
    if emem is not None:
        setup["emem"] = emem["name"]
    if model_row is not None:
        setup["details"]["model"] = model_row
    baseline = {
        "ingest": floor["obs_per_s"],
        "tools": exact,
        "reopen_s": raw_reopen_s,
        "disk_bytes": raw_bytes,
    }
    figures = _figures(ours, baseline, emem)
    figures.insert(
        1,
        Figure(
            "ingest",
            EXTRACTING,
            "obs/s",
            extracting,
            floor["obs_per_s"],
            None if emem is None else float(emem["ingest"]),
        ),
    )
    if model_row is not None:
        figures.insert(
            1,
            Figure(
                "ingest",
                f"ingest, embedding with {model_row['embedder']} (distinct texts)",
                "obs/s",
                model_row["obs_per_s"],
                model_row["embed_only_obs_per_s"],
                target=Target(">=", MODEL_INGEST_SHARE, of="baseline"),
            ),
        )
    return BenchResult(setup, figures)


@dataclass
class _Smaller:
    """The smaller memory of a run with ``scale_n``: its clock, subject and patrol."""

    clock: SimClock
    subject: Subject
    work: PatrolWorkload


def _measure(
    subjects: list[Subject],
    work: PatrolWorkload,
    clock: SimClock,
    repeats: int,
    progress: bool,
    smaller: _Smaller | None = None,
) -> list[dict[str, Any]]:
    """Ingest, consolidate the last lap, time the tools, close, measure disk and reopen, for
    each subject (emem_graph, and eMEM with --compare) side by side, so a slower spell of the
    machine weighs on all of them alike: the patrol goes into their memories a stretch at a
    time, in turn (ingest_side_by_side), and each tool is timed on each memory in turn
    (measure_side_by_side: tool by tool with eMEM, call by call without). With ``smaller``
    (--scale-with), that memory is written and consolidated too, after these, and its tools
    are timed in the same turns ("smaller_tools" in the first subject's result)."""
    clock.now = START
    memories: list[Any] = []
    small = None
    try:
        for subject in subjects:
            memories.append(subject.open())
        written = ingest_side_by_side(
            [(m, s.settle, s.quiesce) for m, s in zip(memories, subjects, strict=True)],
            work,
            clock,
            progress=progress,
            desc="ingest " + " + ".join(s.name for s in subjects),
        )
        consolidate_s = []
        for memory, subject in zip(memories, subjects, strict=True):
            started = time.perf_counter()
            subject.consolidate(memory)
            consolidate_s.append(time.perf_counter() - started)
        clock.now = work.now
        if smaller is not None:
            small = _written(smaller, progress)
        sides = [tool_calls(m, work) for m in memories]
        if small is not None and smaller is not None:
            sides.append(tool_calls(small, smaller.work))
        # The ingest's garbage is collected before the timed calls, for every subject alike:
        # otherwise a full collection over it may land inside one of them.
        gc.collect()
        with _bar(11 * repeats * len(sides), "tools", progress) as bar:
            tools = measure_side_by_side(sides, repeats, bar, by_tool=len(subjects) > 1)
    finally:
        for memory in memories:
            memory.close()
        if small is not None:
            small.close()
    results = []
    for at, subject in enumerate(subjects):
        disk = directory_bytes(subject.directory)
        reopen_s, memory = reopen(subject)
        memory.close()
        results.append(
            {
                "name": subject.name,
                "ingest": written[at]["obs_per_s"],
                "tools": tools[at],
                "reopen_s": reopen_s,
                "disk_bytes": disk,
                "smaller_tools": tools[-1] if small is not None and at == 0 else None,
                "details": {
                    "ingest_s": round(written[at]["seconds"], 3),
                    "ingest_adds_s": round(written[at]["adds_s"], 3),
                    "ingest_settle_s": round(written[at]["settle_s"], 3),
                    "consolidate_last_lap_s": round(consolidate_s[at], 3),
                },
            }
        )
    return results


def _written(smaller: _Smaller, progress: bool) -> Any:
    """The smaller memory, open, written and consolidated as _measure() leaves its own."""
    subject, clock = smaller.subject, smaller.clock
    clock.now = START
    memory = subject.open()
    try:
        ingest(
            memory, smaller.work, clock, subject.settle, progress=progress, desc="ingest smaller"
        )
        subject.consolidate(memory)
    except BaseException:
        memory.close()
        raise
    clock.now = smaller.work.now
    return memory


def _ingest_only(subject: Subject, work: PatrolWorkload, clock: SimClock, progress: bool) -> float:
    """Observations per second of an ingest alone (the subject's settle included)."""
    clock.now = START
    memory = subject.open()
    try:
        written = ingest(
            memory, work, clock, subject.settle, progress=progress, desc=f"ingest {subject.name}"
        )
    finally:
        memory.close()
    return float(written["obs_per_s"])


def _measure_exact(
    work: PatrolWorkload, embedder: EmbeddingProvider, repeats: int, progress: bool
) -> dict[str, dict[str, float]]:
    """The NumPy baseline of each tool, the faster of one BLAS thread and the default."""
    answers = exact_answers(work, embedder)
    with _bar(2 * 11 * repeats, "tools NumPy", progress) as bar:
        with single_threaded_blas():
            single = measure_tools(answers, repeats, bar)
        default = measure_tools(answers, repeats, bar)
    return {
        name: min(single[name], default[name], key=lambda row: row["p50_ms"]) for name in single
    }


def _measure_model(
    work: PatrolWorkload,
    model: EmbeddingProvider,
    model_n: int | None,
    floor: dict[str, float],
    directory: Path,
    clock: SimClock,
    batch_size: int,
) -> dict[str, Any]:
    """emem_graph embedding the texts itself, against the embedder alone on the same texts
    (and alone plus the floor). The texts are made distinct (the patrol repeats itself, and
    the memory embeds each distinct text once): what the memory adds around the model."""
    m = min(len(work), model_n or len(work))
    sub = dataclasses.replace(
        work.head(m), texts=[f"{text} (sighting {i})" for i, text in enumerate(work.texts[:m])]
    )
    model.embed(["a warm-up sentence, not timed"])  # a model loads on its first call
    subject = emem_graph_subject(directory, model, clock, batch_size, extract=False)
    clock.now = START
    memory = subject.open()
    try:
        memory_s, embed_s = ingest_beside(
            memory,
            sub,
            clock,
            subject.settle,
            lambda start, stop: model.embed(sub.texts[start:stop]),
            stretch=batch_size,
        )
    finally:
        memory.close()
    floor_s = floor["seconds"] * m / len(work)
    return {
        "embedder": getattr(model, "name", type(model).__name__),
        "n": m,
        "obs_per_s": m / memory_s,
        "embed_only_obs_per_s": m / embed_s,
        "embed_plus_floor_obs_per_s": m / (embed_s + floor_s),
    }


TOOL_FIGURES: list[tuple[str, str, tuple[str, ...]]] = [
    *(("tools", f"{tool} {p}", (tool, f"{p}_ms")) for tool in TOOLS for p in ("p50", "p95")),
    ("filtered search", "semantic_search, 1% area p50", (AREA_SEARCH, "p50_ms")),
    ("filtered search", "semantic_search, 1% area p95", (AREA_SEARCH, "p95_ms")),
]
"""The latency figures (section, name, key in measure_tools()' result), in milliseconds."""


def _tool_figures(tools: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each latency figure's name with its milliseconds in ``tools`` (measure_tools())."""
    return {name: float(tools[tool][key]) for _, name, (tool, key) in TOOL_FIGURES}


def _figures(
    ours: dict[str, Any], baseline: dict[str, Any], emem: dict[str, Any] | None
) -> list[Figure]:
    def figure(
        section: str, name: str, unit: str, key: tuple[str, ...], scale: float = 1.0
    ) -> Figure:
        def pick(side: dict[str, Any]) -> float:
            value: Any = side
            for part in key:
                value = value[part]
            return float(value) * scale

        return Figure(
            section,
            name,
            unit,
            pick(ours),
            pick(baseline),
            pick(emem) if emem is not None else None,
            TARGETS.get(name) if emem is not None or name == "results, 1% area" else None,
        )

    latency = [figure(section, name, "ms", ("tools", *key)) for section, name, key in TOOL_FIGURES]
    return [
        figure("ingest", STORE_ONLY, "obs/s", ("ingest",)),
        *latency,
        figure("filtered search", "results, no filter", "of 10",
               ("tools", "semantic_search", "results")),
        figure("filtered search", "results, 1% area", "of 10", ("tools", AREA_SEARCH, "results")),
        figure("reopen", "reopen + first query", "s", ("reopen_s",)),
        figure("disk", "disk", "MB", ("disk_bytes",), 1e-6),
    ]  # fmt: skip


def _bar(total: int, desc: str, progress: bool) -> tqdm[Any]:
    return tqdm(total=total, desc=desc, unit="call", disable=not progress, leave=False)
