"""IngestBuffer: add() returns at once; a flush thread writes batches by count and by time."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

Item = TypeVar("Item")


class IngestBuffer(Generic[Item]):
    """Buffers items and hands them to ``write`` in batches, in arrival order.

    A batch is written when ``batch_size`` items wait (the flush thread is woken), when the
    oldest waiting item is ``interval`` seconds old by the injected ``clock`` (checked by the
    flush thread every ``poll`` wall-clock seconds, so a simulated clock drives time flushes), or
    when flush() is called. A failed write puts its items back at the front and is retried; the
    error is kept in ``last_error`` and re-raised by the next explicit flush().
    """

    def __init__(
        self,
        write: Callable[[list[Item]], int | None],
        *,
        clock: Callable[[], float],
        batch_size: int,
        interval: float,
        poll: float | None = None,
        name: str = "emem-flush",
    ) -> None:
        self._write = write
        self._clock = clock
        self.batch_size = batch_size
        self.interval = interval
        self._poll = poll if poll is not None else min(0.2, interval / 4)
        self._items: list[Item] = []
        self._oldest: float | None = None
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self.last_error: BaseException | None = None
        self.flushes = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def add(self, item: Item) -> None:
        """Queue one item; wakes the flush thread when a batch is full."""
        with self._lock:
            if self._stopping:
                raise RuntimeError("the ingest buffer is stopped")
            if not self._items:
                self._oldest = self._clock()
            self._items.append(item)
            full = len(self._items) >= self.batch_size
        if full:
            self._wake.set()

    def flush(self) -> int:
        """Write everything waiting now, on the calling thread. Returns how many were written
        (the count ``write`` returns, when it returns one).

        Raises:
            Exception: the write failed (the items stay queued for a retry).
        """
        with self._flush_lock:
            with self._lock:
                batch, self._items, self._oldest = self._items, [], None
            if not batch:
                return 0
            try:
                written = self._write(batch)
            except BaseException as exc:
                with self._lock:
                    self._items[:0] = batch
                    self._oldest = self._clock()
                self.last_error = exc
                raise
            self.last_error = None
            self.flushes += 1
            return len(batch) if written is None else written

    def stop(self) -> None:
        """Stop the flush thread and write what is left (raises if that write fails)."""
        with self._lock:
            self._stopping = True
        self._wake.set()
        self._thread.join()
        self.flush()

    def _due(self) -> bool:
        with self._lock:
            if not self._items:
                return False
            if len(self._items) >= self.batch_size:
                return True
            return self._oldest is not None and self._clock() - self._oldest >= self.interval

    def _run(self) -> None:
        while True:
            self._wake.wait(self._poll)
            self._wake.clear()
            with self._lock:
                if self._stopping:
                    return
            if not self._due():
                continue
            try:
                self.flush()
            except Exception as exc:  # kept queued; an explicit flush() raises it
                log.warning("background flush failed (will retry): %s", exc)
                self._wake.wait(min(1.0, self.interval))
