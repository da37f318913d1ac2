"""`emem-graph bench` end to end at small N: every figure beside its baseline, as a table and as
JSON, and the eMEM comparison (no timing assertions: machines differ)."""

from __future__ import annotations

import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emem_graph.cli import main
from emem_graph.evals.bench import TOOLS, patrol_workload
from emem_graph.evals.bench.compare import emem_version
from emem_graph.evals.bench.drive import (
    SimClock,
    Subject,
    emem_graph_subject,
    ingest_side_by_side,
    measure_side_by_side,
)
from emem_graph.evals.bench.report import SECTIONS, Figure, previous_run, table
from emem_graph.evals.bench.workload import BODY_LAYER, LAYERS, PERIOD
from emem_graph.explore.stats import memory_stats
from emem_graph.ingest.embeddings import HashingEmbedder

FIGURES = (
    ["ingest, no entity extraction", "ingest, with entity extraction"]
    + [f"{tool} {p}" for tool in TOOLS for p in ("p50", "p95")]
    + [
        "semantic_search, 1% area p50",
        "semantic_search, 1% area p95",
        "results, no filter",
        "results, 1% area",
        "reopen + first query",
        "disk",
    ]
)


def _bench(tmp_path: Path, *options: str) -> list[str]:
    return ["-q", "bench", "--n", "1000", "--queries", "2", "--out", str(tmp_path / "b"), *options]


def test_bench_prints_every_figure_beside_its_baseline_as_a_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, "--n", "2000")) == 0
    out, err = capsys.readouterr()
    assert "2,000 observations" in out
    rows = {line.split("  ")[0].strip(): line for line in out.splitlines()}
    for name in FIGURES:
        cells = rows[name].split()
        assert cells[-1].endswith("x"), rows[name]  # the ratio ours / baseline
    assert "\r" not in err  # -q: no progress bars
    assert not (tmp_path / "b").exists()  # scratch databases removed without --keep


def test_bench_json_has_every_section_with_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, "--json", "--keep")) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 1000 and result["queries"] == 2
    assert list(result["sections"]) == list(SECTIONS)
    figures = {f["name"]: f for rows in result["sections"].values() for f in rows}
    assert list(figures) == FIGURES
    for figure in figures.values():
        assert figure["ours"] > 0 and figure["baseline"] > 0 and figure["ratio"] > 0, figure
        assert "emem" not in figure
    # A prefilter, not a post-filter: all 10 results come back from a 1% area.
    assert figures["results, 1% area"]["ours"] == 10.0
    assert figures["results, 1% area"]["target_met"] is True
    assert {"ours", "floor", "raw"} <= {p.name for p in (tmp_path / "b").iterdir()}


def test_patrol_has_five_layers_and_one_observation_every_0_4_s() -> None:
    work = patrol_workload(3000)
    assert sorted(set(work.layers)) == sorted(LAYERS) and len(LAYERS) == 5
    assert np.allclose(np.diff(work.t), PERIOD)
    assert work.layers.count(BODY_LAYER) == 150 and work.body.sum() == 150
    assert set(work.lap.tolist()) == {0, 1}  # a lap is 2,700 observations
    assert np.allclose(np.linalg.norm(work.vectors, axis=1), 1.0, atol=1e-5)
    assert len(work.entity_rows) == len(work.entity_names) == 30
    assert work.x.min() > -1 and work.x.max() < 101 and work.y.min() > -1 and work.y.max() < 101
    again = patrol_workload(3000)
    assert again.texts == work.texts and np.array_equal(again.vectors, work.vectors)


def test_compare_emem_without_emem_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "emem", None)  # import emem raises ImportError
    assert main(_bench(tmp_path, "--compare", "emem")) == 2
    err = capsys.readouterr().err
    assert "--compare emem needs eMEM" in err and "pip install 'emem==0.3.0'" in err


@pytest.mark.skipif(
    emem_version() is None,
    reason="eMEM is not installed (optional: pip install 'emem-graph[compare]'; it compiles "
    "hnswlib, so it is not in the dev extra)",
)
def test_compare_emem_gives_a_ratio_to_emem_for_every_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, "--compare", "emem", "--json")) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["emem"].startswith("eMEM ")
    figures = [f for rows in result["sections"].values() for f in rows]
    assert [f["name"] for f in figures] == FIGURES
    for figure in figures:
        assert figure["emem"] > 0 and figure["vs_emem"] > 0, figure
    targets = {f["name"]: f["target"] for f in figures if "target" in f}
    # eMEM extracts no entities without an LLM: the ingest target compares like with like.
    assert "ingest, with entity extraction" not in targets
    assert targets["ingest, no entity extraction"] == ">= 3x"
    assert targets["recall p50"] == "<= 0.05x"


