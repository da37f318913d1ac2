"""Where each robot's files lie at a fleet location, and the one reader of each.

    fleet.json                              marks the root as a fleet's (written once)
    vectors/fleet_records.lance             the shared table (shared_table.py)
    robots/<robot>/manifest.json            the robot's last committed push: its number, frame
    robots/<robot>/state/<push>.parquet     (table, key, digest) of every row pushed so far
    robots/<robot>/graph/<push>/<T>.parquet the rows of graph table T new or changed in a push
    robots/<robot>/graph/<push>/_removed.parquet   (table, key) of rows gone since the push before
    robots/<robot>/graph/<push>/_index.json        the table files of the push
    robots/<robot>/.push.lock               on a disk: the lock a push of the robot holds

push.py writes these files; every reader (a push reading its robot's last one, FleetMemory,
the replica) reads them through the functions here, which check that a file has the shape
push.py writes. A file that does not (a hostile or damaged one) raises DamagedFleetFileError,
naming the file and what is wrong with it: a push of that robot stops in one line, and the
fleet's answers and its replica leave that robot out with a warning (one robot's files never
stop the fleet from answering about the others).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from emem_graph.errors import InvalidInputError
from emem_graph.explore.selection import NODE_TABLES, REL_ENDS
from emem_graph.fleet.frame import Frame
from emem_graph.fleet.location import DamagedFleetFileError, FleetLocation

MANIFEST = "manifest.json"
INDEX = "_index.json"
"""Names the table files of a push (in its graph folder)."""
REMOVED = "_removed.parquet"
PUSH_LOCK = ".push.lock"
"""The file a push of the robot locks, in its folder (a fleet on a disk: push.push_lock); no
reader lists a robot's folder, and nothing deletes it."""
MAX_ROBOT_CHARS = 64
ROBOT_RE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_ROBOT_CHARS - 1}}}")
"""A robot's name, matched whole (``fullmatch``: ``$`` would let a final newline through)."""
TABLE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
"""A graph table's name, as an index lists it (its file is ``<name>.parquet``), matched whole."""
MAX_PUSH = 99_999_999
"""The largest push number: a push's folder and state are named by its 8-digit number."""
STATE_COLUMNS = ("table", "key", "digest")
REMOVED_COLUMNS = ("table", "key")


@dataclass(frozen=True)
class Manifest:
    """A robot's committed push, as its manifest names it."""

    push: int
    """The last committed push (0: none yet)."""
    frame: Frame
    """The robot's frame-to-fleet transform that push used."""


