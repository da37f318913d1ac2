"""Time words inside a request: "what did I say yesterday about the ladder?" -> yesterday.

A person asks about when something was said ("this morning", "before lunch", "two days ago",
"on Monday", "last week"); near-duplicate memories often differ only in when they were made.
``time_window`` finds the first such phrase in a request and returns the span of time it means
on the memory's clock, in UTC (as the tools' time arguments: "today" starts at midnight UTC).
The search favours records inside the span (a soft preference, never a filter: a phrase read
wrongly must not hide the answer).

Spans: "just now" the last 20 min; "N minutes/hours ago" twice N back to now (at least 2 h for
hours); "this morning" 05:00-12:00 today, "before lunch" 05:00-12:30, "this afternoon" / "after
lunch" 12:00-18:00, "this evening" / "tonight" 17:00-24:00, "today" / "earlier today" midnight
to now; the same for "yesterday morning" etc. on the day before, "last night" 17:00 yesterday to
05:00 today, "yesterday" that whole day; "N days ago" / "the day before yesterday" that day;
"the 2nd of March" / "March 2nd" that day (of this year, or the last when still to come);
"(on|last) Monday" the latest Monday before today (a weekday only when no other phrase is
there: "what did I say about Sunday lunch an hour ago?" is about the last hour); "this week"
Monday 00:00 to now; "last week" the calendar week (Monday to Sunday) before this one; "last
month" the calendar month before this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

HOUR = 3600.0
DAY = 86_400.0
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "a few": 3,
    "few": 3,
    "couple of": 2,
    "a couple of": 2,
}
_COUNT = r"(\d+|an?|one|two|three|four|five|six|seven|(?:a )?few|(?:a )?couple of)"
_MONTHS = (
    *("january", "february", "march", "april", "may", "june", "july", "august"),
    *("september", "october", "november", "december"),
)
_MONTH_NAMES = "|".join(_MONTHS)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PARTS = {  # part of a day -> hours from its midnight
    "morning": (5.0, 12.0),
    "afternoon": (12.0, 18.0),
    "evening": (17.0, 24.0),
}

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bjust now\b|\ba moment ago\b|\bminutes? ago\b(?<!\d minutes ago)"), "now"),
    (re.compile(rf"\b{_COUNT} (minute|min|hour|hr)s? ago\b"), "ago"),
    (re.compile(r"\bthe day before yesterday\b"), "day_before"),
    (re.compile(rf"\b{_COUNT} days? ago\b"), "days_ago"),
    (re.compile(r"\byesterday (morning|afternoon|evening)\b"), "yesterday_part"),
    (re.compile(r"\blast night\b"), "last_night"),
    (re.compile(r"\byesterday\b"), "yesterday"),
    (re.compile(r"\b(?:this|today'?s?) (morning|afternoon|evening)\b"), "part"),
    (re.compile(r"\btonight\b"), "tonight"),
    (re.compile(r"\bbefore lunch\b"), "before_lunch"),
    (re.compile(r"\bafter lunch\b"), "after_lunch"),
    (re.compile(r"\b(?:earlier )?today\b"), "today"),
    (re.compile(rf"\b(?:on )?(?:the )?{_DAY} of ({_MONTH_NAMES})\b"), "date"),
    (
        re.compile(rf"\b(?:on )?({_MONTH_NAMES}) (?:the )?(\d{{1,2}})(?:st|nd|rd|th)?\b"),
        "month_day",
    ),
    (re.compile(r"\b(?:on |last )?(" + "|".join(_WEEKDAYS) + r")\b"), "weekday"),
    (re.compile(r"\bthis week\b"), "this_week"),
    (re.compile(r"\blast week\b|\bthe week before\b|\ba week ago\b"), "last_week"),
    (re.compile(r"\blast month\b|\ba month ago\b"), "last_month"),
]


@dataclass(frozen=True)
class TimeSpan:
    """What a time phrase of a request means: the span, how much the search should favour
    records inside it (1 for a clear phrase), and whether the phrase is left out of what is
    searched."""

    start: float
    end: float
    weight: float = 1.0
    strip: bool = True


WEEKDAY_WEIGHT = 0.5
"""A bare weekday ("what did I say I'd cook on Sunday?") names the day of an event as often as
the day something was said: it is favoured half as much and stays in the searched text."""


def time_window(request: str, now: float) -> TimeSpan | None:
    """The span of time the first time phrase of ``request`` means at ``now``, or None when it
    has none. A date ("the 2nd of March") is read before the weekday that may go with it."""
    text = " ".join(request.lower().replace("\u2019", "'").split())
    found: list[tuple[int, re.Match[str], str]] = []
    for pattern, kind in _PATTERNS:
        match = pattern.search(text)
        if match is not None:
            found.append((match.start(), match, kind))
    if not found:
        return None
    # A weekday is often what is talked about ("Sunday lunch"): it counts only alone.
    dated = [item for item in found if item[2] != "weekday"] or found
    _start, match, kind = min(dated, key=lambda item: item[0])
    start, end = _span(kind, match, now)
    if kind == "weekday":
        return TimeSpan(start, end, WEEKDAY_WEIGHT, strip=False)
    return TimeSpan(start, end)


def strip_time_words(request: str) -> str:
    """``request`` in lower case without its time phrases other than a bare weekday (what is
    asked about; the default embedder is uncased)."""
    text = " ".join(request.lower().replace("\u2019", "'").split())
    for pattern, kind in _PATTERNS:
        if kind != "weekday":
            text = pattern.sub(" ", text)
    return " ".join(text.split())


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _span(kind: str, match: re.Match[str], now: float) -> tuple[float, float]:
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    midnight = today.timestamp()
    if kind == "now":
        return now - 20 * 60.0, now
    if kind == "ago":
        count, unit = _count(match.group(1)), match.group(2)
        seconds = count * (HOUR if unit.startswith("h") else 60.0)
        return now - max(2 * seconds, 2 * HOUR if unit.startswith("h") else 0.0), now
    if kind in ("days_ago", "day_before"):
        days = 2 if kind == "day_before" else _count(match.group(1))
        return midnight - days * DAY, midnight - (days - 1) * DAY
    if kind == "yesterday_part":
        first, last = _PARTS[match.group(1)]
        return midnight - DAY + first * HOUR, midnight - DAY + last * HOUR
    if kind == "last_night":
        return midnight - DAY + 17 * HOUR, midnight + 5 * HOUR
    if kind == "yesterday":
        return midnight - DAY, midnight
    if kind == "part":
        first, last = _PARTS[match.group(1)]
        return midnight + first * HOUR, midnight + last * HOUR
    if kind == "tonight":
        return midnight + 17 * HOUR, midnight + DAY
    if kind == "before_lunch":
        return midnight + 5 * HOUR, midnight + 12.5 * HOUR
    if kind == "after_lunch":
        return midnight + 12 * HOUR, midnight + 18 * HOUR
    if kind == "today":
        return midnight, now
    if kind in ("date", "month_day"):
        day, month = (
            (match.group(1), match.group(2)) if kind == "date" else (match.group(2), match.group(1))
        )
        return _latest_date(today, _MONTHS.index(month) + 1, int(day))
    monday = today - timedelta(days=today.weekday())
    if kind == "weekday":
        back = (today.weekday() - _WEEKDAYS.index(match.group(1))) % 7 or 7
        day = midnight - back * DAY
        return day, day + DAY
    if kind == "this_week":
        return monday.timestamp(), now
    if kind == "last_week":
        return monday.timestamp() - 7 * DAY, monday.timestamp()
    # last month: the calendar month before this one
    this_month = today.replace(day=1)
    previous = (this_month - timedelta(days=1)).replace(day=1)
    return previous.timestamp(), this_month.timestamp()


def _latest_date(today: datetime, month: int, day: int) -> tuple[float, float]:
    """The day (month, day) of this year, or of last year when that is after today; a day the
    month does not have is its last."""
    for year in (today.year, today.year - 1):
        last = (datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC) - timedelta(days=1)).day
        date = datetime(year, month, min(max(day, 1), last), tzinfo=UTC)
        if date <= today:
            break
    return date.timestamp(), date.timestamp() + DAY
