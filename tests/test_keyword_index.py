"""The in-process keyword index: BM25 as the textbook defines it, the same scores whatever the
order texts were added in, removal, and the normalisation of words."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emem_graph.storage import keyword_index
from emem_graph.storage.keyword_index import K1, B, KeywordIndex, bm25, stem, terms

VOCABULARY = ["cup", "cups", "red", "kettle", "boiling", "boiled", "shelf", "two", "2", "the"]
QUERY = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4).map(" ".join)


def texts_of(most: int) -> st.SearchStrategy[list[str]]:
    """Lists of 1 to ``most`` texts of up to 8 vocabulary words."""
    text = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=8).map(" ".join)
    return st.lists(text, min_size=1, max_size=most)


def reference_bm25(texts: list[str], query: str) -> dict[int, tuple[float, float]]:
    """Okapi BM25 and IDF coverage written out term by term from the definition."""
    docs = [Counter(terms(t)) for t in texts]
    n = len(docs)
    average = max(sum(sum(d.values()) for d in docs) / n, 1.0)
    wanted = list(dict.fromkeys(terms(query)))
    idf = {}
    for term in wanted:
        frequency = sum(1 for d in docs if term in d)
        idf[term] = math.log(1 + (n - frequency + 0.5) / (frequency + 0.5))
    total = sum(idf.values())
    found = {}
    for row, d in enumerate(docs):
        held = [t for t in wanted if t in d]
        if not held:
            continue
        length = sum(d.values())
        score = sum(
            idf[t] * d[t] * (K1 + 1) / (d[t] + K1 * (1 - B + B * length / average)) for t in held
        )
        found[row] = (score, sum(idf[t] for t in held) / total)
    return found


def assert_scores_as_defined(index: KeywordIndex, texts: list[str], query: str) -> None:
    """The index's BM25 rows, scores and coverage of ``query`` equal reference_bm25's."""
    expected = reference_bm25(texts, query)
    (found,) = bm25([index], terms(query))
    assert set(found.rows.tolist()) == set(expected)
    for row, score, covered in zip(found.rows, found.scores, found.coverage, strict=True):
        want_score, want_coverage = expected[int(row)]
        assert math.isclose(score, want_score, rel_tol=1e-5, abs_tol=1e-9)
        assert math.isclose(covered, want_coverage, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=150, deadline=None)
@given(texts=texts_of(25), query=QUERY, seed=st.integers(0, 1000))
def test_bm25_matches_the_definition_whatever_the_order_of_adding(texts, query, seed) -> None:
    order = np.random.default_rng(seed).permutation(len(texts))
    index = KeywordIndex()
    half = len(order) // 2
    for chunk in (order[:half], order[half:]):  # added in two batches, shuffled
        index.add([int(r) for r in chunk], [texts[int(r)] for r in chunk])
    assert_scores_as_defined(index, texts, query)


def test_two_indexes_are_scored_as_one_collection_and_removed_rows_leave_it() -> None:
    texts = ["red cup on the shelf", "kettle", "red kettle", "cup of tea", "blue shelf"]
    one = KeywordIndex()
    one.add(range(5), texts)
    split_a, split_b = KeywordIndex(), KeywordIndex()
    split_a.add(range(3), texts[:3])
    split_b.add(range(2), texts[3:])
    (whole,) = bm25([one], terms("red cup"))
    part_a, part_b = bm25([split_a, split_b], terms("red cup"))
    together = dict(zip(whole.rows.tolist(), whole.scores.tolist(), strict=True))
    assert dict(zip(part_a.rows.tolist(), part_a.scores.tolist(), strict=True)) == {
        r: s for r, s in together.items() if r < 3
    }
    assert dict(zip((part_b.rows + 3).tolist(), part_b.scores.tolist(), strict=True)) == {
        r: s for r, s in together.items() if r >= 3
    }
    one.remove([0])
    (after,) = bm25([one], terms("red cup"))
    assert 0 not in after.rows.tolist() and one.docs == 4
    expected = reference_bm25(texts[1:], "red cup")
    got = {int(r) - 1: s for r, s in zip(after.rows, after.scores, strict=True)}
    assert got.keys() == expected.keys()
    for row, (score, _coverage) in expected.items():
        assert math.isclose(got[row], score, rel_tol=1e-5)


def test_words_are_normalised_so_that_inflections_meet() -> None:
    assert stem("watering") == stem("watered") == stem("waters") == stem("water")
    assert stem("running") == "run" and stem("boxes") == stem("box")
    assert stem("batteries") == stem("battery")
    assert terms("Anna's TWO mugs, don't!") == ["anna", "2", "mug", "dont"]
    assert terms("the and of") == []
    assert terms("") == []


def test_terms_keep_short_words_only_and_answer_alike() -> None:
    """Terms are kept per word (an index of 20k observations built 2-3x faster), but only
    words of up to CACHED_WORD_CHARS characters: hostile texts of long unique words do not
    grow the cache, and a long word's term is the same kept or not."""
    long_words = [f"{i:04d}" + "watering" * 8 for i in range(50)]
    before = len(keyword_index._TERMS_OF_WORDS)
    found = terms(" ".join(long_words) + " the plants")
    assert len(keyword_index._TERMS_OF_WORDS) - before <= 2  # the, plants
    assert found == [stem(w) for w in long_words] + ["plant"]
    assert terms("Watering the plants") == terms("watering the plants") == ["water", "plant"]


