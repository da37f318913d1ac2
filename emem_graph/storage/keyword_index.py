"""KeywordIndex: BM25 over stored texts, in process, the same for the same texts every time.

LanceDB's full-text search made rankings differ from run to run: its BM25 statistics depend on
which rows its index covers (rows written after the last indexing are scored apart: the same
query on the same rows gave 3.77 before a reindex and 3.90 after), and rows with equal scores
come back in scan order. The memory's keyword ranking must be a function of the stored texts
and the request only, whatever compaction or indexing is doing in the background, so it is
computed here: an inverted index (term -> rows and term counts) with Okapi BM25 scores, ties
broken by the caller on ids.

Words are normalised (``terms``): lower case, apostrophes dropped ("anna's" -> "anna"), number
words as digits ("two" -> "2"), stop words out and a light suffix stemmer, so that "watering
the plants" matches "water the plant". Memory: about 6 bytes per term occurrence plus the
vocabulary (at 1M observations of ~10 distinct terms: about 60 MB), and 8 bytes a row plus
the term counts of each distinct text for the postings by text (bm25's ``by_text``).
"""

from __future__ import annotations

import math
import re
import threading
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from emem_graph.models import NodeKind

_STOPWORD_LIST = """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just let me
    more most my myself no nor not now of off on once only or other our ours out over own
    please same she should so some such than that the their them then there these they this
    those through to too under until up very was we were what when where which while who whom
    why will with would you your yours find show tell get give remember recall see seen saw
    put place bring take go look"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())
"""Words left out of keyword queries and of the test for a meaningful request part."""

NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        (
            *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
            *("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"),
            *("seventeen", "eighteen", "nineteen", "twenty"),
        )
    )
}
NUMBER_WORDS.update(
    {
        "first": "1",
        "second": "2",
        "third": "3",
        "fourth": "4",
        "fifth": "5",
        "once": "1",
        "twice": "2",
        "thirty": "30",
        "forty": "40",
        "fifty": "50",
        "hundred": "100",
    }
)
_WORD = re.compile(r"[a-z0-9]+")
_APOSTROPHE = re.compile(r"['\u2019]s\b|['\u2019]")
_DOUBLE_KEPT = "lsz"
K1 = 1.2
B = 0.75


def stem(word: str) -> str:
    """A light English suffix stemmer: plural, -ing, -ed, a doubled final consonant and a final
    e go ("watering", "watered", "waters" -> "water"; "running" -> "run"; "uses", "used" ->
    "us"). Not Porter's: what matters is that inflections of one word meet."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _DOUBLE_KEPT + "aeiou":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """The lower-case words of ``text`` (apostrophes and possessive 's dropped)."""
    return _WORD.findall(_APOSTROPHE.sub("", text.lower()))


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in order: words without stop words, number words as
    digits, stemmed."""
    known = _TERMS_OF_WORDS
    found: list[str] = []
    for word in words(text):
        term = known.get(word, _UNKNOWN)
        if term is _UNKNOWN:
            term = _term(word)
            if len(word) <= CACHED_WORD_CHARS and len(known) < CACHED_WORDS:
                known[word] = term
        if term is not None:
            found.append(term)  # type: ignore[arg-type]
    return found


def _term(word: str) -> str | None:
    """The index term of one word (None for a stop word)."""
    if word in STOPWORDS:
        return None
    return NUMBER_WORDS.get(word) or stem(word)


CACHED_WORD_CHARS = 32
CACHED_WORDS = 1 << 16
_TERMS_OF_WORDS: dict[str, str | None] = {}
"""The term of each word seen (None: a stop word), for words of up to CACHED_WORD_CHARS
characters and up to CACHED_WORDS words: a memory's texts repeat a vocabulary of a few
thousand words (building the index of 20k observations took 0.12 s, 0.07 s of it in terms;
0.044 s with a cache behind a function, ~0.02 s with this one), and hostile texts of long or
endless new words cannot grow it past its bound. Read and filled without a lock: one
dictionary operation each, and a word's term is the same whoever fills it."""
_UNKNOWN = object()


@dataclass(frozen=True)
class KeywordHit:
    """A keyword match: the node, its kind, its BM25 score and its coverage of the query."""

    id: str
    kind: NodeKind
    score: float
    coverage: float