def test_scale_from_prints_each_figure_against_the_smaller_run_and_checks_p50_latencies() -> None:
    setup = {
        "n": 1_000_000,
        "workload": "w",
        "dim": 384,
        "queries": 5,
        "baselines": {"queries": "numpy"},
        "extract_n": 20_000,
    }
    figures = [
        Figure("tools", "semantic_search p50", "ms", 30.0, 5.0),
        Figure("tools", "recall p50", "ms", 15.0, 5.0),
        Figure("tools", "recall p95", "ms", 90.0, 5.0),
        Figure("disk", "disk", "MB", 2_000.0, 1_500.0),
    ]
    smaller = {
        "n": 100_000,
        "sections": {
            "tools": [
                {"name": "semantic_search p50", "ours": 10.0},
                {"name": "recall p50", "ours": 10.0},
                {"name": "recall p95", "ours": 10.0},
            ],
            "disk": [{"name": "disk", "ours": 200.0}],
        },
    }
    lines = table(setup, figures, previous_run(smaller)).splitlines()
    assert "vs 100,000 = emem_graph here / emem_graph at 100,000 observations" in lines[3]
    rows = {line.split("  ")[0].strip(): line.split() for line in lines if "  " in line}
    assert rows["semantic_search p50"][-2:] == ["3.00x", "MISS"]
    assert rows["recall p50"][-2:] == ["1.50x", "ok"]
    assert rows["recall p95"][-1] == "9.00x"  # p95 and disk: shown, not judged
    assert rows["disk"][-1] == "10.0x"
    with pytest.raises(ValueError, match="emem-graph bench --json"):
        previous_run({"n": 5})


def test_scale_from_a_file_that_is_not_bench_json_is_a_clear_error(tmp_path: Path) -> None:
    wrong = tmp_path / "run.json"
    wrong.write_text('{"rows": []}')
    with pytest.raises(SystemExit, match=r"--scale-from .*run\.json: not the JSON of"):
        main(_bench(tmp_path, "--scale-from", str(wrong)))


def test_scale_with_times_each_tool_on_a_smaller_memory_written_in_the_same_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, "--n", "2000", "--scale-with", "700", "--json", "--keep")) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["scale"]["n"] == 700
    # The smaller memory is a patrol of its own, written beside the larger one.
    assert memory_stats(tmp_path / "b" / "scale").nodes["Observation"] == 700
    assert memory_stats(tmp_path / "b" / "ours").nodes["Observation"] == 2000
    figures = {f["name"]: f for rows in result["sections"].values() for f in rows}
    latency = [name for name in FIGURES if figures[name]["unit"] == "ms"]
    assert len(latency) == 2 * len(TOOLS) + 2 and set(result["scale"]["ours"]) == set(latency)
    for name in latency:
        smaller = result["scale"]["ours"][name]
        scaling = figures[name]["scaling"]
        assert smaller > 0 and scaling["n"] == 700
        assert scaling["ratio"] == pytest.approx(figures[name]["ours"] / smaller, rel=2e-3)
        assert scaling["met"] is ((scaling["ratio"] <= 2.0) if name.endswith("p50") else None)
    for name in set(FIGURES) - set(latency):  # ingest, counts, reopen, disk: not measured twice
        assert "scaling" not in figures[name]

    assert main(_bench(tmp_path, "--n", "2000", "--scale-with", "700")) == 0
    out = capsys.readouterr().out
    assert "vs 700 = emem_graph here / emem_graph at 700 observations (measured in this run" in out
    rows = {line.split("  ")[0].strip(): line.split() for line in out.splitlines()}
    assert rows["recall p50"][-1] in ("ok", "MISS") and rows["recall p95"][-1].endswith("x")


def test_scale_with_needs_a_smaller_patrol_and_excludes_scale_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, "--scale-with", "1000")) == 2
    assert "--scale-with 1000: the smaller patrol needs 1 to 999 observations" in (
        capsys.readouterr().err
    )
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"n": 10, "sections": {}}))
    with pytest.raises(SystemExit, match="--scale-from and --scale-with exclude each other"):
        main(_bench(tmp_path, "--scale-with", "500", "--scale-from", str(run)))
    assert not (tmp_path / "b").exists()


def _logged_tools(
    label: str, calls: list[tuple[str, str, int]]
) -> dict[str, Callable[[int], object]]:
    """Two tools that log (label, tool, query index) in ``calls`` and answer two results."""

    def tool(name: str) -> Callable[[int], object]:
        def call(i: int) -> str:
            calls.append((label, name, i))
            return "1. a\n2. b"

        return call

    return {name: tool(name) for name in ("semantic_search", "recall")}


def test_side_by_side_timing_alternates_between_the_memories_call_by_call() -> None:
    calls: list[tuple[str, str, int]] = []
    sides = [_logged_tools(label, calls) for label in ("large", "small")]
    large, small = measure_side_by_side(sides, repeats=3)
    warm = [("large", "semantic_search", 0), ("small", "semantic_search", 0)]
    turns = [(label, "semantic_search", i) for i in (1, 2, 3) for label in ("large", "small")]
    assert calls[:8] == warm + turns
    assert [c[1] for c in calls[8:]] == ["recall"] * 8
    assert set(large) == set(small) == {"semantic_search", "recall"}
    assert large["semantic_search"]["results"] == small["semantic_search"]["results"] == 2.0