def test_the_kept_terms_stop_growing_at_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Endless new short words (a hostile stream) fill the kept terms up to CACHED_WORDS and
    no further; words past the bound get the same terms, kept or not."""
    kept: dict[str, str | None] = {}
    monkeypatch.setattr(keyword_index, "_TERMS_OF_WORDS", kept)
    monkeypatch.setattr(keyword_index, "CACHED_WORDS", 100)
    new_words = [f"w{i}ing" for i in range(300)]
    assert terms(" ".join(new_words)) == [stem(w) for w in new_words]
    assert len(kept) == 100
    assert terms(" ".join(new_words[::-1]) + " the two") == [stem(w) for w in new_words[::-1]] + [
        "2"
    ]
    assert len(kept) == 100 and "the" not in kept


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.lists(st.sampled_from(VOCABULARY), max_size=6)),
            st.tuples(st.just("remove"), st.integers(0, 30)),
            st.tuples(st.just("ask"), st.sampled_from(VOCABULARY)),
        ),
        max_size=40,
    )
)
def test_document_frequency_kept_between_writes_equals_a_count(steps) -> None:
    """document_frequency() keeps its answers until a text holding the term is added or a
    text is removed: asked between any adds and removes, it equals a count of the live texts
    holding the term (what search_gists' statistics read for the observations), also for an
    index that keeps its postings by distinct text only (the observations')."""
    for by_row in (True, False):
        _document_frequency_equals_a_count(steps, KeywordIndex(by_row=by_row))


def _document_frequency_equals_a_count(steps: list[tuple[str, Any]], index: KeywordIndex) -> None:
    live: dict[int, set[str]] = {}
    row = 0
    for kind, value in steps:
        if kind == "add":
            text = " ".join(value)
            index.add([row], [text])
            live[row] = set(terms(text))
            row += 1
        elif kind == "remove":
            index.remove([value])
            live.pop(value, None)
        for word in VOCABULARY:
            for term in terms(word):
                assert index.document_frequency(term) == sum(term in t for t in live.values())


@settings(max_examples=80, deadline=None)
@given(texts=texts_of(40), query=QUERY, slice_rows=st.integers(1, 9), memo_texts=st.integers(0, 5))
def test_a_catch_up_in_slices_sharing_a_memo_scores_as_one_add(
    texts, query, slice_rows, memo_texts
) -> None:
    """The observation index catches its keyword index up in slices that share the texts'
    term counts (ObservationIndex.keywords): the same scores as one add of every text, also
    when the memo is full and later texts are counted again."""
    index = KeywordIndex()
    memo: dict[str, Counter[str]] = {}
    kept = keyword_index.MEMO_TEXTS
    keyword_index.MEMO_TEXTS = memo_texts
    try:
        for first in range(0, len(texts), slice_rows):
            rows = range(first, min(len(texts), first + slice_rows))
            index.add(rows, [texts[r] for r in rows], memo=memo)
    finally:
        keyword_index.MEMO_TEXTS = kept
    assert len(memo) <= memo_texts
    assert_scores_as_defined(index, texts, query)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 300), unique=True, max_size=120),  # one term's postings
        min_size=1,
        max_size=5,
    ),
    st.integers(0, 2**32 - 1),
)
def test_the_dense_and_the_sorted_sums_by_row_are_the_same_bits(
    postings: list[list[int]], seed: int
) -> None:
    """bm25 sums each row's term scores either into an array over every row number (many
    postings: a 1M memory's common words) or after sorting the rows (few): the rows, the
    scores and the coverage must come out identical, bit for bit, whichever path is taken."""
    rng = np.random.default_rng(seed)
    rows = np.array([r for term in postings for r in term], dtype=np.int64)
    scores = rng.random(rows.shape[0]) * rng.choice([1e-3, 1.0, 1e3], size=rows.shape[0])
    weights = np.repeat(rng.random(len(postings)), [len(term) for term in postings])
    dense = keyword_index.summed_by_row(rows, scores, weights, dense=True)
    sorted_ = keyword_index.summed_by_row(rows, scores, weights, dense=False)
    for a, b in zip(dense, sorted_, strict=True):
        assert a.dtype == b.dtype
        assert a.tobytes() == b.tobytes()
    assert dense[0].tolist() == sorted(set(rows.tolist()))


