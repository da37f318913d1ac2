"""The long-history dialogue evaluation: its data set and a quick run end to end."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from emem_graph.evals import dialogue
from emem_graph.evals.dialogue import BM25, build_dialogue, parse_results, shared_run


@pytest.fixture(scope="module")
def full() -> dialogue.Dialogue:
    return build_dialogue()


def test_full_set_is_large_and_consistent(full: dialogue.Dialogue) -> None:
    assert len(full.turns) >= 2000
    assert len(full.questions) >= 200
    assert full.days == 14
    texts = [t.text for t in full.turns]
    assert len(set(texts)) == len(texts)  # results are matched back to turns by text
    assert all(t.text.startswith(("user: ", "robot: ")) for t in full.turns)
    assert [t.id for t in full.turns] == list(range(len(full.turns)))
    times = [t.time for t in full.turns]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert full.now > times[-1]
    assert times[-1] - times[0] > 13 * 86400  # about two weeks
    assert len(full.sessions) >= 4 * 14  # several conversations a day
    speakers = Counter(t.text.split(":")[0] for t in full.turns)
    assert speakers["user"] > 800 and speakers["robot"] > 800
    assert len({t.room for t in full.turns}) >= 4  # the robot talks in several rooms


def test_questions_point_at_turns_and_paraphrase(full: dialogue.Dialogue) -> None:
    ids = {t.id for t in full.turns}
    kinds = Counter(q.kind for q in full.questions)
    assert kinds["time"] >= 80 and kinds["other"] >= 30
    assert sum(len(q.evidence) == 2 for q in full.questions) >= 20
    assert len({q.text for q in full.questions}) == len(full.questions)
    for q in full.questions:
        assert 1 <= len(q.evidence) <= 2
        assert set(q.evidence) <= ids
        for e in q.evidence:
            evidence = full.turns[e].text
            assert not shared_run(q.text, evidence), (q.text, evidence)
            assert q.text.lower() not in evidence.lower()


def test_distractors_share_the_topics(full: dialogue.Dialogue) -> None:
    """Every day has a shopping-list request (only some are asked about): the words of a
    shopping question match turns of many days, only its day tells them apart."""
    shopping = [q for q in full.questions if q.family == "shopping"]
    assert len(shopping) >= 5
    assert len({full.turns[q.evidence[0]].session for q in shopping}) == len(shopping)
    phrases = ("shopping list", "supermarket", "trip to the shop")
    requests = [t for t in full.turns if t.text.startswith("user:") and any(
        p in t.text for p in phrases
    )]  # fmt: skip
    days = {int((t.time - full.turns[0].time + 8 * 3600) // 86400) for t in requests}
    assert len(days) >= 12
    lunches = [q for q in full.questions if q.family == "lunch"]
    lunch_turns = [t for t in full.turns if "lunch" in t.text.lower()]
    assert lunches and len(lunch_turns) >= 14


def test_reproducible_from_the_seed(full: dialogue.Dialogue) -> None:
    again = build_dialogue()
    assert again == full
    other = build_dialogue(seed=dialogue.SEED + 1)
    assert [t.text for t in other.turns] != [t.text for t in full.turns]


def test_copy_check_and_bm25() -> None:
    assert shared_run("where are the spare keys now", "user: I moved the spare keys now")
    assert not shared_run("where are the backup house keys", "user: I moved the spare keys")
    index = BM25(["user: the red chair", "user: a blue chair by the door", "robot: hello there"])
    assert index.rank("red chair", 3) == [0, 1]
    assert index.rank("nothing matches", 3) == []


def test_parse_results_maps_lines_to_turns() -> None:
    turns = {"user: hello there": 3, "robot: it's 5 degrees": 7}
    text = (
        "1. [dialogue] (1.0,2.0) [2026-03-02 07:40:00] user: hello there\n"
        "2. [gist/dialogue] (1.0,2.0) [30 obs] a conversation\n"
        "3. [entity/object] (1.0,2.0) [seen 2x] chair\n"
        "4. [dialogue] (1.0,2.0) [2026-03-02 07:41:00] robot: it's 5 degrees\n"
        "5. [dialogue] (1.0,2.0) [2026-03-02 07:42:00] user: not stored"
    )
    assert parse_results(text, turns) == [
        ("turn", 3), ("gist", None), ("entity", None), ("turn", 7), ("other", None)
    ]  # fmt: skip


def test_quick_run_end_to_end(minilm: Any) -> None:
    result = dialogue.run(minilm, quick=True)
    assert 300 <= result["turns"] <= 500
    assert 35 <= result["questions"] <= 80
    assert result["gists_stored"] > 0  # the conversations were consolidated
    assert set(result["rankers"]) == set(dialogue.RANKERS)
    for name, figures in result["rankers"].items():
        for key in ("evidence_in_top5", "all_evidence_in_top10"):
            assert 0.0 <= figures[key] <= 1.0, (name, key)
        assert 0.0 <= figures["gist_slots_in_top10"] <= dialogue.TOP
        assert figures["p50_latency_ms"] > 0
        assert 0 <= figures["answers_changed_on_repeat"] <= result["questions"]
        assert figures["questions"] == result["questions"]
        split = figures["by_type"]
        assert split["time"]["questions"] + split["other"]["questions"] == result["questions"]
    # the memory's rankers find evidence for a real share of the questions (not chance: a
    # random pick of 5 of ~400 turns would find one for about 1 question in 80)
    assert result["rankers"]["hybrid"]["evidence_in_top5"] > 0.3
    assert result["rankers"]["dense"]["evidence_in_top5"] > 0.3
    assert result["rankers"]["bm25"]["gist_slots_in_top10"] == 0.0  # BM25 ranks turns only
    # the per-question ranks agree with the figures
    detail = result["per_question"]
    assert len(detail) == result["questions"]
    for name in dialogue.RANKERS:
        ranks = [d["ranks"][name] for d in detail]
        assert all(r is None or 1 <= r <= dialogue.TOP for rs in ranks for r in rs)
        top5 = sum(any(r is not None and r <= 5 for r in rs) for rs in ranks) / len(ranks)
        assert top5 == pytest.approx(result["rankers"][name]["evidence_in_top5"])
        gists = sum(d["gist_slots"][name] for d in detail) / len(detail)
        assert gists == pytest.approx(result["rankers"][name]["gist_slots_in_top10"])
    lines = dialogue.describe(result)
    assert any(line.startswith("| hybrid |") for line in lines)
    assert any("| bm25 | time |" in line for line in lines)
