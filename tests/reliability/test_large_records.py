"""A large record written, acknowledged and then SIGKILLed survives the reopen.

LadybugDB (the maintained fork of Kuzu) was reported to lose a write-ahead-log record over
~2 KB after a hard kill (0.18.3: the record lost, or the database unopenable). The memory's
crash guarantee depends on exactly that replay, so it is tested directly on the engine the
run uses (--graph-engine / EMEM_GRAPH_ENGINE): a 10-40 KB observation, flush() returned, then
SIGKILL at once, again and again on one memory; after every kill each acknowledged record must
read back whole.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.storage.graph import GraphDB, resolve_engine
from emem_graph.storage.store import GRAPH_FILE

WRITER = Path(__file__).with_name("wal_writer.py")
sys.path.insert(0, str(WRITER.parent))
from wal_writer import large_text  # noqa: E402

ROUNDS = int(os.environ.get("EMEM_WAL_ROUNDS", "20"))


class Writer:
    """The fork server (wal_writer.py): the library is loaded once, each write is a fork."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.line() == "LOADED"

    def line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def write_and_kill(self, db: Path, seed: int, size: int) -> str:
        """Have a child write one record, SIGKILL it once acknowledged; the record's id."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"RUN {db} {seed} {size}\n")
        self.process.stdin.flush()
        said = self.line()
        assert said.startswith("FLUSHED "), f"the writer said {said!r}"
        _, oid, pid = said.split()
        os.kill(int(pid), signal.SIGKILL)
        assert self.line() == "EXIT -9"
        return oid

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)


def stored_texts(db: Path) -> dict[str, str]:
    graph = GraphDB(db / GRAPH_FILE, read_only=True)
    try:
        rows = graph.query_text("MATCH (o:Observation) RETURN o.id AS id, o.text AS text")
    finally:
        graph.close()
    return {row["id"]: row["text"] for row in rows}


@pytest.mark.slow
def test_a_large_record_acknowledged_then_sigkilled_reopens_intact(
    tmp_path: Path, summary: list[str]
) -> None:
    db = tmp_path / "mem"
    expected: dict[str, str] = {}
    started = time.monotonic()
    writer = Writer()
    try:
        for round_ in range(ROUNDS):
            size = 10_000 + (round_ * 1_531) % 30_000
            oid = writer.write_and_kill(db, round_, size)
            expected[oid] = large_text(round_, size)
            stored = stored_texts(db)
            for known, text in expected.items():
                assert stored.get(known) == text, f"round {round_}: record {known} not intact"
    finally:
        writer.stop()
    # A read-write open replays and checkpoints the log: every record still whole after it.
    mem = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(db), maintenance_interval=None),
        embedding_provider=HashingEmbedder(384),
    )
    mem.close()
    assert stored_texts(db) == expected
    line = (
        f"large records ({resolve_engine()}): {ROUNDS} SIGKILLs right after a 10-40 KB record "
        f"was acknowledged, {len(expected)} records intact, 0 lost, "
        f"{time.monotonic() - started:.0f} s"
    )
    print(line)
    summary.append(line)