class _Recorded:
    """A real memory whose add() and add_body_state() calls are logged under a label."""

    def __init__(self, memory: Any, label: str, log: list[str]) -> None:
        self._memory, self._label, self._log = memory, label, log

    def add(self, *args: Any, **kwargs: Any) -> Any:
        self._log.append(self._label)
        return self._memory.add(*args, **kwargs)

    def add_body_state(self, *args: Any, **kwargs: Any) -> Any:
        self._log.append(self._label)
        return self._memory.add_body_state(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)


def test_side_by_side_ingest_writes_each_memory_a_stretch_at_a_time(tmp_path: Path) -> None:
    stretch = 1000
    work = patrol_workload(2 * stretch + 500)
    clock = SimClock(work.t[0])
    subjects = [
        emem_graph_subject(tmp_path / name, HashingEmbedder(384), clock, 5000, extract=False)
        for name in ("a", "b")
    ]
    log: list[str] = []
    memories = [s.open() for s in subjects]

    def quiesce(subject: Subject) -> Callable[[Any], None]:
        def wait(memory: Any) -> None:
            log.append(f"quiesce {subject.directory.name}")
            subject.quiesce(memory)
            # Quiesced: everything added so far is in the graph and in LanceDB (read from the
            # store itself: the facade's .store would flush first).
            counts = memory._store.counts()
            assert counts["observations"] == log.count(subject.directory.name)
            assert counts["pending_vectors"] == 0

        return wait

    try:
        rates = ingest_side_by_side(
            [
                (_Recorded(m, s.directory.name, log), s.settle, quiesce(s))
                for m, s in zip(memories, subjects, strict=True)
            ],
            work,
            clock,
            stretch=stretch,
        )
    finally:
        for memory in memories:
            memory.close()
    runs = [(label, len(list(group))) for label, group in itertools.groupby(log)]
    half = len(work) - 2 * stretch
    turn = [("a", stretch), ("quiesce a", 1), ("b", stretch), ("quiesce b", 1)]
    assert runs == turn * 2 + [("a", half), ("quiesce a", 1), ("b", half), ("quiesce b", 1)]
    for subject, rate in zip(subjects, rates, strict=True):
        assert memory_stats(subject.directory).nodes["Observation"] == len(work)
        assert rate["seconds"] == pytest.approx(rate["adds_s"] + rate["settle_s"])
        assert rate["obs_per_s"] == pytest.approx(len(work) / rate["seconds"])


def test_side_by_side_timing_by_tool_calls_each_memory_in_a_block() -> None:
    calls: list[tuple[str, str, int]] = []
    sides = [_logged_tools(label, calls) for label in ("ours", "eMEM")]
    measure_side_by_side(sides, repeats=2, by_tool=True)
    assert calls == [
        (label, name, i)
        for name in ("semantic_search", "recall")
        for label in ("ours", "eMEM")
        for i in (0, 1, 2)
    ]


class _CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(384)
        self.asked: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.asked.extend(texts)
        return super().embed(texts)


def test_the_model_row_is_ingest_against_the_embedder_alone_on_distinct_texts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--model: the memory embeds every text of the run itself (distinct texts: no cache
    hits), against the embedder alone on the same texts, with its 0.9x goal."""
    from emem_graph.evals.bench.run import _measure_model

    work = patrol_workload(1500)
    assert len(set(work.texts)) < len(work.texts)  # the patrol repeats itself
    model = _CountingEmbedder()
    floor = {"seconds": 0.01, "obs_per_s": 150_000.0}
    row = _measure_model(work, model, 1200, floor, tmp_path / "m", SimClock(0.0), 500)
    assert model.asked[0] == "a warm-up sentence, not timed"
    # Each of the 1,200 texts, made distinct, is embedded twice: by the embedder alone and by
    # the memory (which also embeds the names of the patrol's entity sightings).
    counts = Counter(model.asked)
    sighted = [text for text in counts if "(sighting " in text]
    assert len(sighted) == 1200 and all(counts[text] == 2 for text in sighted)
    assert row["n"] == 1200 and row["obs_per_s"] > 0 and row["embed_only_obs_per_s"] > 0

    assert main(_bench(tmp_path, "--json", "--model", "hashing", "--model-n", "400")) == 0
    figures = {
        f["name"]: f for rows in json.loads(capsys.readouterr().out)["sections"].values()
        for f in rows
    }  # fmt: skip
    figure = figures["ingest, embedding with hashing-384 (distinct texts)"]
    assert figure["target"] == ">= 0.9x baseline" and isinstance(figure["target_met"], bool)
    assert figure["ratio"] == pytest.approx(figure["ours"] / figure["baseline"], rel=1e-3)


def test_a_model_n_below_one_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_bench(tmp_path, "--model", "hashing", "--model-n", "-5")) == 2
    err = capsys.readouterr().err
    assert "--model-n -5: give at least 1 observation" in err and "Traceback" not in err