class KeywordIndex:
    """An inverted index over texts by row number (rows given by the caller, any order), with
    BM25 scoring. Thread-safe: one writer, many readers.

    Args:
        by_row: keep postings by row as well as by distinct text (``postings``, bm25 with
            ``by_text`` False). An index searched only by text (the observations': a robot
            repeats itself) leaves them out: building the index of a 20k patrol at the first
            search after an open spent most of its time appending rows to them, and they
            held 6 bytes per word occurrence.
    """

    def __init__(self, *, by_row: bool = True) -> None:
        self._lock = threading.Lock()
        self._by_row = by_row
        self._rows: dict[str, array[int]] = {}
        self._counts: dict[str, array[int]] = {}
        self._length = np.zeros(0, dtype=np.float32)
        self._live = np.zeros(0, dtype=bool)
        self._total_length = 0.0
        self._docs = 0
        self._frequency: dict[str, int] = {}
        """document_frequency's answers, until a text holding the term is added or any text
        is removed (search_gists counts 100k observations' postings per query term: 27 us
        a term at 100k)."""
        # The same postings by distinct text (bm25's ``by_text``): a robot repeats itself (a
        # 1M patrol holds ~8,600 distinct texts), and rows of one text score alike.
        self._text_number: dict[str, int] = {}
        self._text_rows: list[array[int]] = []
        self._text_length = np.zeros(0, dtype=np.float32)
        self._text_live = np.zeros(0, dtype=np.int64)
        self._row_text = np.zeros(0, dtype=np.int32)
        self._text_postings: dict[str, array[int]] = {}
        self._text_counts: dict[str, array[int]] = {}
        self._decoded: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        """postings()' answers of short postings (DECODED_ROWS rows at most), until any
        text is added or removed: the gist and entity index is built once per change and
        searched by every question (search_gists decoded its postings per term, per call)."""

    @property
    def docs(self) -> int:
        """Texts indexed and not removed."""
        return self._docs

    @property
    def total_length(self) -> float:
        """Terms over every live text (for the average length)."""
        return self._total_length

    def document_frequency(self, term: str) -> int:
        """How many live texts hold ``term`` (removed rows are counted until rebuilt: the index
        removes by marking, and a removed row's postings stay)."""
        with self._lock:
            known = self._frequency.get(term)
            if known is not None:
                return known
            texts = self._text_postings.get(term)
            if texts is None:
                return 0
            # Each live row of a text holding the term, once: the rows' own postings count.
            found = int(self._text_live[np.frombuffer(texts, dtype=np.uint32)].sum())
            self._frequency[term] = found
            return found

    def add(
        self,
        rows: Sequence[int],
        texts: Sequence[str | None],
        *,
        memo: dict[str, Counter[str]] | None = None,
    ) -> None:
        """Index ``texts`` under ``rows`` (a row already indexed must not be added again).

        ``memo``: term counts of texts tokenised by an earlier call, shared by the calls of
        one catch-up in slices (filled here, up to MEMO_TEXTS texts)."""
        # A robot's texts repeat ("1 chair, 1 cup" patrol after patrol): each distinct text is
        # tokenised once per batch, and its rows go into each of its terms' postings at once
        # (the first keyword search after opening a 20k patrol built the index in ~70 ms,
        # most of it one append per row and term).
        grouped: dict[str, list[int]] = {}
        blank: list[int] = []
        for row, text in zip(rows, texts, strict=True):
            if text:
                grouped.setdefault(text, []).append(row)
            else:
                blank.append(row)
        tokenised = [(text, _counted(text, memo), held) for text, held in grouped.items()]
        with self._lock:
            self._decoded.clear()
            top = max(rows, default=-1) + 1
            if top > self._length.shape[0]:
                size = max(top, 2 * self._length.shape[0], 1024)
                self._length = _grown(self._length, size)
                self._live = _grown(self._live, size)
                self._row_text = _grown(self._row_text, size, fill=-1)
            placed: list[int] = list(blank)
            sizes: list[int] = [0] * len(blank)
            numbers: list[int] = []  # each text's number, for its held rows at once below
            fresh = _FreshPostings()  # the texts first seen here, posted per term at the end
            touched: set[str] = set()
            for text, counts, held in tokenised:
                size = sum(counts.values())
                placed.extend(held)
                sizes.extend([size] * len(held))
                self._total_length += size * len(held)
                numbers.append(self._add_text(text, counts, size, held, fresh))
                touched.update(counts)
                if not self._by_row:
                    continue
                for term, count in counts.items():
                    postings = self._rows.get(term)
                    if postings is None:
                        postings = self._rows[term] = array("I")
                        self._counts[term] = array("H")
                    postings.extend(held)
                    self._counts[term].extend(array("H", [min(count, 65_535)]) * len(held))
            if self._frequency:
                for term in touched:
                    self._frequency.pop(term, None)
            fresh.post(self._text_postings, self._text_counts)
            if numbers:
                # In whole arrays, not per text: NumPy's per-element calls took most of a
                # build (a 20k patrol holds ~6,400 distinct texts).
                held_counts = np.fromiter((len(t[2]) for t in tokenised), np.int64, len(numbers))
                at = np.asarray(numbers, dtype=np.int64)
                np.add.at(self._text_live, at, held_counts)
                self._row_text[placed[len(blank) :]] = np.repeat(at, held_counts)
            if placed:
                self._length[placed] = sizes
                self._live[placed] = True
                self._docs += len(placed)

    def _add_text(
        self, text: str, counts: Counter[str], size: int, held: list[int], fresh: _FreshPostings
    ) -> int:
        """Rows ``held`` of ``text`` (under the lock): a text not seen before is numbered and
        its terms handed to ``fresh``; returns the text's number (the caller counts the rows
        in _text_live and _row_text)."""
        number = self._text_number.get(text)
        if number is None:
            number = self._text_number[text] = len(self._text_rows)
            self._text_rows.append(array("I"))
            if number >= self._text_length.shape[0]:
                grown = max(number + 1, 2 * self._text_length.shape[0], 256)
                self._text_length = _grown(self._text_length, grown)
                self._text_live = _grown(self._text_live, grown)
            self._text_length[number] = size
            fresh.add(number, counts)
        self._text_rows[number].extend(held)
        return number

    def remove(self, rows: Sequence[int]) -> None:
        """Leave these rows out of every later search."""
        with self._lock:
            self._frequency.clear()
            self._decoded.clear()
            for row in rows:
                if 0 <= row < self._live.shape[0] and self._live[row]:
                    self._live[row] = False
                    self._total_length -= float(self._length[row])
                    self._docs -= 1
                    text = int(self._row_text[row])
                    if text >= 0:
                        self._text_live[text] -= 1

    def text_postings(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distinct texts, term counts, live rows of each) of the texts holding ``term`` with
        at least one live row."""
        with self._lock:
            texts = self._text_postings.get(term)
            if texts is None:
                return _NO_TEXTS
            found = np.frombuffer(texts, dtype=np.uint32).astype(np.int64)
            counts = np.frombuffer(self._text_counts[term], dtype=np.uint16).astype(np.float32)
            live = self._text_live[found]
            held = live > 0
            return found[held], counts[held], live[held]

    def text_lengths(self, texts: np.ndarray) -> np.ndarray:
        """The term counts of these distinct texts."""
        with self._lock:
            length: np.ndarray = self._text_length[texts]
            return length

    def rows_of_texts(self, texts: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The live rows of these distinct texts and, for each row, its text's position in
        ``texts``."""
        with self._lock:
            parts = [np.frombuffer(self._text_rows[t], dtype=np.uint32) for t in texts]
            if not parts:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
            rows = np.concatenate(parts).astype(np.int64)
            owner = np.repeat(np.arange(len(parts)), [part.shape[0] for part in parts])
            live = self._live[rows]
            return rows[live], owner[live]

    def texts_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The distinct text number of each of these rows (non-negative), -1 for a row that
        is not (or no longer) indexed or whose text holds no term."""
        with self._lock:
            found = np.full(rows.shape[0], -1, dtype=np.int64)
            inside = np.flatnonzero((rows >= 0) & (rows < self._live.shape[0]))
            held = rows[inside]
            found[inside] = np.where(self._live[held], self._row_text[held], -1)
            return found

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, term counts) of the live texts holding ``term`` (an index kept ``by_row``).

        Raises:
            RuntimeError: the index keeps no postings by row.
        """
        if not self._by_row:
            raise RuntimeError("this keyword index is searched by text only (by_row=False)")
        with self._lock:
            known = self._decoded.get(term)
            if known is not None:
                return known
            rows = self._rows.get(term)
            if rows is None:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            found = np.frombuffer(rows, dtype=np.uint32).astype(np.int64)
            counts = np.frombuffer(self._counts[term], dtype=np.uint16).astype(np.float32)
            live = self._live[found]
            decoded = (found[live], counts[live])
            if found.shape[0] <= DECODED_ROWS and len(self._decoded) < DECODED_TERMS:
                for array_ in decoded:
                    array_.flags.writeable = False  # shared by later calls
                self._decoded[term] = decoded
            return decoded

    def lengths(self, rows: np.ndarray) -> np.ndarray:
        """The term counts of these rows' texts."""
        with self._lock:
            length: np.ndarray = self._length[rows]
            return length


