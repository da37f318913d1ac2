"""The vector table under everything at once: appends, upserts, tier updates and archival
deletes from the writer, vector and keyword searches from two other threads, a compaction
every few commits that deletes every old version at once, and ANN index builds on their own
thread. No operation may fail (a file pulled from under a reader or a writer is LanceDB's
"Not found"), the writer must keep going while the searches never stop, and the table must
end holding exactly the rows the writes leave."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_vectors import DIM, make_row, unit_vectors

from emem_graph.filters import VectorFilter
from emem_graph.storage.rwlock import ReadWriteLock
from emem_graph.storage.vectors import VectorStore

BATCH = 20


def test_writes_searches_compactions_and_index_builds_together_never_fail(
    tmp_path: Path, scale: Any, summary: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store = VectorStore(
        tmp_path / "v",
        DIM,
        compact_every=4,
        cleanup_after=timedelta(0),
        ann_min_rows=1_000,
        ann_reindex_growth=0.5,
    )
    rng = np.random.default_rng(7)
    present: dict[str, str] = {}  # id -> tier the writes left
    errors: list[str] = []
    stop = threading.Event()
    done = {"commits": 0, "searches": 0}

    def writer() -> None:
        i = 0
        try:
            while not stop.is_set():
                vectors = unit_vectors(rng, BATCH)
                store.add(
                    [make_row(i + k, vectors[k], text=f"red chair {i + k}") for k in range(BATCH)]
                )
                present.update({f"o{i + k}": "short_term" for k in range(BATCH)})
                if i and i % 200 == 0:
                    changed = [
                        make_row(i - 50 + k, vectors[k], text=f"blue table {k}") for k in range(10)
                    ]
                    store.upsert(changed)
                    present.update({row.id: "short_term" for row in changed})
                    promoted = [f"o{i - 90 + k}" for k in range(10)]
                    store.set_tier(promoted, "long_term")
                    present.update({p: "long_term" for p in promoted})
                    archived = [f"o{i - 199 + k}" for k in range(5)]
                    store.delete(archived)
                    for gone in archived:
                        present.pop(gone, None)
                    done["commits"] += 3
                i += BATCH
                done["commits"] += 1
        except Exception as exc:
            errors.append(f"writer: {exc!r}")

    def searcher(seed: int) -> None:
        query = unit_vectors(np.random.default_rng(seed), 1)[0]
        where = VectorFilter(exclude_tiers=("archived",))
        try:
            while not stop.is_set():
                store.search(query, 10, where)
                store.keyword_search("red chair", 10, None)
                done["searches"] += 1
        except Exception as exc:
            errors.append(f"searcher: {exc!r}")

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=searcher, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + scale.soak_seconds
    while time.monotonic() < deadline and not errors:
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join()
    store.wait_for_index()

    assert errors == []
    not_found = [r.getMessage() for r in caplog.records if "not found" in r.getMessage().lower()]
    assert not_found == []
    # Searches never stopping did not hold the writer (and its compactions) off.
    assert done["commits"] >= 40, done
    assert done["searches"] > 0
    assert store.count() == len(present)
    long_term = VectorFilter(tiers=("long_term",))
    assert store.count(long_term) == sum(tier == "long_term" for tier in present.values())
    summary.append(
        f"vector stress: {scale.soak_seconds:.0f} s, {done['commits']} commits, "
        f"{done['searches']} search rounds, {len(present)} rows at the end, no failure"
    )


def test_a_waiting_writer_goes_before_new_readers_and_a_reader_may_read_again() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    first_in = threading.Event()
    release_first = threading.Event()

    def first_reader() -> None:
        with lock.reading():
            first_in.set()
            release_first.wait(5)
            with lock.reading():  # nested while a writer waits: not a deadlock
                order.append("nested read")

    def writer() -> None:
        with lock.exclusive():
            order.append("write")

    def late_reader() -> None:
        with lock.reading():
            order.append("late read")

    reader = threading.Thread(target=first_reader)
    reader.start()
    assert first_in.wait(5)
    waiting_writer = threading.Thread(target=writer)
    waiting_writer.start()
    while not lock._writers_waiting:
        time.sleep(0.001)
    late = threading.Thread(target=late_reader)
    late.start()
    time.sleep(0.1)
    assert order == []  # the late reader waits behind the writer
    release_first.set()
    for thread in (reader, waiting_writer, late):
        thread.join(5)
    assert order == ["nested read", "write", "late read"]
