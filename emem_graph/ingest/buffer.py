"""IngestBuffer: add() returns at once; a flush thread writes batches by count and by time."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

BACKPRESSURE_POLL_S = 0.5
"""How often an add() waiting for room looks again without being woken (a safety net)."""

Item = TypeVar("Item")


class IngestBuffer(Generic[Item]):
    """Buffers items and hands them to ``write`` in batches, in arrival order.

    A batch is written when ``batch_size`` items of one kind wait (the flush thread is woken;
    ``kind`` gives an item's, all items are of one kind without it), when the
    oldest waiting item is ``interval`` seconds old by the injected ``clock`` (checked by the
    flush thread every ``poll`` wall-clock seconds, so a simulated clock drives time flushes), or
    when flush() is called. A flush writes everything waiting (a group commit): while the adds
    come faster than one write takes, the items that arrive during a write wait for the next
    one, up to ``max_waiting`` of one kind; an add() finding that many waits for room. The cost
    of a write is then shared by many items instead of ``batch_size``.

    A failed write is never retried in front of the others forever. With ``set_aside`` given,
    the batch is split in halves, and halves again, until each failing item stands alone (a few
    dozen writes for one bad item in a thousand); if any write succeeded, or ``probe`` (a
    content-free write) succeeds, the storage works and the items that fail alone are handed to
    ``set_aside`` (which must keep them durably, or raise) and counted in ``rejected``. When
    storage itself fails (the probe fails, or set_aside raises), nothing is set aside: the
    items not written go back to the front, the error is kept in ``last_error`` and re-raised
    by the next explicit flush().

    Args:
        write: writes a batch, returns how many items it counts as written (or None: all).
        clock: the memory's clock.
        batch_size: items of one kind that trigger a flush.
        kind: an item's kind, each counted apart towards ``batch_size`` (the memory's
            observations and its entity sightings: sightings among observations do not cut
            a batch of observations short, and each kind keeps its own count bound).
        interval: age in clock seconds of the oldest item that triggers a flush.
        max_waiting: items of one kind that may wait while a write runs (at least
            ``batch_size``; None: ``batch_size``): the bound on a batch and on what is
            accepted and not yet being written.
        poll: wall seconds between the flush thread's checks.
        name: the flush thread's name.
        set_aside: keeps one item that cannot be written, with its error (e.g. in a file);
            None: a failing batch is kept whole and retried.
        probe: raises when storage is unusable as a whole (no item's fault).
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
        set_aside: Callable[[Item, BaseException], None] | None = None,
        probe: Callable[[], None] | None = None,
        kind: Callable[[Item], Hashable] | None = None,
        max_waiting: int | None = None,
    ) -> None:
        self._write = write
        self._kind = kind
        self._set_aside = set_aside
        self._probe = probe
        self.rejected = 0
        """Items set aside since the buffer started (they failed alone; see set_aside)."""
        self._clock = clock
        self.batch_size = batch_size
        self.max_waiting = batch_size if max_waiting is None else max(batch_size, max_waiting)
        self.interval = interval
        self._poll = poll if poll is not None else min(0.2, interval / 4)
        self._items: list[Item] = []
        self._waiting: Counter[Hashable] = Counter()
        """How many items of each kind wait."""
        self._oldest: float | None = None
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        """Notified when waiting items are taken (or writes fail): add() waits on it for room."""
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
        """Queue one item; wakes the flush thread when a batch is full.

        While ``max_waiting`` items of its kind wait already (the writes are slower than the
        adds), the caller waits until the flush thread has taken them: what is accepted and not
        yet written stays within a batch being written and one waiting. It does not wait while
        writes are failing (last_error: the rows stay queued, flush() raises), on the flush
        thread itself, nor when there is no flush thread.
        """
        kind = None if self._kind is None else self._kind(item)
        with self._room:
            while (
                self._waiting[kind] >= self.max_waiting
                and self.last_error is None
                and not self._stopping
                and threading.current_thread() is not self._thread
                and self._thread.is_alive()  # no flush thread: nobody would make room
            ):
                self._wake.set()
                self._room.wait(BACKPRESSURE_POLL_S)
            if self._stopping:
                raise RuntimeError("the ingest buffer is stopped")
            if not self._items:
                self._oldest = self._clock()
            self._items.append(item)
            self._waiting[kind] += 1
            full = self._waiting[kind] >= self.batch_size
        if full:
            self._wake.set()

    def flush(self) -> int:
        """Write everything waiting now, on the calling thread. Returns how many were written
        (the count ``write`` returns, when it returns one).

        Items that cannot be written are set aside (see the class), not counted.

        Raises:
            Exception: storage failed as a whole (the items not written stay queued for a
                retry).
        """
        with self._flush_lock:
            with self._room:
                batch, self._items, self._oldest = self._items, [], None
                self._waiting.clear()
                self._room.notify_all()  # adds waiting for room go on
            if not batch:
                return 0
            try:
                written = self._count(batch, self._write(batch))
            except Exception as exc:
                if self._set_aside is None:
                    self._requeue(batch, exc)
                    raise
                written = self._isolate(batch, exc)
            except BaseException as exc:  # KeyboardInterrupt...: keep everything, stop
                self._requeue(batch, exc)
                raise
            self.last_error = None
            self.flushes += 1
            return written

    def _isolate(self, batch: list[Item], error: Exception) -> int:
        """Write what can be written of a failed batch; set aside what fails alone.

        Raises:
            Exception: storage fails as a whole (the probe's error; the items not written are
                queued again), or an item could not be set aside (set_aside's error).
        """
        self._check_storage(batch, error)
        written = 0
        alone: list[tuple[Item, Exception]] = []
        # Groups known to fail, as a stack: halves go on left on top, so what is written
        # keeps arrival order.
        todo: list[tuple[list[Item], Exception]] = [(batch, error)]
        while todo:
            group, exc = todo.pop()
            if len(group) == 1:
                alone.append((group[0], exc))
                continue
            middle = len(group) // 2
            untried = [group[:middle], group[middle:]]
            failed: list[tuple[list[Item], Exception]] = []
            while untried:
                try:
                    written += self._count(untried[0], self._write(untried[0]))
                except Exception as half_error:
                    failed.append((untried[0], half_error))
                except BaseException as stop:  # interrupted: nothing unwritten is dropped
                    waiting = [[item for item, _ in alone]]
                    waiting += [g for g, _ in failed] + untried + [g for g, _ in todo[::-1]]
                    self._requeue([item for group in waiting for item in group], stop)
                    raise
                untried.pop(0)
            todo.extend(reversed(failed))
        # Probed again: storage may have failed after the halves that succeeded.
        self._check_storage([item for item, _ in alone], error)
        keep = self._set_aside
        assert keep is not None  # flush() isolates only with one
        for at, (item, exc) in enumerate(alone):
            try:
                keep(item, exc)
            except BaseException as failed_keep:
                # Not kept durably: the rest wait in the buffer, nothing is dropped.
                self._requeue([i for i, _ in alone[at:]], failed_keep)
                log.warning("an item that cannot be written was not set aside: %s", failed_keep)
                raise
            self.rejected += 1
            log.warning("an item that cannot be written was set aside: %s", exc)
        return written

    def _check_storage(self, items: list[Item], error: Exception) -> None:
        """Raise ``error`` (``items`` queued again) when the probe says storage is unusable."""
        if self._probe is None:
            return
        try:
            self._probe()
        except BaseException as exc:
            # The storage's own error says what to fix; the batch's error is its cause.
            self._requeue(items, exc)
            log.warning("batch write failed and storage is not usable: %s", exc)
            raise exc from error

    def _requeue(self, items: list[Item], exc: BaseException) -> None:
        with self._room:
            self._items[:0] = items
            self._waiting.update(None if self._kind is None else self._kind(i) for i in items)
            if items:
                self._oldest = self._read_clock()
            self.last_error = exc
            self._room.notify_all()  # writes fail: adds do not wait for room

    @staticmethod
    def _count(batch: list[Item], written: int | None) -> int:
        return len(batch) if written is None else written

    def drain(self) -> list[Item]:
        """Take every waiting item out of the buffer (none is written), in arrival order: for a
        caller that keeps them elsewhere once a flush has failed as a whole."""
        with self._flush_lock, self._room:
            items, self._items, self._oldest = self._items, [], None
            self._waiting.clear()
            self._room.notify_all()
            return items

    def stop(self) -> None:
        """Stop the flush thread and write what is left (raises if that write fails)."""
        with self._room:
            self._stopping = True
            self._room.notify_all()
        self._wake.set()
        self._thread.join()
        self.flush()

    def _due(self) -> bool:
        with self._lock:
            if not self._items:
                return False
            if max(self._waiting.values()) >= self.batch_size:
                return True
            if self._oldest is None:
                return False
            now = self._read_clock()
            # A clock set back (a simulation reset) leaves no age to wait for: due now.
            return now is None or now < self._oldest or now - self._oldest >= self.interval

    def _read_clock(self) -> float | None:
        """The clock, or None when it gives no time now (the flush thread goes on)."""
        try:
            return self._clock()
        except Exception as exc:
            log.warning("the clock gave no time (%s); flushing by count and on demand", exc)
            return None

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
