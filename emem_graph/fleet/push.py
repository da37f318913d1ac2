"""push_memory: send what changed in one robot's memory since its last push to the fleet.

A push writes the robot's files at the fleet location (layout.py: where each lies, and the
validating reader of each) and rows of the shared table (shared_table.py).

A push numbered N+1 (N is the manifest's) writes, in order: the graph files, the shared-table
rows (``push = N+1``), the state, and last the manifest naming N+1: the commit. Readers take
only what a committed manifest names (rows with ``push <= N``), so a push cut anywhere before
the manifest leaves nothing visible; the next push first deletes the rows the cut one left
(``push > N``), then writes N+1 again. After the commit, every row of the robot that the
committed push no longer shows is deleted: older versions of a record, and every version of a
record gone or without a vector now. That cleanup covers the robot's whole table, not only the
rows the push rewrote, so a push cut after its commit leaves its superseded rows to the next
push (one with nothing to send included), which deletes them. A push that finds nothing
changed writes no object and no table version but that cleanup's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.errors import InvalidInputError
from emem_graph.explore.export import VECTOR_KINDS
from emem_graph.fleet.frame import Frame
from emem_graph.fleet.layout import (
    INDEX,
    MAX_PUSH,
    REMOVED,
    check_robot,
    graph_folder,
    manifest_path,
    push_lock_path,
    pushed_tables,
    read_manifest,
    read_removed,
    read_state,
    state_path,
)
from emem_graph.fleet.location import DamagedFleetFileError, FleetLocation, FleetStorageError
from emem_graph.fleet.shared_table import SharedTable, sql_in, sql_text
from emem_graph.fleet.snapshot import Snapshot, empty_state, read_snapshot, shared_rows

FORMAT = "emem-graph-fleet"
FORMAT_VERSION = 1
MARKER = "fleet.json"
DELETE_CHUNK = 500
"""Ids per delete statement (LanceDB filters are SQL text)."""


@dataclass
class PushReport:
    """What one push sent."""

    robot: str
    push: int
    """The robot's committed push number after this one (unchanged when nothing changed)."""
    changed: dict[str, int] = field(default_factory=dict)
    """Rows new or changed per graph table."""
    removed: int = 0
    vector_rows: int = 0
    bytes_written: int = 0
    """Bytes of the graph and state objects (the shared-table rows not counted)."""
    seconds: float = 0.0

    @property
    def nothing_changed(self) -> bool:
        """Whether the push found nothing to send."""
        return not any(self.changed.values()) and not self.removed

    def describe(self) -> str:
        """One or two lines for the command line."""
        if self.nothing_changed:
            return f"robot {self.robot}: nothing changed since push {self.push}"
        tables = ", ".join(f"{name} {n}" for name, n in self.changed.items() if n)
        return (
            f"robot {self.robot}: push {self.push} committed in {self.seconds:.1f} s: "
            f"{sum(self.changed.values())} rows new or changed ({tables}), {self.removed} "
            f"removed, {self.vector_rows} vectors, {self.bytes_written} bytes of graph and state"
        )


def push_memory(
    directory: str | Path,
    location: FleetLocation | str,
    robot: str,
    *,
    frame: Frame | None = None,
) -> PushReport:
    """Push what changed in the memory in ``directory`` since ``robot``'s last push.

    Args:
        directory: the robot's memory (opened read-only: it is never changed).
        location: the fleet's root (a FleetLocation or its URI).
        robot: the robot's name in the fleet.
        frame: the robot's frame-to-fleet transform; None keeps the last push's (identity for
            a first push). A new frame re-sends every row with moved positions.

    Returns:
        What was sent.

    Raises:
        InvalidInputError: a bad robot name, a directory without a memory, a root that holds
            something other than a fleet.
        DamagedFleetFileError: the robot's last push at the location (its manifest, state,
            index or removed rows) is not what a push writes; nothing is pushed.
        FleetStorageError: the fleet location could not be read or written.
    """
    started = time.monotonic()
    check_robot(robot)
    where = location if isinstance(location, FleetLocation) else FleetLocation(location)
    # The root is claimed first: on a disk a robot's lock file is no fleet's first file, so
    # robots pushing their first push at once all find the marker, or an empty root.
    _claim_root(where)
    with push_lock(where, robot, directory):
        try:
            return _push(directory, where, robot, frame, started)
        except DamagedFleetFileError as exc:
            raise DamagedFleetFileError(
                f"{exc}; nothing was pushed: restore robot {robot}'s folder at the fleet from a "
                f"backup, or delete {where}/robots/{robot} and push the robot again"
            ) from exc


