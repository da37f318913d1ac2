"""IngestBuffer's count bound, item kind by item kind, against a model of what waits."""

from __future__ import annotations

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
