"""format_time prints exactly what datetime prints, on its arithmetic path and around it."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from emem_graph.retrieval.formatting import _FAST_TIME_RANGE, format_time
from emem_graph.validation import MAX_TIMESTAMP, MIN_TIMESTAMP


def _datetime_text(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


@settings(max_examples=3000, deadline=None)
@given(st.floats(min_value=MIN_TIMESTAMP, max_value=MAX_TIMESTAMP))
@example(0.0)
@example(-0.0)
@example(-1e-7)  # rounds to the microsecond 0: 1970-01-01 00:00:00
@example(-0.4999995)
@example(59.9999995)  # half a microsecond below a minute: rounded up first
@example(59.9999994)
@example(-86_400.0000005)
@example(1_700_000_000.0000005)
@example(_FAST_TIME_RANGE[0])
@example(_FAST_TIME_RANGE[0] - 1e-3)
@example(_FAST_TIME_RANGE[1])
@example(MIN_TIMESTAMP)  # year 2: datetime's own path (unpadded year)
@example(MAX_TIMESTAMP)
def test_the_text_is_datetimes_to_the_character(timestamp: float) -> None:
    assert format_time.__wrapped__(timestamp) == _datetime_text(timestamp)


@settings(max_examples=1000, deadline=None)
@given(st.integers(min_value=-30_610_224_000, max_value=253_402_300_000), st.integers(0, 999_999))
def test_every_microsecond_of_a_second_prints_that_second(seconds: int, micro: int) -> None:
    timestamp = seconds + micro / 1e6
    assert format_time.__wrapped__(timestamp) == _datetime_text(timestamp)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e300])
def test_what_datetime_refuses_is_refused_alike(bad: float) -> None:
    with pytest.raises((ValueError, OverflowError, OSError)) as ours:
        format_time.__wrapped__(bad)
    with pytest.raises(type(ours.value)):
        _datetime_text(bad)
