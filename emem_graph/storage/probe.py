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

A graph with a write-ahead log (the last run was killed) is replayed on a copy and read whole
before and after the checkpoint that writes the log into the file: Kuzu 0.11.3 was seen to
replay a log right and write it wrong (string values swapped between rows, then SIGSEGV). On
a difference the graph is rebuilt from the replayed rows (rebuild_graph): nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
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

from emem_graph.errors import DamagedMemoryError, StorageError
from emem_graph.storage.health import read_json_record, report_damage

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

REPLAY_PROGRAM = """
import hashlib, importlib, os, sys
import numpy as np, pyarrow as pa, pyarrow.compute as pc
engine = importlib.import_module(sys.argv[2])

def column_digest(digest, array):
    # A column's values in a canonical form: its null mask, then the values that are there
    # (strings as lengths and bytes, lists as lengths and items, numbers as their bytes).
    digest.update(str(array.type).encode())
    digest.update(np.packbits(array.is_null().to_numpy(zero_copy_only=False)).tobytes())
    values = array.drop_null()
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        digest.update(pc.list_value_length(values).to_numpy().tobytes())
        column_digest(digest, pc.list_flatten(values))
    elif pa.types.is_string(values.type) or pa.types.is_binary(values.type):
        digest.update(pc.binary_length(values).to_numpy().tobytes())
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)
        offsets = offsets[values.offset : values.offset + len(values) + 1]
        data = values.buffers()[2]
        if len(values) and data is not None:  # (no data buffer when every string is empty)
            digest.update(memoryview(data)[offsets[0] : offsets[-1]])
    elif pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        digest.update(values.to_numpy().tobytes())
    else:
        digest.update(repr(values.to_pylist()).encode())

def digest(path, keys):
    # Every row of every table in an order of their own. With keys: nodes by primary key,
    # relationships by their ends' keys and their properties (two files compared). Else by
    # the nodes' places in the file (offset), which a checkpoint keeps: cheaper (one file
    # compared before and after its checkpoint).
    db = engine.Database(path)
    connection = engine.Connection(db)
    run = lambda cypher: connection.execute(cypher).get_all()
    total, rows = hashlib.sha256(), 0
    for name, kind in sorted(run("CALL show_tables() RETURN name, type")):
        props = [p for (p,) in run(f"CALL table_info('{name}') RETURN name")]
        if kind == "NODE":
            ends = [] if keys else ["offset(id(n))"]
            returns = ", ".join(ends + [f"n.`{p}`" for p in props])
            queries = [(f"MATCH (n:`{name}`) RETURN {returns}", len(ends))]
        elif kind == "REL":
            queries = []
            for a, b, a_key, b_key in run(
                f"CALL show_connection('{name}') RETURN `source table name`, "
                "`destination table name`, `source table primary key`, "
                "`destination table primary key`"
            ):
                ends = [f"a.`{a_key}`", f"b.`{b_key}`"] if keys else [
                    "offset(id(a))", "offset(id(b))"]
                returns = ", ".join(ends + [f"r.`{p}`" for p in props])
                queries.append(
                    (f"MATCH (a:`{a}`)-[r:`{name}`]->(b:`{b}`) RETURN {returns}", 0))
        else:
            continue
        for query, hidden in queries:
            table = connection.execute(query).get_as_arrow()
            sortable = [c for c, field in zip(table.column_names, table.schema) if not (
                pa.types.is_list(field.type) or pa.types.is_large_list(field.type))]
            order = pc.sort_indices(table, [(c, "ascending") for c in sortable])
            total.update(f"{query} {table.num_rows}".encode())
            for column in table.columns[hidden:]:
                column_digest(total, column.take(order).combine_chunks())
            rows += table.num_rows
            del table, order
    return db, connection, f"{total.hexdigest()[:32]} {rows}"

path, keys = sys.argv[1], sys.argv[3] == "keys"
db, connection, replayed = digest(path, keys)
print("REPLAYED", replayed, flush=True)  # the log replayed, not yet checkpointed
if sys.argv[4] != "twice":
    os._exit(0)  # never checkpointed: the file and its log stay as they were
connection.close()
db.close()  # the checkpoint: the log written into the file
db, connection, checkpointed = digest(path, keys)
print("CHECKPOINTED", checkpointed, flush=True)
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


def wal_path(path: Path) -> Path:
    """The write-ahead log of the graph file ``path`` (beside it, on both engines)."""
    return path.with_name(f"{path.name}.wal")


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
        seal = read_json_record(seal_path(path))
        return seal is not None and seal == _fingerprint(path)
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


def run_in_child(program: str, args: Sequence[str]) -> tuple[str | None, str]:
    """Run ``program`` (Python text) in a child process with ``args``: how it crashed (the
    signal's name, or a timeout; None when it exited, with an error or without, or when no
    child process can be started) and what it printed."""
    try:
        run = subprocess.run(
            [sys.executable, "-c", program, *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish in {PROBE_TIMEOUT_S:.0f} s", ""
    except OSError as exc:
        # No child can be started here (the Cypher sandbox forbids exec: it is itself the
        # child process that contains a crash): open in this process.
        log.debug("no child process for the probe (%s): opening in this one", exc)
        return None, ""
    if run.returncode < 0:
        return signal.Signals(-run.returncode).name, run.stdout
    return None, run.stdout


def crash_in_child(program: str, args: Sequence[str]) -> str | None:
    """Run ``program`` in a child process (run_in_child): how it crashed, or None."""
    return run_in_child(program, args)[0]


def _printed(output: str, word: str) -> str | None:
    """The digest a REPLAY_PROGRAM child printed after ``word``, if it got that far."""
    for line in output.splitlines():
        if line.startswith(f"{word} "):
            return line[len(word) + 1 :]
    return None


def check_graph(path: Path, *, read_only: bool, engine: str = "kuzu") -> None:
    """Open the graph file ``path`` in a child process first unless it is sealed.

    With a write-ahead log beside the graph (the last run was killed), the child replays it on
    a copy of both files and reads every row twice: replayed, and again after the engine wrote
    the log into the file (its checkpoint). Then:

    - the child crashes replaying: the log is tried again without it: moved aside
      (``graph.kuzu.wal.damaged-<time>``, never deleted) and reported; the writes it held are
      then missing from the graph, which the graph's high-water mark reports as a loss
      (health.py);
    - the rows differ after the checkpoint, or it crashes there: Kuzu 0.11.3 does this to some
      logs cut by a kill (string columns come back swapped between rows; a later read dies of
      SIGSEGV). Read before its checkpoint the replayed graph is whole, so the graph is rebuilt
      from it (``rebuild_graph``): nothing is lost.

    ``engine`` is the graph engine's module name (kuzu or ladybug), loaded only in the child.

    Raises:
        DamagedMemoryError: the graph engine crashes opening the file (without its log), or
            a rebuild the log needs fails or cannot be made read-only.
    """
    wal = wal_path(path)
    finish_rebuild(path, read_only=read_only)
    if not read_only:
        remove_stale_scratch(path.parent)
    if not path.exists() or is_sealed(path, unsealed_by=[wal]):
        return
    log.debug("opening %s in a child process first (not sealed)", path)
    has_log = wal.exists() and wal.stat().st_size > 0
    if has_log and not read_only:
        # A child replaying the log writes into the graph file (a checkpoint) and may crash
        # half way, leaving it damaged: the log is replayed on a copy of both files.
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".probe-") as scratch:
            copy = _copy_graph(path, wal, Path(scratch))
            crash, output = run_in_child(REPLAY_PROGRAM, [str(copy), engine, "offsets", "twice"])
        replayed = _printed(output, "REPLAYED")
        if replayed is not None and (crash or _printed(output, "CHECKPOINTED") != replayed):
            rebuild_graph(path, engine, crash or "rows changed")
            return
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
        # Without the log, every row read: a file that crashes a full read is damaged itself,
        # and the log was not the cause.
        replay_crash, crash = (
            crash,
            crash_in_child(REPLAY_PROGRAM, [str(path), engine, "offsets", "once"]),
        )
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


SCRATCH_PREFIXES = (".probe-", ".rebuild-")
"""The directories a probe or a rebuild works in beside the graph (removed when it ends)."""
SCRATCH_STALE_S = 4 * PROBE_TIMEOUT_S
"""Such a directory untouched for this long was left by a killed process (a live one's child
would have been stopped long before): the next read-write open removes it."""


def remove_stale_scratch(directory: Path) -> None:
    """Remove the scratch directories of probes and rebuilds that a kill cut short (a copy of
    the graph each: at 1M observations, hundreds of MB per kill)."""
    now = time.time()
    for entry in directory.iterdir():
        if not entry.name.startswith(SCRATCH_PREFIXES) or entry.is_symlink():
            continue
        try:
            if entry.is_dir() and now - entry.stat().st_mtime > SCRATCH_STALE_S:
                shutil.rmtree(entry)
                log.info("removed %s, left by a probe or rebuild that was killed", entry)
        except OSError as exc:
            log.debug("could not remove %s: %s", entry, exc)


def _copy_graph(path: Path, wal: Path, directory: Path) -> Path:
    """Copies of the graph file and its log in ``directory``; the copy of the graph."""
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / path.name
    for source in (path, wal) if wal.exists() else (path,):
        try:
            shutil.copyfile(source, copy.with_name(source.name))
        except OSError as exc:  # a directory in the file's place, a full disk
            raise StorageError(
                f"cannot copy {source} for the check before opening ({exc.strerror or exc}): "
                f"it must be the engine's file, with room for a copy in {directory}"
            ) from exc
    return copy


# --- rebuilding a graph whose log the engine's checkpoint would damage ---------------------------

REBUILD_STEP = (
    "import sys; from emem_graph.storage.graph_rebuild import rebuild_step; "
    "rebuild_step(sys.argv[1:])"
)
"""The child of each rebuild step (storage/graph_rebuild.py: it imports the graph, which
imports this module)."""


def rebuild_marker(path: Path) -> Path:
    """The note a rebuild leaves beside the graph while it swaps files (finish_rebuild)."""
    return path.with_name(f"{path.name}.rebuild.json")


def rebuild_graph(path: Path, engine: str, why: str) -> None:
    """Rebuild the graph file ``path`` from its replayed write-ahead log, in child processes:
    the log replayed on a copy, every table exported as the replay left it (before any
    checkpoint), imported into a new graph file, which must hold the same rows as the
    replayed copy (compared by key). The new file then takes the old one's place; the old
    file and its log are kept beside it (``.before-rebuild-<time>``), never deleted. A kill
    during the swap is finished by the next open (finish_rebuild).

    Raises:
        DamagedMemoryError: a step failed (the files are left as they were).
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    wal = wal_path(path)
    log.warning(
        "the graph engine damages %s writing its write-ahead log into it (%s): rebuilding the "
        "graph from the replayed log",
        path,
        why,
    )

    def refuse(failure: str) -> DamagedMemoryError:
        return DamagedMemoryError(
            f"cannot open graph database {path}: the graph engine damages it writing its "
            f"write-ahead log into it ({why}), and rebuilding the graph from the log failed "
            f"({failure}); restore the memory's directory from a backup"
        )

    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".rebuild-") as scratch:
        work = Path(scratch)
        tables, fresh = work / "tables", work / "fresh" / path.name
        fresh.parent.mkdir()
        # The replayed rows (the child ends without a checkpoint: the copy stays as it was,
        # and the export replays the same log).
        copy = _copy_graph(path, wal, work / "replayed")
        replayed = _printed(
            run_in_child(REPLAY_PROGRAM, [str(copy), engine, "keys", "once"])[1], "REPLAYED"
        )
        for step, graph in (("export", copy), ("import", fresh)):
            crash, output = run_in_child(REBUILD_STEP, [step, str(graph), str(tables), engine])
            if crash is not None or "DONE" not in output.split():
                raise refuse(f"{step}: {crash or output.strip()[-300:] or 'no answer'}")
        crash, output = run_in_child(REPLAY_PROGRAM, [str(fresh), engine, "keys", "once"])
        if replayed is None or crash is not None or _printed(output, "REPLAYED") != replayed:
            raise refuse("the rebuilt graph does not hold the replayed rows")
        rebuilt, kept, wal_kept = _rebuild_names(path, stamp)
        os.replace(fresh, rebuilt)
    marker = rebuild_marker(path)
    temporary = marker.with_name(f".{marker.name}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump({"stamp": stamp}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, marker)
    _fsync_directory(path.parent)
    finish_rebuild(path, read_only=False)
    report_damage(
        path.parent,
        f"the graph engine damages the graph writing its write-ahead log into it ({why})",
        f"the graph was rebuilt from the replayed log, nothing lost; the file and log as they "
        f"were are kept as {kept.name} and {wal_kept.name}",
    )


def _rebuild_names(path: Path, stamp: str) -> tuple[Path, Path, Path]:
    """A rebuild's files beside the graph: the rebuilt graph, the old graph, the old log."""
    wal = wal_path(path)
    return (
        path.with_name(f"{path.name}.rebuilt-{stamp}"),
        path.with_name(f"{path.name}.before-rebuild-{stamp}"),
        wal.with_name(f"{wal.name}.before-rebuild-{stamp}"),
    )


def finish_rebuild(path: Path, *, read_only: bool) -> None:
    """Finish a rebuild that a kill stopped while it swapped files (its note is there): the
    old file and log are set aside, the rebuilt file takes their place. Each step can be
    done again, so a kill here too is finished by the next open.

    Raises:
        DamagedMemoryError: read-only (the swap writes), or the note is not one a rebuild
            writes.
    """
    marker = rebuild_marker(path)
    if not marker.exists():
        return
    if read_only:
        raise DamagedMemoryError(
            f"cannot open graph database {path} read-only: a rebuild of the graph was "
            "interrupted while it swapped files; open the memory read-write once to finish it"
        )
    try:
        note = read_json_record(marker)
        if note is None:
            raise ValueError("it is gone")
        stamp = note["stamp"]
        if not re.fullmatch(r"\d{8}T\d{6}Z", stamp):
            raise ValueError(f"not a time: {stamp!r}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedMemoryError(
            f"cannot open graph database {path}: the note of an interrupted rebuild "
            f"({marker.name}) is unreadable ({exc}); restore the memory's directory from a backup"
        ) from exc
    rebuilt, kept, wal_kept = _rebuild_names(path, stamp)
    wal = wal_path(path)
    if rebuilt.exists():
        if path.exists() and not kept.exists():
            try:  # kept under its new name before the rebuilt file replaces it
                os.link(path, kept)
            except OSError:  # a file system without hard links
                shutil.copy2(path, kept)
        if wal.exists():
            os.replace(wal, wal_kept)
        os.replace(rebuilt, path)
    _fsync_directory(path.parent)
    marker.unlink()


def _fsync_directory(directory: Path) -> None:
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
