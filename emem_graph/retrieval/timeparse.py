"""Time arguments of the tools: relative phrases or Unix timestamps, resolved on the memory's clock.

Accepted (case-insensitive): ``-10m``, ``-2h``, ``-1d``, ``-30s``, ``-1w`` (the minus is
optional), ``10 minutes ago``, ``2 hours``, ``last 3 days``, ``past hour``, ``an hour``,
``a day``, ``now``, ``today`` (midnight UTC), ``yesterday`` (24 h ago), ``last week``,
``last month`` (30 days), ``last year`` (365 days), and a Unix timestamp in seconds (a number or
a numeric string; 0.0 is a valid time). Everything else is a TimeParseError that lists these
forms.
"""

from __future__ import annotations

import math
import re

from emem_graph.errors import InvalidInputError

ACCEPTED_FORMS = (
    "'-10m', '-2h', '-1d', '-30s', '10 minutes ago', 'an hour', 'yesterday', 'last week', "
    "or a Unix timestamp in seconds"
)

_UNIT_SECONDS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0),
    **dict.fromkeys(("d", "day", "days"), 86400.0),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), 604800.0),
}
_NAMED_AGO = {
    "now": 0.0,
    "yesterday": 86400.0,
    "last week": 604800.0,
    "past week": 604800.0,
    "last month": 30 * 86400.0,
    "past month": 30 * 86400.0,
    "last year": 365 * 86400.0,
    "past year": 365 * 86400.0,
}
_PREFIX = re.compile(r"^(?:within\s+)?(?:the\s+)?(?:last|past|previous)\s+")
_SUFFIX = re.compile(r"\s+ago$")
_ARTICLE = re.compile(r"^(?:a|an|one)\s+")
_AMOUNT_UNIT = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]+)$")
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$")


class TimeParseError(InvalidInputError):
    """A time argument is neither a relative time nor a Unix timestamp."""


def parse_time(value: str | float | int, now: float, *, name: str = "time") -> float:
    """Resolve a time argument to a Unix timestamp.

    Args:
        value: a relative phrase ("-10m", "2 hours ago", "yesterday") or a Unix timestamp.
        now: the current time of the memory's clock; relative phrases count back from it.
        name: the argument's name, used in the error message.

    Returns:
        The absolute time in seconds.

    Raises:
        TimeParseError: the value is none of the accepted forms.
    """
    if isinstance(value, bool):
        raise TimeParseError(f"{name}: cannot parse {value!r} as a time; use {ACCEPTED_FORMS}")
    if isinstance(value, (int, float)):
        return _finite(float(value), value, name)
    if not isinstance(value, str):
        raise TimeParseError(
            f"{name}: expected a string or a number, got {type(value).__name__}; "
            f"use {ACCEPTED_FORMS}"
        )
    text = " ".join(value.strip().lower().split())
    if _NUMBER.match(text):
        return _finite(float(text), value, name)
    ago = _seconds_ago(text)
    if ago is not None:
        return now - ago
    if text == "today":
        return math.floor(now / 86400.0) * 86400.0
    raise TimeParseError(f"{name}: cannot parse {value!r} as a time; use {ACCEPTED_FORMS}")


def parse_optional_time(value: str | float | int | None, now: float, *, name: str) -> float | None:
    """parse_time(), with None passed through (no bound)."""
    return None if value is None else parse_time(value, now, name=name)


def parse_time_window(
    time_after: str | float | int | None, time_before: str | float | int | None, now: float
) -> tuple[float | None, float | None]:
    """The bounds of a tool's time window, each parsed as parse_optional_time().

    Raises:
        TimeParseError: a bound cannot be parsed, or the window ends before it starts (a
            planner that swapped "-10m" and "-1h" is told so, not answered with nothing).
    """
    after = parse_optional_time(time_after, now, name="time_after")
    before = parse_optional_time(time_before, now, name="time_before")
    if after is not None and before is not None and after > before:
        raise TimeParseError(
            f"the time window is empty: time_after ({time_after!r}) is later than "
            f"time_before ({time_before!r}); swap them"
        )
    return after, before


def _seconds_ago(text: str) -> float | None:
    if text in _NAMED_AGO:
        return _NAMED_AGO[text]
    stripped = _SUFFIX.sub("", _PREFIX.sub("", text))
    stripped = _ARTICLE.sub("1 ", stripped.removeprefix("-").strip())
    if stripped in _UNIT_SECONDS:  # "last hour", "past minute"
        return _UNIT_SECONDS[stripped]
    match = _AMOUNT_UNIT.match(stripped)
    if match and match.group(2) in _UNIT_SECONDS:
        return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return None


def _finite(number: float, original: object, name: str) -> float:
    if not math.isfinite(number):
        raise TimeParseError(f"{name}: {original!r} is not a finite timestamp")
    return number
