"""Time phrases inside a request and the spans they mean (retrieval/timewords.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from emem_graph.retrieval.timewords import strip_time_words, time_window

NOW = datetime(2026, 3, 18, 16, 0, tzinfo=UTC).timestamp()  # a Wednesday


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("request_text", "start", "end"),
    [
        ("what did I say yesterday about the ladder?", "2026-03-17T00:00", "2026-03-18T00:00"),
        ("This morning's note about the coffee", "2026-03-18T05:00", "2026-03-18T12:00"),
        ("before lunch today, what about the window?", "2026-03-18T05:00", "2026-03-18T12:30"),
        ("what did I tell you after lunch", "2026-03-18T12:00", "2026-03-18T18:00"),
        ("yesterday evening, the cleaner?", "2026-03-17T17:00", "2026-03-18T00:00"),
        ("what about last night", "2026-03-17T17:00", "2026-03-18T05:00"),
        ("two days ago, the dish", "2026-03-16T00:00", "2026-03-17T00:00"),
        ("the day before yesterday", "2026-03-16T00:00", "2026-03-17T00:00"),
        ("what did I say on Monday", "2026-03-16T00:00", "2026-03-17T00:00"),
        ("on Monday the 2nd of March", "2026-03-02T00:00", "2026-03-03T00:00"),
        ("what about March 9th?", "2026-03-09T00:00", "2026-03-10T00:00"),
        ("the 25th of December", "2025-12-25T00:00", "2025-12-26T00:00"),  # last year's
        ("and last Wednesday?", "2026-03-11T00:00", "2026-03-12T00:00"),
        ("last week, the window cleaner", "2026-03-09T00:00", "2026-03-16T00:00"),
        ("last month, the ladder", "2026-02-01T00:00", "2026-03-01T00:00"),
        ("earlier today", "2026-03-18T00:00", "2026-03-18T16:00"),
        ("an hour ago", "2026-03-18T14:00", "2026-03-18T16:00"),
        ("3 hours ago", "2026-03-18T10:00", "2026-03-18T16:00"),
        ("ten minutes ago?", None, None),
        # A weekday is a topic when another phrase gives the time.
        ("what did I say about Sunday lunch an hour ago", "2026-03-18T14:00", "2026-03-18T16:00"),
    ],
)
def test_time_phrases_mean_their_span(request_text: str, start: str | None, end: str | None):
    window = time_window(request_text, NOW)
    assert window is not None
    if start is None:
        assert window.end == NOW and NOW - window.start <= 3600
        return
    assert end is not None
    assert (window.start, window.end) == (at(start), at(end))


def test_a_bare_weekday_is_favoured_half_as_much_and_stays_in_the_text() -> None:
    weekday = time_window("what did I say I'd cook on Sunday?", NOW)
    assert weekday is not None and weekday.weight == 0.5 and not weekday.strip
    clear = time_window("what did I say yesterday?", NOW)
    assert clear is not None and clear.weight == 1.0 and clear.strip
    assert "sunday" in strip_time_words("what did I say I'd cook on Sunday yesterday?")


def test_requests_without_time_words_have_no_window_and_keep_their_words() -> None:
    for text in ("where is the red chair?", "which cup is for guests", "the monday report"):
        # "the monday report" names a weekday alone: it is read as a time (documented).
        if "monday" in text:
            assert time_window(text, NOW) is not None
            continue
        assert time_window(text, NOW) is None
    assert strip_time_words("Yesterday, what did I say about the ladder?") == (
        ", what did i say about the ladder?"
    )
