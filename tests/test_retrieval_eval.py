"""retrieval-eval: the hand-written request sets hold together, the BM25 baseline scores as
Okapi BM25 does, and a quick run gives sane figures for the three rankers."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from emem_graph.cli import main
from emem_graph.evals import retrieval_eval
from emem_graph.evals.retrieval_data import NOW, POOLS, WHEN, Request
from emem_graph.evals.retrieval_eval import BM25, ranking_from_text, tokens


def test_sets_are_big_enough() -> None:
    kinds = Counter(r.kind for p in POOLS for r in p.requests)
    assert len(POOLS) >= 20
    assert kinds["single"] >= 300
    assert kinds["shared"] == kinds["single"]
    assert kinds["pair"] >= 60
    assert kinds["timed"] >= 60
    assert set(kinds) == {"single", "shared", "pair", "timed"}
    assert all(15 <= len(p.stored) <= 25 for p in POOLS)
    assert len({p.place for p in POOLS}) == len(POOLS)


def test_every_expected_text_is_stored_once_and_texts_are_unique() -> None:
    everything = [s.text for p in POOLS for s in p.stored]
    assert len(everything) == len(set(everything))
    for pool in POOLS:
        stored = {s.text for s in pool.stored}
        for request in pool.requests:
            assert request.expected, request
            assert all(e in stored for e in request.expected), request
            assert request.text not in stored, request
            assert request.text.strip().lower() not in {t.lower() for t in stored}
        # No stored text contains another: an answer line maps back to one stored text.
        for a in stored:
            assert not any(a != b and a in b for b in stored), a


def test_requests_name_the_right_number_of_memories() -> None:
    for pool in POOLS:
        for request in pool.requests:
            if request.kind == "pair":
                assert len(request.expected) == 2
                assert request.expected[0] != request.expected[1]
            else:
                assert len(request.expected) == 1
        requests = [r.text for r in pool.requests]
        assert len(requests) == len(set(requests)), pool.place


def _overlap(request: Request) -> float:
    words = set(tokens(request.expected[0]))
    return len(words & set(tokens(request.text))) / len(words)


def test_requests_are_paraphrases_not_copies() -> None:
    """A reworded request shares at most half of its memory's distinct words (a fifth on
    average); a word-sharing request shares at least one, and more than the reworded on
    average; each plain memory has one of each."""
    for pool in POOLS:
        reworded = pool.of_kind("single")
        sharing = pool.of_kind("shared")
        assert [r.expected for r in reworded] == [r.expected for r in sharing]
        for request in reworded:
            assert _overlap(request) <= 0.5, request.text
        for request in sharing:
            assert _overlap(request) > 0.0, request.text
    reworded_mean = statistics.mean(_overlap(r) for p in POOLS for r in p.of_kind("single"))
    sharing_mean = statistics.mean(_overlap(r) for p in POOLS for r in p.of_kind("shared"))
    assert reworded_mean < 0.2 < sharing_mean


def test_time_words_decide_between_near_duplicates() -> None:
    """Each time-word request's memory differs in age from the others of its group, and the
    request carries a time word; no plain memory is newer than the oldest timed one's window."""
    time_words = ("yesterday", "morning", "last week", "lunch", "hour ago", "afternoon",
                  "two days ago", "on monday", "last night", "last month", "evening")  # fmt: skip
    ages = set(WHEN.values())
    for pool in POOLS:
        timed = pool.of_kind("timed")
        assert len(timed) >= 3
        by_text = {s.text: s for s in pool.stored}
        group_ages = [by_text[r.expected[0]].age for r in timed]
        assert len(set(group_ages)) == len(group_ages)
        assert set(group_ages) <= ages
        for request in timed:
            assert any(w in request.text.lower() for w in time_words), request.text
        assert all(s.timestamp < NOW for s in pool.stored)


def test_bm25_scores_a_tiny_case_by_hand() -> None:
    docs = ["the red mug", "the blue mug is Anna's", "water the fern"]
    bm25 = BM25(docs)
    # "fern" occurs in one document of three: idf = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)).
    idf = math.log(1 + 2.5 / 1.5)
    avglen = (3 + 6 + 3) / 3  # "Anna's" is two tokens: anna, s
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / avglen)
    expected = idf * 1 * 2.2 / (1 + norm)
    assert bm25.scores("fern") == pytest.approx([0.0, 0.0, expected])
    assert bm25.rank("blue mug")[0] == 1
    assert bm25.rank("red mug")[0] == 0
    assert bm25.rank("nothing matches")[:3] == [0, 1, 2]  # ties: document order
    assert tokens("Anna's MUG, 2nd") == ["anna", "s", "mug", "2nd"]


