"""SimClock, the hand-moved clock of the tests (a module of its own: test files import it by
name, and ``from conftest import ...`` would find whichever conftest.py was imported first)."""

from __future__ import annotations


class SimClock:
    """A clock the test moves by hand (simulation time; starts at 0.0 on purpose)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now
