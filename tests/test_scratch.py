"""Scratch work that does not outlive its process (emem_graph/scratch.py): a stop signal unwinds
the block and then reaches the handler it had before; stale directories are removed only when
their owner file proves them of the kind asked for and their process gone. (tests/test_migrate.py
stops and kills a real migrate.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emem_graph.scratch import (
    OWNER_FILE,
    make_scratch,
    remove_stale_scratch,
    run_child,
    unwind_on_stop_signals,
)

KIND = "a test's scratch"
NAME = re.compile(r"\.work-[a-z0-9_]+")


class Stopped(Exception):
    pass


def test_a_stop_signal_unwinds_the_block_then_reaches_the_handler_it_had_before() -> None:
    seen: list[int] = []

    def record(signum: int, _frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, record)
    cleaned = []
    try:
        with (
            pytest.raises(Stopped, match="stopped by SIGTERM"),
            unwind_on_stop_signals(lambda name: Stopped(f"stopped by {name}")),
        ):
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(10)
                pytest.fail("the signal did not unwind the block")
            finally:
                cleaned.append("finally")
        assert cleaned == ["finally"]
        assert seen == [signal.SIGTERM]  # the handler of before, called once, after the cleanup
        assert signal.getsignal(signal.SIGTERM) is record
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_block_that_ends_puts_the_handlers_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    with unwind_on_stop_signals(Stopped):
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
        answer = run_child([sys.executable, "-c", "print('ok')"], env=dict(os.environ), timeout=60)
    assert answer.stdout == "ok\n"
    assert {sig: signal.getsignal(sig) for sig in before} == before


def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def owned_by(scratch: Path, **changes: object) -> None:
    """Rewrite fields of ``scratch``'s owner file."""
    owner = json.loads((scratch / OWNER_FILE).read_text())
    owner.update(changes)
    (scratch / OWNER_FILE).write_text(json.dumps(owner))


def test_only_a_scratch_directory_of_the_kind_whose_process_is_gone_is_removed(
    tmp_path: Path,
) -> None:
    gone = dead_pid()
    dead = make_scratch(tmp_path, ".work-", KIND)
    owned_by(dead, pid=gone, started=None)
    living = make_scratch(tmp_path, ".work-", KIND)  # this process's own
    other_kind = make_scratch(tmp_path, ".work-", "another program's")
    owned_by(other_kind, pid=gone, started=None)
    moved = make_scratch(tmp_path, ".work-", KIND)  # its owner file names another directory
    owned_by(moved, pid=gone, started=None, directory=".work-elsewhere")
    unmarked = tmp_path / ".work-unmarked"
    (unmarked / "data").mkdir(parents=True)
    other_name = make_scratch(tmp_path, ".other-", KIND)
    owned_by(other_name, pid=gone, started=None)
    link = tmp_path / ".work-link"
    link.symlink_to(other_name)

    assert remove_stale_scratch(tmp_path, NAME, KIND) == [dead.name]
    assert not dead.exists()
    for kept in (living, other_kind, moved, unmarked, other_name, link):
        assert kept.exists(), kept