def test_answer_lines_map_back_to_stored_texts() -> None:
    stored = ["The red mug is for guests.", "The red mug is for guests. Wash it."]
    output = (
        "1. [speech] (1.0,2.0) [2026-03-18 10:00:00] The red mug is for guests. Wash it.\n"
        "2. [gist] kitchen: mugs\n"
        "   continued line\n"
        "3. [speech] (1.0,2.0) [2026-03-17 10:00:00] The red mug is for guests.\n"
    )
    assert ranking_from_text(output, stored) == [stored[1], None, stored[0]]


@pytest.fixture(scope="module")
def quick(minilm: Any) -> dict[str, Any]:
    return retrieval_eval.run(minilm, quick=True)


def test_quick_run_reports_three_rankers_with_sane_figures(quick: dict[str, Any]) -> None:
    assert set(quick["rankers"]) == {"bm25", "dense", "hybrid"}
    n = quick["requests"]
    assert all(n[kind] > 0 for kind in ("single", "shared", "pair", "timed"))
    for name, f in quick["rankers"].items():
        keys = ("alone_r1", "alone_r5", "single_r1", "single_r5", "shared_r1", "shared_r5",
                "pair_both5", "timed_r1", "timed_r5")  # fmt: skip
        for key in keys:
            assert 0.0 <= f[key] <= 1.0, (name, key)
        for kind in ("alone", "single", "shared", "timed"):
            assert f[f"{kind}_r1"] <= f[f"{kind}_r5"], (name, kind)
        assert min(f["single_r1"], f["shared_r1"]) <= f["alone_r1"]
        assert f["alone_r1"] <= max(f["single_r1"], f["shared_r1"])
        assert f["queries"] == sum(n.values())
        assert f["latency_ms_p50"] >= 0.0
    # A random ranking of ~19 memories puts the right one first ~5% of the time.
    for name in ("bm25", "dense", "hybrid"):
        assert quick["rankers"][name]["alone_r1"] > 0.3, name
    for name in ("dense", "hybrid"):
        assert quick["rankers"][name]["alone_r1"] > 0.5, name
        assert quick["rankers"][name]["alone_r5"] > 0.8, name
    # Words shared with the memory are what BM25 can use.
    assert quick["rankers"]["bm25"]["shared_r1"] > quick["rankers"]["bm25"]["single_r1"]
    json.dumps(quick)  # JSON-able


def test_quick_run_checks_determinism(quick: dict[str, Any]) -> None:
    total = sum(quick["requests"].values())
    for name in ("dense", "hybrid"):
        d = quick["determinism"][name]
        assert d["repeat_compared"] == d["reopen_compared"] == total
        assert 0 <= d["repeat_rankings_differed"] <= total


def test_describe_prints_the_table(quick: dict[str, Any]) -> None:
    lines = retrieval_eval.describe(quick)
    table = [line for line in lines if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in table[1:]] == ["bm25", "dense", "hybrid"]
    assert any("determinism (hybrid)" in line for line in lines)


def test_command_rejects_an_unknown_section(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["retrieval-eval", "--only", "nothing"])
    assert "invalid choice" in capsys.readouterr().err


def test_command_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    calls: list[tuple[object, bool, bool]] = []

    def fake_run(embedder: object, *, quick: bool, progress: bool) -> dict[str, Any]:
        calls.append((embedder, quick, progress))
        return quick_result

    quick_result = quick
    monkeypatch.setattr(retrieval_eval, "run", fake_run)
    out = tmp_path / "figures.json"
    assert (
        main(["-q", "retrieval-eval", "--quick", "--embedder", "hashing", "--json", str(out)]) == 0
    )
    assert [(q, p) for _e, q, p in calls] == [(True, False)]
    assert json.loads(out.read_text())["requests"]["rankers"].keys() == quick["rankers"].keys()
    assert "| hybrid |" in capsys.readouterr().out
