"""A read-write lock: many readers at once, or one writer alone; a waiting writer goes first."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Many searches at once, or one compaction that deletes old files: never both.

    A writer that waits is let in before new readers: with searches arriving back to back
    there is always a reader inside, and a lock that let them in first kept a compaction
    (and the flush waiting behind it) out for as long as the searches went on (measured
    here: two searching threads held a compaction off for a whole minute). A thread that
    already reads may read again while a writer waits (its outer read would otherwise never
    end).
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._mine = threading.local()

    @contextmanager
    def reading(self) -> Iterator[None]:
        held = getattr(self._mine, "reads", 0)
        with self._condition:
            while self._writer or (self._writers_waiting and not held):
                self._condition.wait()
            self._readers += 1
        self._mine.reads = held + 1
        try:
            yield
        finally:
            self._mine.reads = held
            with self._condition:
                self._readers -= 1
                self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._condition:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._condition.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._condition:
                self._writer = False
                self._condition.notify_all()