DECODED_ROWS = 4096
DECODED_TERMS = 4096
"""postings() keeps its answers for terms of at most DECODED_ROWS rows, DECODED_TERMS terms
at most (then it decodes the others each time)."""

_NO_POSTINGS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
_NO_TEXTS = (
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.float32),
    np.zeros(0, dtype=np.int64),
)


def _grown(values: np.ndarray, size: int, fill: int = 0) -> np.ndarray:
    """``values`` in an array of ``size`` (the rest ``fill``)."""
    grown = np.full(size, fill, dtype=values.dtype)
    grown[: values.shape[0]] = values
    return grown


class _FreshPostings:
    """The (term, text number, count) of texts new to an index, gathered during one add()
    and appended to each term's postings at once: one append per text and term took most of
    a build (a 20k patrol: ~6,400 distinct texts, ~45,000 of them)."""

    def __init__(self) -> None:
        self._terms: list[str] = []
        self._numbers: list[int] = []
        self._counts: list[int] = []

    def add(self, number: int, counts: Counter[str]) -> None:
        self._terms.extend(counts)
        self._counts.extend(counts.values())
        self._numbers.extend([number] * len(counts))

    def post(self, postings: dict[str, array[int]], counts: dict[str, array[int]]) -> None:
        """Append each term's texts (in the order they were added, as one append each would)
        and counts (at most 65,535) to ``postings`` and ``counts``."""
        if not self._terms:
            return
        ids: dict[str, int] = {}
        term_ids = np.fromiter(
            (ids.setdefault(term, len(ids)) for term in self._terms), np.int64, len(self._terms)
        )
        order = np.argsort(term_ids, kind="stable")  # a term's texts stay in order
        by_term = term_ids[order]
        numbers = np.asarray(self._numbers, dtype=np.uint32)[order]
        held = np.minimum(np.asarray(self._counts, dtype=np.int64), 65_535)
        held = held.astype(np.uint16)[order]
        starts = np.flatnonzero(np.r_[True, by_term[1:] != by_term[:-1]]).tolist()
        names = list(ids)  # a term's id is its place here
        for start, end in zip(starts, [*starts[1:], len(order)], strict=True):
            term = names[int(by_term[start])]
            texts = postings.get(term)
            if texts is None:
                texts = postings[term] = array("I")
                counts[term] = array("H")
            texts.frombytes(numbers[start:end].tobytes())
            counts[term].frombytes(held[start:end].tobytes())


