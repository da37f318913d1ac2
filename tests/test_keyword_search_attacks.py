"""The in-process keyword side under an outsider's input: any text as a request,
writes racing searches, entities and gists written after the keyword index was first built,
archival. Real memories (Kuzu + LanceDB in tmp_path, all-MiniLM-L6-v2)."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph.filters import perception_filter
from emem_graph.storage.keyword_index import terms

QUIET = {"maintenance_interval": None}

TIME_AND_NOISE = st.sampled_from(
    ["yesterday", "the 31st of February", "the 0th of may", "on sunday", "99 hours ago",
     "Mrs.", "2.5", "\x00", "🦀", "'", "...", "and then", ",", "ＲＥＤ", "ß", "İ"]
)  # fmt: skip


def test_any_text_is_a_request_that_answers_the_same_twice(make_memory) -> None:
    mem = make_memory(**QUIET)
    for i, text in enumerate(["a red cup on the shelf", "the kettle boils", "Mrs. Brown's keys"]):
        mem.add(text, float(i), 0.0)
    mem.flush()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        st.lists(st.one_of(st.text(max_size=40), TIME_AND_NOISE), min_size=1, max_size=6).map(
            " ".join
        )
    )
    def ask(request: str) -> None:
        first = mem.dispatch_tool_call("semantic_search", {"query": request, "n_results": 3})
        again = mem.dispatch_tool_call("semantic_search", {"query": request, "n_results": 3})
        assert first == again
        assert not first.startswith("Error") or "query" in first

    ask()
    huge = "red cup " * 20_000
    assert "red cup" in mem.semantic_search(huge[:9_000], n_results=1)


def test_entities_and_gists_written_after_a_search_are_found_by_their_words(make_memory):
    mem = make_memory(**QUIET)
    mem.add("a plain wall", 0.0, 0.0)
    assert "zebra" not in mem.semantic_search("zebra lamp", n_results=3)  # index built now
    for i in range(5):
        mem.add(f"corridor view {i}", float(i), 0.0)  # appends alone keep the entity copy
    mem.add_entity("zebra striped lamp", 3.0, 3.0, entity_type="object")
    hits = mem.store.keyword("zebra lamp", 3, perception_filter())
    assert [record.name for _hit, record in hits if hasattr(record, "name")] == [
        "zebra striped lamp"
    ]


def test_writes_and_archival_racing_keyword_searches(make_memory) -> None:
    mem = make_memory(**QUIET, flush_batch_size=50)
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        where = perception_filter()
        while not stop.is_set():
            try:
                mem.store.keyword_hits(terms("crate"), 5, where)
            except BaseException as exc:
                errors.append(exc)
                return

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for i in range(400):
            mem.add(f"crate number {i} by the dock", float(i % 20), 0.0)
        mem.flush()
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert errors == []
    found = mem.store.keyword_hits(terms("crates by the dock"), 1000, perception_filter())
    assert len(found) == 400
    some = [hit.id for hit in found[:10]]
    mem.store.index.set_tier(some, "archived")  # archival drops the text from the index
    after = {hit.id for hit in mem.store.keyword_hits(terms("crate"), 1000, None)}
    assert after.isdisjoint(some) and len(after) == 390