@contextlib.contextmanager
def push_lock(where: FleetLocation, robot: str, directory: str | Path) -> Iterator[None]:
    """Hold the lock on pushing ``robot``'s memory ``directory`` to ``where``: a second push
    of the same robot (a cron job beside a manual push) is refused at once instead of
    deleting the first one's uncommitted rows as a cut push's.

    The lock lies beside the data it guards, so that no setting of a push's environment
    (TMPDIR, HOME, XDG_*) nor its user can split it:

    - a fleet on a disk: the file ``robots/<robot>/.push.lock`` in the robot's folder at the
      fleet (layout.push_lock_path). Every push of that robot to that fleet meets it, from
      other hosts too where the file system shares locks between hosts (NFS does). No reader
      lists a robot's folder, and the file stays: deleting it would let a push still waiting
      on it and one on a new file run at once.
    - a fleet in an object store, which offers no lock: the memory directory itself, locked
      without a file in it. The memory stays unchanged (a push only reads it; it may lie on
      read-only media, where no file can be made), and every push of that memory meets the
      lock, whoever runs it. The price: one memory pushes to object stores one push at a
      time, also to two fleets or under two names. A per-user lock file instead would hang
      on HOME and miss a push by another user (a cron job running as root).

    An advisory lock (flock) that the kernel releases when the process ends, killed or not.
    Two hosts pushing one robot name to an object store is a misconfiguration this cannot
    see: a robot's name must be its own.

    Raises:
        InvalidInputError: another push holds the lock; for an object store, ``directory``
            is no directory.
        FleetStorageError: the lock cannot be made or taken (the robot's folder at a disk
            fleet cannot be written; a file system that cannot lock a directory, as NFS).
    """
    if where.is_s3:
        target = Path(directory)
        what = f"the memory directory {target}"
        busy = (
            f"another push of the memory in {target} to an object-store fleet is running; "
            "wait for it to end (pushes of one memory to object stores run one at a time)"
        )
        try:
            fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise InvalidInputError(
                f"{target} is no directory: give the directory of the robot's memory"
            ) from None
        except OSError as exc:
            raise FleetStorageError(f"cannot open {what} ({exc.strerror or exc})") from None
    else:
        target = Path(where.root) / push_lock_path(robot)
        what = f"the push lock {target}"
        busy = (
            f"another push of robot {robot!r} to {where} is running; wait for it to end "
            "(pushes of one robot run one at a time)"
        )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise FleetStorageError(
                f"cannot open {what} ({exc.strerror or exc}); the fleet's folder must be "
                "writable by the push"
            ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InvalidInputError(busy) from None
        except OSError as exc:
            raise FleetStorageError(
                f"cannot lock {what} ({exc.strerror or exc}); pushes need a file system "
                "that locks (a local disk)"
            ) from None
        yield
    finally:
        os.close(fd)  # the lock goes with its descriptor


def _push(
    directory: str | Path,
    where: FleetLocation,
    robot: str,
    frame: Frame | None,
    started: float,
) -> PushReport:
    manifest = read_manifest(where, robot)
    committed = 0 if manifest is None else manifest.push
    if committed >= MAX_PUSH:
        raise InvalidInputError(
            f"robot {robot} has pushed {committed} times, the most a fleet numbers; push the "
            "robot under a new name"
        )
    if frame is None:
        frame = Frame() if manifest is None else manifest.frame
    read = read_state(where, robot, committed) if committed else None
    if committed:
        # A push goes on only from a last push it can read whole (layout.py checks each file).
        pushed_tables(where, robot, committed)
        read_removed(where, robot, committed)
    state = empty_state() if read is None else read[0]
    snapshot = read_snapshot(directory, robot, frame)
    changed, removed = _changes(snapshot, state)
    report = PushReport(robot=robot, push=committed)
    report.changed = {name: table.num_rows for name, table in changed.items()}
    report.removed = removed.num_rows
    shared = SharedTable(where)
    if report.nothing_changed and manifest is not None and manifest.frame == frame:
        _finish_cleanup(shared, robot, committed, snapshot)
        return report
    push = committed + 1
    shared.ensure(snapshot.dim)
    # A push cut before its manifest left rows nobody can see: gone before they are rewritten.
    shared.delete(f"robot = {sql_text(robot)} AND push > {committed}")
    graph = graph_folder(robot, push)
    written = []
    for name, table in changed.items():
        if table.num_rows:
            body = table.drop_columns([c for c in ("vector", "digest") if c in table.schema.names])
            report.bytes_written += _write(where, f"{graph}/{name}.parquet", body)
            written.append(name)
    report.bytes_written += _write(where, f"{graph}/{REMOVED}", removed)
    # The push's table files, named: a cut push of the same number may have left others.
    where.write_json(f"{graph}/{INDEX}", {"tables": written})
    for name in VECTOR_KINDS:
        rows = shared_rows(robot, name, changed[name], push, snapshot.dim)
        shared.append(rows)
        report.vector_rows += rows.num_rows
    report.bytes_written += _write(where, state_path(robot, push), snapshot.digests())
    where.write_json(
        manifest_path(robot),
        {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "robot": robot,
            "push": push,
            "frame": frame.as_list(),
            "embedding_dim": snapshot.dim,
            "pushed_at": time.time(),
            "rows": {name: table.num_rows for name, table in snapshot.tables.items()},
        },
    )
    report.push = push
    _finish_cleanup(shared, robot, push, snapshot)
    report.seconds = time.monotonic() - started
    return report


def _claim_root(where: FleetLocation) -> None:
    """Mark an empty root as a fleet's; refuse one that holds anything but a fleet. A first
    push writes the marker before anything else, so a root that is not empty has it (robots
    pushing their first push at once all find it, or all find the root empty)."""
    if not where.names_under(""):
        where.write_json(MARKER, {"format": FORMAT, "version": FORMAT_VERSION})
        return
    marker = where.read_json(MARKER)
    if marker is None:
        raise InvalidInputError(
            f"{where} holds files but no {MARKER}: it is not an emem-graph fleet, and a push "
            "never writes among files it did not create; give an empty or new location"
        )
    if marker.get("format") != FORMAT:
        raise InvalidInputError(f"{where}/{MARKER} is not an emem-graph fleet marker")


def _changes(snapshot: Snapshot, state: pa.Table) -> tuple[dict[str, pa.Table], pa.Table]:
    """Rows new or changed per table since ``state``, and (table, key) of rows gone."""
    changed: dict[str, pa.Table] = {}
    gone_tables: list[str] = []
    gone_keys: list[str] = []
    for name, table in snapshot.tables.items():
        before = state.filter(pc.equal(state.column("table"), name))
        known = pc.is_in(table.column("digest"), value_set=before.column("digest"))
        changed[name] = table.filter(pc.invert(known))
        still = pc.is_in(before.column("key"), value_set=table.column("key"))
        missing = before.filter(pc.invert(still)).column("key").to_pylist()
        gone_tables.extend([name] * len(missing))
        gone_keys.extend(missing)
    removed = pa.table(
        {"table": pa.array(gone_tables, pa.string()), "key": pa.array(gone_keys, pa.string())}
    )
    return changed, removed


def _write(where: FleetLocation, relative: str, table: pa.Table) -> int:
    where.write_parquet(relative, table)
    return int(table.nbytes)


def _finish_cleanup(shared: SharedTable, robot: str, push: int, snapshot: Snapshot) -> None:
    """Delete every shared-table row of ``robot`` that its committed push ``push`` no longer
    shows: the versions of a record older than its newest, and every version of a record that
    has no vector in ``snapshot`` (the memory as push ``push`` holds it: gone, or archived).
    Idempotent, and over all of the robot's rows: a push cut after its commit left its
    superseded rows, and the next push deletes them with its own. Rows of pushes after
    ``push`` (a cut push's, never visible) are left to the next push's first delete."""
    if push < 1 or not shared.exists:
        return
    live: set[str] = set()
    for name in VECTOR_KINDS:
        table = snapshot.tables[name]
        live.update(table.filter(table.column("vector").is_valid()).column("id").to_pylist())
    mine = f"robot = {sql_text(robot)}"
    rows = shared.scan(f"{mine} AND push <= {push}", ["id", "push"])
    pairs = list(zip(rows.column("id").to_pylist(), rows.column("push").to_pylist(), strict=True))
    newest: dict[str, int] = {}
    for record, version in pairs:
        newest[record] = max(version, newest.get(record, version))
    gone = sorted(record for record in newest if record not in live)
    superseded: dict[int, set[str]] = {}
    for record, version in pairs:
        if record in live and version < newest[record]:
            superseded.setdefault(newest[record], set()).add(record)
    for chunk in _chunks(gone, DELETE_CHUNK):
        shared.delete(f"{mine} AND push <= {push} AND {sql_in('id', chunk)}")
    for version, records in sorted(superseded.items()):
        for chunk in _chunks(sorted(records), DELETE_CHUNK):
            shared.delete(f"{mine} AND push < {version} AND {sql_in('id', chunk)}")


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
