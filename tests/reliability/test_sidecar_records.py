"""The small files beside a memory's graph and vectors (mark, seals, rebuild note, rows a failed
close kept), damaged in ways the damage matrix did not try, and a close whose last write fails.

Each is either read and its rows kept, or refused with one EmemGraphError line; none blocks
opening an intact memory, none is read whole when it has grown huge, and a read-only open
never answers from a memory that still has acknowledged rows waiting to be written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import RecoveryNeededError, StorageError
from emem_graph.explore.stats import format_stats, memory_stats
from emem_graph.ingest.unwritten import UNWRITTEN_FILE, UnwrittenRows
from emem_graph.storage import probe
from emem_graph.storage.health import MARK_FILE, RECORD_MAX_BYTES, read_json_record
from emem_graph.storage.store import GRAPH_FILE, VECTOR_DIR

DEEP = "[" * 200_000 + "]" * 200_000  # past the JSON parser's recursion depth


class FlakyEmbedder(HashingEmbedder):
    """The hashing embedder, made unreachable on demand (an Ollama server going away)."""

    broken = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.broken:
            raise ConnectionError("embedder unreachable")
        return super().embed(texts)


def _config(path: Path) -> MemoryConfig:
    return MemoryConfig(
        db_path=str(path), maintenance_interval=None, flush_interval=600.0, flush_batch_size=100
    )


def _memory(path: Path, *, rows: int = 5) -> None:
    with SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384)) as m:
        for i in range(rows):
            m.add(f"row {i}", float(i), 0.0)


def _count(path: Path, *, read_only: bool = False) -> int:
    with SpatioTemporalMemory(
        config=_config(path), embedding_provider=HashingEmbedder(384), read_only=read_only
    ) as memory:
        return memory.store.counts()["observations"]


@pytest.mark.parametrize("line", ["[1, 2]", "null", "5", '"text"', DEEP])
def test_a_kept_rows_file_with_a_line_that_is_no_row_is_refused_in_one_line(
    tmp_path: Path, line: str
) -> None:
    # A JSON line that was not an object raised a bare AttributeError, deep nesting a bare
    # RecursionError.
    path = tmp_path / "mem"
    _memory(path)
    (path / UNWRITTEN_FILE).write_text(line + "\n")
    with pytest.raises(StorageError, match="move it away") as refused:
        SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384))
    assert len(str(refused.value).splitlines()) == 1
    assert (path / UNWRITTEN_FILE).read_text() == line + "\n"  # left as it is


@pytest.mark.parametrize(
    "record",
    [MARK_FILE, probe.seal_path(Path(GRAPH_FILE)).name, probe.seal_path(Path(VECTOR_DIR)).name],
)
@pytest.mark.parametrize("read_only", [False, True])
def test_a_mark_or_seal_nested_past_the_parser_does_not_block_an_intact_memory(
    tmp_path: Path, record: str, read_only: bool
) -> None:
    # A bare RecursionError, or "cannot open graph database ... restore it from a backup"
    # for an intact graph whose seal alone was damaged.
    path = tmp_path / "mem"
    _memory(path)
    (path / record).write_text(DEEP)
    assert _count(path, read_only=read_only) == 5


def test_a_record_grown_huge_is_damaged_without_being_read_whole(tmp_path: Path) -> None:
    # A 1 GiB zero-filled mark took 2.3 GB of memory and 25-32 s to open.
    path = tmp_path / "mem"
    _memory(path)
    with (path / MARK_FILE).open("wb") as mark:
        mark.truncate(1 << 30)  # sparse: no disk used
    started = time.monotonic()
    with pytest.raises(ValueError, match="larger than"):
        read_json_record(path / MARK_FILE)
    assert _count(path) == 5
    assert time.monotonic() - started < 20.0  # bounded by the open, not by a 1 GiB read
    assert (path / MARK_FILE).stat().st_size <= RECORD_MAX_BYTES  # rewritten at the open


def test_a_close_whose_last_write_fails_says_where_the_rows_are_and_loses_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mem"
    embedder = FlakyEmbedder(384)
    memory = SpatioTemporalMemory(config=_config(path), embedding_provider=embedder)
    memory.add("warm up", 0.0, 0.0)
    memory.flush()
    for i in range(7):
        memory.add(f"kept row {i}", 3.0, 3.0)
    chair = memory.add_entity("red chair", 1.0, 1.0)
    embedder.broken = True
    # The staged entity's write failed too, after the observations': its bare ConnectionError
    # replaced the StorageError that names unwritten.jsonl.
    with pytest.raises(StorageError, match=UNWRITTEN_FILE):
        memory.close()
    assert len(UnwrittenRows(path).load()) == 7
    assert [s["entity_id"] for s in UnwrittenRows(path).load_sightings()] == [chair]
    # Read-only, the memory would answer without seven acknowledged observations: refused,
    # as for a vector journal still to replay; stats counts them.
    with pytest.raises(RecoveryNeededError, match="read-write once"):
        _count(path, read_only=True)
    stats = memory_stats(path)
    assert stats.unwritten_observations == 8  # seven observations and the chair
    assert "left unwritten by a failed close" in format_stats(stats)
    assert _count(path) == 8  # the read-write open wrote them, and the chair
    assert not (path / UNWRITTEN_FILE).exists()
    assert _entity(path, chair) == ("red chair", 1)
    assert memory_stats(path).unwritten_observations == 0
    assert _count(path, read_only=True) == 8


def test_sightings_a_close_could_not_write_are_kept_under_the_ids_add_entity_returned(
    tmp_path: Path,
) -> None:
    # Staged add_entity() sightings went with the process when their write failed at close:
    # the id the caller got named no entity after a reopen.
    path = tmp_path / "mem"
    with SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384)) as m:
        lamp = m.add_entity("reading lamp", 5.0, 5.0)
    embedder = FlakyEmbedder(384)
    memory = SpatioTemporalMemory(config=_config(path), embedding_provider=embedder)
    again = memory.add_entity("reading lamp", 5.1, 5.0)  # merges into the lamp
    mug = memory.add_entity("green mug", 9.0, 9.0)  # a new entity
    assert again == lamp
    embedder.broken = True
    with pytest.raises(StorageError, match="2 staged entity sightings could not be written"):
        memory.close()
    broken = FlakyEmbedder(384)
    broken.broken = True
    SpatioTemporalMemory(config=_config(path), embedding_provider=broken).close()
    assert len(UnwrittenRows(path).load_sightings()) == 2  # still failing: kept, not counted
    assert _entity(path, lamp) == ("reading lamp", 2)
    assert _entity(path, mug) == ("green mug", 1)
    assert not (path / UNWRITTEN_FILE).exists()
    assert _entity(path, lamp) == ("reading lamp", 2)  # written once


def _entity(path: Path, entity_id: str) -> tuple[str, int] | None:
    with SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384)) as m:
        entity = m.store.get_entity(entity_id)
        return None if entity is None else (entity.name, entity.observation_count)


def test_a_failed_close_leaves_the_store_closed(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    embedder = FlakyEmbedder(384)
    memory = SpatioTemporalMemory(config=_config(path), embedding_provider=embedder)
    memory.add("a row", 0.0, 0.0)
    embedder.broken = True
    with pytest.raises(StorageError):
        memory.close()
    assert os.path.exists(path / UNWRITTEN_FILE)
    assert _count(path) == 1  # the directory is free: the failed close released it


def _refuse_graph_writes(memory: SpatioTemporalMemory) -> None:
    """The graph refuses every write from now on (a disk gone)."""

    def refused(*args: object, **kwargs: object) -> None:
        raise StorageError("graph write failed (injected)")

    memory._store.apply = refused  # type: ignore[method-assign]
    memory._store.check_writable = refused  # type: ignore[method-assign]


def test_a_kept_sighting_that_was_a_move_is_written_as_the_move(tmp_path: Path) -> None:
    # Replayed under its kept id it was merged as a plain sighting: the mug seen at 20 m after
    # a look missed it at 0 m ended up at 10 m, where it never was.
    path = tmp_path / "mem"
    with SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384)) as m:
        mug = m.add_entity("red mug", 0.0, 0.0, timestamp=1000.0)
    memory = SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384))
    memory.add("the robot looks at the kitchen counter", 0.5, 0.0, timestamp=1040.0)
    memory.flush()
    assert memory.add_entity("red mug", 20.0, 0.0, timestamp=1050.0) == mug
    _refuse_graph_writes(memory)
    with pytest.raises(StorageError, match="staged entity sightings could not be written"):
        memory.close()
    with SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384)) as m:
        entity = m.store.get_entity(mug)
        assert entity is not None and abs(entity.x - 20.0) < 0.01


def test_a_close_whose_sightings_fail_still_closes_every_capability(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    memory = SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(384))
    memory.add_entity("green mug", 9.0, 9.0)
    closed: list[str] = []
    for capability in [*memory._capabilities, memory.tools]:
        original = capability.close

        def close(original: object = original, name: str = type(capability).__name__) -> None:
            closed.append(name)
            original()  # type: ignore[operator]

        capability.close = close  # type: ignore[method-assign]
    _refuse_graph_writes(memory)
    with pytest.raises(StorageError):
        memory.close()
    assert len(closed) == len(memory._capabilities) + 1


def test_a_kept_sighting_whose_name_holds_a_line_break_is_written_at_the_next_open(
    tmp_path: Path,
) -> None:
    """A version before names were one line kept "blue\\ncup" in unwritten.jsonl; since names
    with a control character are refused, its replay refused the whole batch at every open and
    the file stayed (a read-only open refused for good). Its line break reads as a space."""
    import uuid

    directory = tmp_path / "mem"

    def opened(**kwargs: Any) -> SpatioTemporalMemory:
        return SpatioTemporalMemory(
            str(directory),
            embedding_provider=HashingEmbedder(64),
            get_current_time=lambda: 1000.0,
            **kwargs,
        )

    opened().close()

    def entry(name: str, layer: str = "vision") -> dict[str, Any]:
        return {
            "entity_id": uuid.uuid4().hex,
            "name": name,
            "x": 1.0,
            "y": 2.0,
            "z": 0.0,
            "timestamp": 900.0,
            "layer": layer,
            "entity_type": None,
            "confidence": 1.0,
            "metadata": {},
        }

    UnwrittenRows(directory).keep([], [entry("red chair"), entry("blue\ncup", "cam\x1bera")])
    with opened() as memory:
        names = memory.entity_query(n_results=10)
    assert "red chair" in names and "blue cup" in names
    assert not (directory / "unwritten.jsonl").exists()
    opened(read_only=True).close()
