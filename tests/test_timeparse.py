"""Time arguments: relative phrases and Unix timestamps, resolved on the injected clock."""

from __future__ import annotations

import pytest

from emem_graph import InvalidInputError
from emem_graph.retrieval.timeparse import TimeParseError, parse_optional_time, parse_time

NOW = 1_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds_ago"),
    [
        ("-10m", 600),
        ("-2h", 7200),
        ("-1d", 86400),
        ("-30s", 30),
        ("-1w", 604800),
        ("10m", 600),
        ("-1.5h", 5400),
        ("10 minutes ago", 600),
        ("2 hours ago", 7200),
        ("2h ago", 7200),
        ("an hour", 3600),
        ("a day", 86400),
        ("last hour", 3600),
        ("the last 3 days", 3 * 86400),
        ("past 20 seconds", 20),
        ("yesterday", 86400),
        ("last week", 604800),
        ("last month", 30 * 86400),
        ("  Last   WEEK ", 604800),
        ("now", 0),
    ],
)
def test_relative_times_count_back_from_the_clock(text: str, seconds_ago: float) -> None:
    assert parse_time(text, NOW) == pytest.approx(NOW - seconds_ago)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1715000000, 1715000000.0), (12.5, 12.5), ("1715000000", 1715000000.0), ("0", 0.0), (0, 0.0)],
)
def test_unix_timestamps_as_numbers_or_strings(value: object, expected: float) -> None:
    assert parse_time(value, NOW) == expected  # type: ignore[arg-type]


def test_today_is_midnight_utc_of_the_clock() -> None:
    assert parse_time("today", 86400.0 * 3 + 500) == 86400.0 * 3


def test_simulation_clock_at_zero_gives_negative_relative_times() -> None:
    assert parse_time("-10m", 0.0) == -600.0


@pytest.mark.parametrize("bad", ["soon", "tomorrow", "10 parsecs ago", "", "-", "1e999", True, []])
def test_anything_else_is_an_error_naming_the_accepted_forms(bad: object) -> None:
    with pytest.raises(TimeParseError) as caught:
        parse_time(bad, NOW, name="time_after")  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("time_after:")
    assert "'-10m'" in message or "finite" in message
    assert isinstance(caught.value, InvalidInputError) and isinstance(caught.value, ValueError)


def test_optional_time_passes_none_through() -> None:
    assert parse_optional_time(None, NOW, name="t") is None
    assert parse_optional_time("-1m", NOW, name="t") == NOW - 60