MEMO_TEXTS = 1 << 16
"""Distinct texts whose term counts a catch-up's memo keeps (a robot's texts repeat: a 1M
patrol has ~8,600; unique texts, a dialogue's, stop filling it here)."""


def _counted(text: str, memo: dict[str, Counter[str]] | None) -> Counter[str]:
    """The term counts of ``text``, from ``memo`` when it holds them (then shared: the
    caller only reads them)."""
    if memo is None:
        return Counter(terms(text))
    counts = memo.get(text)
    if counts is None:
        counts = Counter(terms(text))
        if len(memo) < MEMO_TEXTS:
            memo[text] = counts
    return counts


@dataclass(frozen=True)
class Matches:
    """The rows of one index holding at least one query term, in row order: their BM25 scores
    and their coverage (the share of the query's IDF weight whose terms they hold, 0..1)."""

    rows: np.ndarray
    scores: np.ndarray
    coverage: np.ndarray


def bm25(
    indexes: Sequence[KeywordIndex],
    query_terms: Sequence[str],
    scored: Sequence[bool] | None = None,
    by_text: Sequence[bool] | None = None,
) -> list[Matches]:
    """Okapi BM25 of ``query_terms`` over several indexes scored as one collection (document
    frequencies and the average length taken over all of them), per index. An index whose
    ``scored`` entry is False still counts in the collection's statistics, but its matches
    are not scored (no rows come back for it): the others' scores are the same either way.
    An index whose ``by_text`` entry is True is scored once per distinct text: its matches'
    ``rows`` are text numbers (KeywordIndex.rows_of_texts gives their rows), each with the
    score and coverage every live row of that text has, the same bits."""
    if scored is None:
        scored = [True] * len(indexes)
    if by_text is None:
        by_text = [False] * len(indexes)
    unique = list(dict.fromkeys(query_terms))
    docs = sum(index.docs for index in indexes)
    empty = Matches(
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.float64)
    )
    if not unique or docs == 0:
        return [empty for _ in indexes]
    average = max(sum(index.total_length for index in indexes) / docs, 1.0)
    # Per index and term: (rows or texts, term counts, live rows each holds, lengths).
    postings: list[list[tuple[np.ndarray, np.ndarray, int, np.ndarray | None]]] = []
    for index, wanted, grouped in zip(indexes, scored, by_text, strict=True):
        found_terms: list[tuple[np.ndarray, np.ndarray, int, np.ndarray | None]] = []
        for term in unique:
            if not wanted:
                rows, counts = _NO_POSTINGS
                found_terms.append((rows, counts, index.document_frequency(term), None))
            elif grouped:
                texts, counts, live = index.text_postings(term)
                lengths = index.text_lengths(texts) if texts.shape[0] else None
                found_terms.append((texts, counts, int(live.sum()), lengths))
            else:
                rows, counts = index.postings(term)
                lengths = index.lengths(rows) if rows.shape[0] else None
                found_terms.append((rows, counts, int(rows.shape[0]), lengths))
        postings.append(found_terms)
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in indexes]
    total_idf = 0.0
    for t in range(len(unique)):
        frequency = sum(p[t][2] for p in postings)
        idf = math.log(1.0 + (docs - frequency + 0.5) / (frequency + 0.5))
        total_idf += idf  # a term no text holds still counts in the coverage's whole
        for i in range(len(indexes)):
            rows, counts, _, lengths = postings[i][t]
            if rows.shape[0] == 0 or lengths is None:
                continue
            norm = K1 * (1.0 - B + B * lengths / average)
            score = idf * counts * (K1 + 1.0) / (counts + norm)
            parts[i].append((rows, score.astype(np.float64), np.full(rows.shape[0], idf)))
    found: list[Matches] = []
    for pieces in parts:
        if not pieces:
            found.append(empty)
            continue
        unique_rows, scores, covered = summed_by_row(
            np.concatenate([piece[0] for piece in pieces]),
            np.concatenate([piece[1] for piece in pieces]),
            np.concatenate([piece[2] for piece in pieces]),
        )
        found.append(Matches(unique_rows, scores, covered / total_idf))
    return found


