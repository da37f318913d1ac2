"""Open a memory's files in a child process first when they might crash the engine, so that a
damaged file is refused or repaired instead of taking the robot's process down.

Kuzu 0.11.3 and Lance raise errors for most damage, but not for all of it: measured on flipped
bytes, about one catalog byte in ten makes ``kuzu.Database`` die of SIGSEGV (and CI saw a
SIGABRT there), and a flipped byte in a full-text index made Lance ask for 68 GB and abort (a
Rust allocation failure ends the process). No Python code survives either. So the graph file
and the vector table are each opened in a child process first (open, read every table, close)
unless they are *sealed*: closed cleanly by this library and unchanged since.

A seal (``graph_seal.json`` beside ``graph.kuzu``, ``vectors_seal.json`` beside ``vectors/``)
is written after a clean close: each file's size, modification time and a hash of its first
and last ``HASHED_BYTES``. Opening read-write removes it first; a write-ahead log beside the
graph, a changed, added or removed file breaks it. So the child runs after a kill, after files
were changed or copied without their times, and on the first open after an upgrade; a clean
close and reopen costs a ``stat`` per file and a hash of each file's ends.

What a child decides: one killed by a signal (or running past ``PROBE_TIMEOUT_S``) means a
damaged store: the caller refuses the graph (DamagedMemoryError) or rebuilds the vector table
from the graph (VectorStoreDamagedError). A child that exits with an error decides nothing:
the open in this process then raises its own, mapped error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emem_graph.errors import DamagedMemoryError
from emem_graph.storage.health import report_damage

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 900.0
"""A child still opening after this long is taken as hung on damage (a write-ahead log of a
day's writes replays in seconds)."""
HASHED_BYTES = 256 << 10
"""Bytes hashed at each end of each file for a seal."""

GRAPH_PROGRAM = """
import importlib, sys
engine = importlib.import_module(sys.argv[3] if len(sys.argv) > 3 else "kuzu")
db = engine.Database(sys.argv[1], read_only=sys.argv[2] == "1")
connection = engine.Connection(db)
for name, kind in connection.execute("CALL show_tables() RETURN name, type").get_all():
    if kind == "NODE":
        connection.execute(f"MATCH (n:`{name}`) RETURN count(*)").get_all()
    elif kind == "REL":
        connection.execute(f"MATCH ()-[r:`{name}`]->() RETURN count(*)").get_all()
connection.close()
db.close()
"""

VECTORS_PROGRAM = """
import sys, warnings
import lancedb, numpy as np
warnings.simplefilter("ignore")
db = lancedb.connect(sys.argv[1])
if sys.argv[2] in db.table_names():
    table = db.open_table(sys.argv[2])
    for batch in table.search().limit(None).to_batches(16384):
        pass
    dim = table.schema.field("vector").type.list_size
    for index in table.list_indices():
        if list(index.columns) == ["vector"]:
            probe = np.zeros(dim, dtype=np.float32)
            probe[0] = 1.0
            table.search(probe, vector_column_name="vector").nprobes(1).limit(1).to_arrow()
        else:
            table.prewarm_index(index.name)
        if list(index.columns) == ["text"]:
            table.search("a", query_type="fts", fts_columns="text").limit(1).to_list()
"""


def seal_path(path: Path) -> Path:
    """Where the seal of the file or directory ``path`` lives (beside it)."""
    return path.with_name(f"{path.stem}_seal.json")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path]


def _fingerprint(path: Path) -> dict[str, Any]:
    prints: dict[str, Any] = {}
    for file in _files(path):
        stat = file.stat()
        digest = hashlib.blake2b(digest_size=16)
        with file.open("rb") as handle:
            digest.update(handle.read(HASHED_BYTES))
            if stat.st_size > 2 * HASHED_BYTES:
                handle.seek(-HASHED_BYTES, os.SEEK_END)
            digest.update(handle.read(HASHED_BYTES))
        prints[file.relative_to(path.parent).as_posix()] = [
            stat.st_size,
            stat.st_mtime_ns,
            digest.hexdigest(),
        ]
    return prints