def check_robot(robot: str) -> str:
    """The robot name, if it may name a prefix: letters, digits, ``_.-``, at most 64.

    Raises:
        InvalidInputError: any other name.
    """
    if not isinstance(robot, str) or not ROBOT_RE.fullmatch(robot):
        raise InvalidInputError(
            f"robot name {robot!r}: use 1-{MAX_ROBOT_CHARS} letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return robot


def robot_prefix(robot: str) -> str:
    """The robot's folder under the fleet's root."""
    return f"robots/{robot}"


def push_lock_path(robot: str) -> str:
    """The file a push of the robot locks at a fleet on a disk."""
    return f"{robot_prefix(robot)}/{PUSH_LOCK}"


def manifest_path(robot: str) -> str:
    """The robot's manifest (its commit)."""
    return f"{robot_prefix(robot)}/{MANIFEST}"


def state_path(robot: str, push: int) -> str:
    """The state (table, key, digest of every row) of the robot's push ``push``."""
    return f"{robot_prefix(robot)}/state/{push:08d}.parquet"


def graph_folder(robot: str, push: int) -> str:
    """The folder of the graph rows of the robot's push ``push``."""
    return f"{robot_prefix(robot)}/graph/{push:08d}"


def read_manifest(where: FleetLocation, robot: str) -> Manifest | None:
    """The robot's committed push and frame; None when it has no manifest (it never
    committed a push).

    Raises:
        DamagedFleetFileError: the manifest is not what a push writes: ``push`` a whole
            number from 0 to MAX_PUSH, ``frame`` three finite numbers [x, y, yaw].
        FleetStorageError: the location could not be read.
    """
    relative = manifest_path(robot)
    manifest = where.read_json(relative)
    if manifest is None:
        return None
    push = manifest.get("push")
    if not isinstance(push, int) or isinstance(push, bool) or not 0 <= push <= MAX_PUSH:
        raise _damaged(
            where, relative, f"push must be a whole number from 0 to {MAX_PUSH}, got {_shown(push)}"
        )
    frame = manifest.get("frame")
    if not (isinstance(frame, list) and len(frame) == 3 and all(map(_finite, frame))):
        raise _damaged(
            where, relative, f"frame must be [x, y, yaw], three finite numbers, got {_shown(frame)}"
        )
    try:
        placed = Frame(*(float(value) for value in frame))
    except InvalidInputError as exc:
        raise _damaged(where, relative, f"frame {_shown(frame)}: {exc}") from None
    return Manifest(push=push, frame=placed)


def read_committed(where: FleetLocation) -> tuple[dict[str, Manifest], dict[str, str]]:
    """Every robot that committed a push, with its manifest; and the names under ``robots/``
    left out, each with why: a damaged manifest, or a name no robot has.

    Raises:
        FleetStorageError: the location could not be read.
    """
    committed: dict[str, Manifest] = {}
    damaged: dict[str, str] = {}
    for robot in where.names_under("robots"):
        if not ROBOT_RE.fullmatch(robot):
            damaged[robot] = f"{where}/robots: {robot!r} is no robot's name, so no push made it"
            continue
        try:
            manifest = read_manifest(where, robot)
        except DamagedFleetFileError as exc:
            damaged[robot] = str(exc)
            continue
        if manifest is not None and manifest.push > 0:
            committed[robot] = manifest
    return committed, damaged


def read_index(where: FleetLocation, robot: str, push: int) -> list[str]:
    """The graph tables whose files the robot's push ``push`` wrote (none when the push has
    no index).

    Raises:
        DamagedFleetFileError: the index is not ``{"tables": [names]}``.
        FleetStorageError: the location could not be read.
    """
    relative = f"{graph_folder(robot, push)}/{INDEX}"
    index = where.read_json(relative)
    if index is None:
        return []
    tables = index.get("tables")
    if not isinstance(tables, list) or not all(
        isinstance(name, str) and TABLE_RE.fullmatch(name) for name in tables
    ):
        raise _damaged(
            where, relative, f"tables must be a list of graph table names, got {_shown(tables)}"
        )
    if len(set(tables)) != len(tables):
        raise _damaged(where, relative, "tables names a table twice")
    return list(tables)


def pushed_tables(where: FleetLocation, robot: str, push: int) -> dict[str, pa.Table]:
    """The graph rows a committed push wrote, by table (its index names the files).

    Raises:
        DamagedFleetFileError: the index, or a table file, is not what a push writes (a table
            file lacks its key, or a node's id, or an edge's ends).
        FleetStorageError: the location could not be read.
    """
    graph = graph_folder(robot, push)
    tables = {}
    for name in read_index(where, robot, push):
        relative = f"{graph}/{name}.parquet"
        table = where.read_parquet(relative)
        if table is None:
            continue
        _check_text_columns(where, relative, table, ("key",))
        _check_present(where, relative, table, _identity_columns(name))
        tables[name] = table
    return tables


def read_removed(where: FleetLocation, robot: str, push: int) -> pa.Table | None:
    """(table, key) of the rows the robot's push ``push`` found gone; None when the push has
    no such file.

    Raises:
        DamagedFleetFileError: the file is not a Parquet table with text columns table, key.
        FleetStorageError: the location could not be read.
    """
    relative = f"{graph_folder(robot, push)}/{REMOVED}"
    removed = where.read_parquet(relative)
    if removed is not None:
        _check_text_columns(where, relative, removed, REMOVED_COLUMNS)
    return removed


def read_state(where: FleetLocation, robot: str, push: int) -> tuple[pa.Table, str] | None:
    """(table, key, digest) of every row of the robot's memory as of its push ``push``, and a
    fingerprint of that state (a digest of its file, written once when the push committed:
    another fleet pushed at the same URI gives another one); None when the file is missing.

    Raises:
        DamagedFleetFileError: the file is not a Parquet table with text columns table, key,
            digest.
        FleetStorageError: the location could not be read.
    """
    relative = state_path(robot, push)
    data = where.read_bytes(relative)
    if data is None:
        return None
    state = where.parse_parquet(relative, data)
    _check_text_columns(where, relative, state, STATE_COLUMNS)
    return state, hashlib.blake2b(data, digest_size=16).hexdigest()


def _identity_columns(table: str) -> tuple[str, ...]:
    """The columns that say which row a graph table's row is: a node's id; an edge's ends
    (and their tables where the rel table joins several)."""
    if table in NODE_TABLES:
        return ("id",)
    if table in REL_ENDS:
        starts, ends = REL_ENDS[table]
        return (
            "from",
            "to",
            *(("from_table",) if len(starts) > 1 else ()),
            *(("to_table",) if len(ends) > 1 else ()),
        )
    return ()


def _check_present(
    where: FleetLocation, relative: str, table: pa.Table, columns: tuple[str, ...]
) -> None:
    for name in columns:
        if table.schema.get_field_index(name) < 0:
            raise _damaged(where, relative, f"it has no (single) {name!r} column")


def _check_text_columns(
    where: FleetLocation, relative: str, table: pa.Table, columns: tuple[str, ...]
) -> None:
    """Each of ``columns`` is there once, holds text and no nulls."""
    _check_present(where, relative, table, columns)
    for name in columns:
        kind = table.schema.field(name).type
        if table.num_rows == 0 and pa.types.is_null(kind):
            continue  # an empty list of keys, as pushes before this check wrote it
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise _damaged(where, relative, f"its {name!r} column holds {kind}, not text")
        if table.column(name).null_count:
            raise _damaged(where, relative, f"its {name!r} column has missing (null) values")


def _damaged(where: FleetLocation, relative: str, problem: str) -> DamagedFleetFileError:
    return DamagedFleetFileError(f"{where}/{relative}: {problem}")


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer past any float
        return False


def _shown(value: Any) -> str:
    """A value for a message: its repr, cut short (a hostile file may hold anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
