"""IngestBuffer's count bound, item kind by item kind, against a model of what waits."""

from __future__ import annotations

import threading
import time
from collections import Counter
from contextlib import nullcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emem_graph.ingest.buffer import IngestBuffer

_NEVER = 1e18
"""An interval no test clock reaches: only the count bound applies."""


class _Write:
    """A batch write that refuses the next batch when ``armed`` (it goes back to the front)."""

    def __init__(self) -> None:
        self.armed = False
        self.written: list[list[str]] = []

    def __call__(self, batch: list[str]) -> int:
        if self.armed:
            self.armed = False
            raise OSError("disk full")
        self.written.append(list(batch))
        return len(batch)


def _kind(item: str) -> str:
    return item.split(":")[0]


def _without_its_thread(buffer: IngestBuffer[str]) -> IngestBuffer[str]:
    """The buffer with its flush thread stopped, nothing flushed: _due() is asked here."""
    with buffer._lock:
        buffer._stopping = True
    buffer._wake.set()
    buffer._thread.join()
    with buffer._lock:
        buffer._stopping = False
    return buffer


@settings(max_examples=80, deadline=None)
@given(
    batch_size=st.integers(1, 5),
    steps=st.lists(st.sampled_from(["obs", "sighting", "flush", "fail"]), max_size=40),
)
def test_a_batch_is_due_when_one_kind_fills_it(batch_size: int, steps: list[str]) -> None:
    """Due exactly when batch_size items of one kind wait, whatever the other kind holds, and
    still so after a failed write put a batch back; every item is written once, in order."""
    write = _Write()
    buffer = _without_its_thread(
        IngestBuffer(write, clock=lambda: 0.0, batch_size=batch_size, interval=_NEVER, kind=_kind)
    )
    waiting: list[str] = []
    added: list[str] = []
    for at, step in enumerate(steps):
        if step in ("obs", "sighting"):
            item = f"{step}:{at}"
            buffer.add(item)
            waiting.append(item)
            added.append(item)
        elif step == "fail":
            write.armed = bool(waiting)
            with pytest.raises(OSError) if waiting else nullcontext():
                buffer.flush()
        else:
            buffer.flush()
            waiting = []
        counts = Counter(_kind(item) for item in waiting)
        assert buffer._due() == any(n >= batch_size for n in counts.values()), steps[: at + 1]
        assert len(buffer) == len(waiting)
    buffer.flush()
    assert [item for batch in write.written for item in batch] == added


def test_without_a_kind_every_item_counts_alike() -> None:
    buffer = _without_its_thread(
        IngestBuffer(_Write(), clock=lambda: 0.0, batch_size=3, interval=_NEVER)
    )
    buffer.add("obs:1")
    buffer.add("sighting:2")
    assert not buffer._due()
    buffer.add("sighting:3")
    assert buffer._due()


class _SlowWrite:
    """A batch write slower than the adds (a loaded disk)."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def __call__(self, batch: list[str]) -> int:
        time.sleep(0.02)
        self.written.extend(batch)
        return len(batch)


def test_adds_wait_for_room_when_writes_are_slower_so_the_backlog_stays_bounded() -> None:
    """Writes 20 ms a batch, adds as fast as they come: what waits never passes one batch
    (before, 60,000 adds in 6 s left 44,000 rows waiting, the loss window unbounded)."""
    write = _SlowWrite()
    buffer = IngestBuffer(write, clock=time.monotonic, batch_size=5, interval=_NEVER)
    most = 0
    for i in range(300):
        buffer.add(f"obs:{i}")
        most = max(most, len(buffer))
    buffer.stop()
    assert most <= 5
    assert write.written == [f"obs:{i}" for i in range(300)]


def test_adds_do_not_wait_for_room_while_writes_fail() -> None:
    def failing(batch: list[str]) -> int:
        raise OSError("disk full")

    buffer = IngestBuffer(failing, clock=time.monotonic, batch_size=2, interval=_NEVER)
    buffer.add("obs:0")
    buffer.add("obs:1")
    deadline = time.monotonic() + 5
    while buffer.last_error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    for i in range(2, 50):
        buffer.add(f"obs:{i}")
    assert time.monotonic() - started < 1.0 and len(buffer) == 50  # kept, none dropped
    assert buffer.drain() == [f"obs:{i}" for i in range(50)]
    buffer._stopping = True
    buffer._wake.set()


def test_a_clock_that_fails_or_goes_back_does_not_stop_flushing_by_time() -> None:
    """One reading that is no time leaves the flush thread running; a clock set back (a
    simulation reset) makes what waits due at once instead of never."""
    now = [100.0]
    bad = [False]

    def clock() -> float:
        if bad[0] and threading.current_thread().name == "emem-flush":
            bad[0] = False
            raise ValueError("the clock gives no time")
        return now[0]

    written: list[str] = []
    buffer = IngestBuffer(
        lambda batch: written.extend(batch) or None,
        clock=clock,
        batch_size=1000,
        interval=1.0,
        poll=0.01,
    )
    buffer.add("obs:0")
    bad[0] = True
    time.sleep(0.1)
    assert buffer._thread.is_alive()
    now[0] = 102.0
    deadline = time.monotonic() + 5
    while written != ["obs:0"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert written == ["obs:0"]
    buffer.add("obs:1")
    now[0] = 5.0  # set back
    while written != ["obs:0", "obs:1"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert written == ["obs:0", "obs:1"]
    buffer.stop()