def is_sealed(path: Path, *, unsealed_by: Sequence[Path] = ()) -> bool:
    """Whether ``path`` was closed cleanly by this library and is unchanged since; never when
    one of ``unsealed_by`` (a write-ahead log) exists and is not empty."""
    try:
        if any(p.exists() and p.stat().st_size > 0 for p in unsealed_by):
            return False
        seal = json.loads(seal_path(path).read_text(encoding="utf-8"))
        return isinstance(seal, dict) and seal == _fingerprint(path)
    except (OSError, ValueError):
        return False


def write_seal(path: Path) -> None:
    """Seal ``path`` after a clean close (best effort: no seal only means a probe next time)."""
    target = seal_path(path)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_text(json.dumps(_fingerprint(path)), encoding="utf-8")
        os.replace(temporary, target)
    except OSError as exc:
        log.debug("could not seal %s: %s", path, exc)
    finally:
        temporary.unlink(missing_ok=True)


def break_seal(path: Path) -> None:
    """Remove the seal of ``path`` before it is opened read-write (it will change)."""
    try:
        seal_path(path).unlink(missing_ok=True)
    except OSError as exc:
        log.debug("could not remove the seal of %s: %s", path, exc)


def crash_in_child(program: str, args: Sequence[str]) -> str | None:
    """Run ``program`` (Python text) in a child process with ``args``: how it crashed (the
    signal's name, or a timeout), or None when it exited, with an error or without, or when
    no child process can be started."""
    try:
        run = subprocess.run(
            [sys.executable, "-c", program, *args],
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish in {PROBE_TIMEOUT_S:.0f} s"
    except OSError as exc:
        # No child can be started here (the Cypher sandbox forbids exec: it is itself the
        # child process that contains a crash): open in this process.
        log.debug("no child process for the probe (%s): opening in this one", exc)
        return None
    if run.returncode < 0:
        return signal.Signals(-run.returncode).name
    return None


def check_graph(path: Path, *, read_only: bool, engine: str = "kuzu") -> None:
    """Open the graph file ``path`` in a child process first unless it is sealed.

    A child that crashes with a write-ahead log beside the graph is tried again without it:
    opened read-write, the log is moved aside (``graph.kuzu.wal.damaged-<time>``, never
    deleted) and reported; the writes it held are then missing from the graph, which the
    graph's high-water mark reports as a loss (health.py). ``engine`` is the graph engine's
    module name (kuzu or ladybug), loaded only in the child.

    Raises:
        DamagedMemoryError: the graph engine crashes opening the file (without its log).
    """
    wal = path.with_name(f"{path.name}.wal")
    if not path.exists() or is_sealed(path, unsealed_by=[wal]):
        return
    log.debug("opening %s in a child process first (not sealed)", path)
    has_log = wal.exists() and wal.stat().st_size > 0
    if has_log and not read_only:
        # A child replaying the log writes into the graph file (a checkpoint) and may crash
        # half way, leaving it damaged: the log is replayed on a copy of both files.
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".probe-") as scratch:
            copy = Path(scratch) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, copy.with_name(wal.name))
            crash = crash_in_child(GRAPH_PROGRAM, [str(copy), "0", engine])
    else:
        crash = crash_in_child(GRAPH_PROGRAM, [str(path), str(int(read_only)), engine])
    if crash is not None and has_log:
        if read_only:
            raise DamagedMemoryError(
                f"cannot open graph database {path}: the graph engine crashed replaying its "
                f"write-ahead log ({crash}; damaged); open the memory read-write once to set "
                "the log aside, or restore the memory's directory from a backup"
            )
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = wal.with_name(f"{wal.name}.damaged-{stamp}")
        os.replace(wal, aside)
        replay_crash, crash = crash, crash_in_child(GRAPH_PROGRAM, [str(path), "0", engine])
        if crash is not None:  # the graph file itself: the log goes back where it was
            os.replace(aside, wal)
        else:
            report_damage(
                path.parent,
                f"the graph's write-ahead log crashed the graph engine on replay ({replay_crash})",
                f"it was moved to {aside.name}; the writes it held are not in the graph",
            )
    if crash is not None:
        raise DamagedMemoryError(
            f"cannot open graph database {path}: the graph engine crashed opening it ({crash}; "
            "damaged); restore the memory's directory from a backup"
        )