DENSE_SUM_SHARE = 8
"""summed_by_row adds into an array over every row number once the postings are at least
1/DENSE_SUM_SHARE of the rows. Measured (idle, median of 15): over 1M rows, 500k postings 22.7
ms sorted against 9.4 dense, 250k 6.1 against 4.4, 125k 2.9 against 3.6; over 100k rows the
two cross at about 1/8 as well (12.5k: 0.22 against 0.15 ms)."""


DENSE_SUM_ROWS = 4096
"""summed_by_row adds densely whatever the share when the row numbers are below this."""


def summed_by_row(
    rows: np.ndarray, scores: np.ndarray, weights: np.ndarray, *, dense: bool | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``rows`` in order, with the sums of their ``scores`` and ``weights``. Each
    sum adds a row's values in the order they come (from 0.0) on either path: the same bits.
    ``dense``: force a path (tests); by default dense when the rows are many."""
    if rows.shape[0] == 0:
        return rows, scores.astype(np.float64), weights.astype(np.float64)
    top = int(rows.max()) + 1
    if dense is None:
        # Also over few row numbers (the gist and entity index): np.unique and np.add.at
        # cost more there than two short bincounts.
        dense = rows.shape[0] * DENSE_SUM_SHARE >= top or top <= DENSE_SUM_ROWS
    if dense:
        hit = np.zeros(top, dtype=bool)
        hit[rows] = True
        distinct = np.flatnonzero(hit)
        return (
            distinct,
            np.bincount(rows, weights=scores, minlength=top)[distinct],
            np.bincount(rows, weights=weights, minlength=top)[distinct],
        )
    distinct, inverse = np.unique(rows, return_inverse=True)
    summed = np.zeros(distinct.shape[0], dtype=np.float64)
    covered = np.zeros(distinct.shape[0], dtype=np.float64)
    np.add.at(summed, inverse, scores)
    np.add.at(covered, inverse, weights)
    return distinct, summed, covered
