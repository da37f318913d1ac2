"""Reliability suites: crash matrix, concurrency, hostile input, degraded
dependencies, growth.

Counts are reduced by default so the suites fit in CI; ``--long`` (or EMEM_RELIABILITY_LONG=1)
runs the full counts. Run them with::

    pytest tests/reliability            # CI counts
    pytest tests/reliability --long     # full counts

Each suite records one summary line with its figures; they are printed at the end of the run
(also with -q).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

SUMMARY: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="reliability suites: full counts (more kills, longer soaks, more inputs)",
    )


@dataclass(frozen=True)
class Scale:
    """How much each suite does: CI counts, or the full counts with --long."""

    long: bool
    kills: int
    soak_seconds: float
    hostile_examples: int
    growth_flushes: int

    def label(self) -> str:
        return "full run (--long)" if self.long else "CI counts"


def _is_long(config: pytest.Config) -> bool:
    try:
        flag = bool(config.getoption("--long"))
    except ValueError:  # the option is registered only when this conftest loads at startup
        flag = False
    return flag or os.environ.get("EMEM_RELIABILITY_LONG") == "1"


@pytest.fixture(scope="session")
def scale(pytestconfig: pytest.Config) -> Scale:
    """The counts of this run (environment variables override each one)."""
    long = _is_long(pytestconfig)
    return Scale(
        long=long,
        kills=int(os.environ.get("EMEM_MATRIX_KILLS", 300 if long else 50)),
        soak_seconds=float(os.environ.get("EMEM_RELIABILITY_SOAK", 120 if long else 20)),
        hostile_examples=int(os.environ.get("EMEM_HOSTILE_EXAMPLES", 2000 if long else 150)),
        growth_flushes=int(os.environ.get("EMEM_GROWTH_FLUSHES", 10_000 if long else 1_000)),
    )


@pytest.fixture(scope="session")
def summary() -> list[str]:
    """Append one line of figures per suite; printed at the end of the run."""
    return SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SUMMARY:
        terminalreporter.section("reliability figures")
        for line in SUMMARY:
            terminalreporter.write_line(line)