_TEXTS = [
    "red chair",
    "red chair near door",
    "blue cup",
    "the cup on the red table",
    "door door door",
    "",
    "chair",
    "two red chairs and a cup",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(_TEXTS),
        min_size=1,
        max_size=60,
    ),
    st.lists(st.integers(0, 59), max_size=15),
    st.sampled_from([["red"], ["chair", "cup"], ["door", "red", "cup"], ["nothing"]]),
    st.integers(1, 4),
)
def test_scoring_by_distinct_text_gives_every_row_its_own_bits(
    texts: list[str], removed: list[int], words: list[str], slices: int
) -> None:
    """bm25 with by_text scores each distinct text once; expanded to its live rows
    (rows_of_texts), every row must have exactly the score and coverage the row-by-row BM25
    gives it, through adds in several calls and removals, beside a second index."""
    index, other = KeywordIndex(), KeywordIndex()
    other.add([0, 1], ["a red chair in the hall", "cup"])
    rows = list(range(len(texts)))
    step = max(1, len(rows) // slices)
    for first in range(0, len(rows), step):
        index.add(rows[first : first + step], texts[first : first + step])
    index.remove([r for r in removed if r < len(texts)])
    query = [t for word in words for t in terms(word)]
    by_row, _ = bm25([index, other], query)
    by_text, _ = bm25([index, other], query, by_text=(True, False))
    expanded_rows, owner = index.rows_of_texts(by_text.rows.tolist())
    order = np.argsort(expanded_rows)
    assert expanded_rows[order].tolist() == by_row.rows.tolist()
    assert by_text.scores[owner][order].tobytes() == by_row.scores.tobytes()
    assert by_text.coverage[owner][order].tobytes() == by_row.coverage.tobytes()
    # The observations' index keeps no postings by row: the same bits by text, and the same
    # collection statistics when it is only counted (search_gists scores the other index).
    text_only = KeywordIndex(by_row=False)
    for first in range(0, len(rows), step):
        text_only.add(rows[first : first + step], texts[first : first + step])
    text_only.remove([r for r in removed if r < len(texts)])
    alone, _ = bm25([text_only, other], query, by_text=(True, False))
    assert alone.rows.tolist() == by_text.rows.tolist()
    assert alone.scores.tobytes() == by_text.scores.tobytes()
    assert alone.coverage.tobytes() == by_text.coverage.tobytes()
    _, counted = bm25([index, other], query, scored=(False, True))
    _, counted_alone = bm25([text_only, other], query, scored=(False, True))
    assert counted_alone.rows.tolist() == counted.rows.tolist()
    assert counted_alone.scores.tobytes() == counted.scores.tobytes()
    with pytest.raises(RuntimeError, match="by text only"):
        text_only.postings("red")
