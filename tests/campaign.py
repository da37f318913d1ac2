"""How much repetition a test run does: the default run (every test, every class of fault, a
few repetitions each) or the long campaigns a release runs (``bash .ci/run --long``, which sets
EMEM_RELIABILITY_LONG=1; ``pytest tests/reliability --long`` does the same for the reliability
suites). A test that repeats a property (kills, rounds, random cases, hypothesis examples)
takes its count from here; what it asserts is the same in both."""

from __future__ import annotations

import os

LONG = os.environ.get("EMEM_RELIABILITY_LONG") == "1"
"""True in the long campaigns."""


def repeat(default: int, long: int) -> int:
    """The count of repetitions of this run: ``long`` in the long campaigns, else ``default``."""
    return long if LONG else default
