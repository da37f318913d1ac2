"""The fleet's graph: every robot's committed graph rows (the Parquet its pushes wrote,
replayed in order), and a read-only replica of it in the embedded graph engine for Cypher
across the fleet.

A replica is a new directory holding a graph with the memory schema (schema/graph.cypher)
plus schema/fleet_replica.cypher: a ``Robot`` node per robot and a ``REMEMBERED_BY`` edge from
each observation, gist, entity and episode to the robot that remembers it. Positions are in the
fleet frame. ``emem-graph cypher DIR`` and ``shell`` read it like a memory.

A replica is built whole from what the manifests name, then kept up to date push by push
(update_replica, replica_update.py): only the rows the new pushes changed are written. Its
``fleet_replica.json`` names the fleet and the push of each robot it holds. A robot with a
damaged file (layout.py) is left out, with a warning; the replica holds the others.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.errors import InvalidInputError
from emem_graph.explore.selection import NODE_TABLES, REL_ENDS
from emem_graph.fleet.frame import Frame
from emem_graph.fleet.layout import pushed_tables, read_manifest, read_removed, read_state
from emem_graph.fleet.location import DamagedFleetFileError, FleetLocation
from emem_graph.fleet.push import MARKER as FLEET_MARKER
from emem_graph.resources import read_cypher
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.graph_rows import with_all_columns
from emem_graph.storage.store import GRAPH_FILE

REMEMBERED = ("Observation", "Gist", "Entity", "Episode")
"""Node tables whose rows get a REMEMBERED_BY edge to their robot."""
_EXTRA = ("key", "robot", "digest")
MARKER = "fleet_replica.json"
"""In a replica's directory: the fleet, each robot's push and state fingerprint, and whether
the graph is whole (``ready``) or an update is under way (``updating``)."""
MARKER_FORMAT = "emem-graph-fleet-replica"

log = logging.getLogger(__name__)


@dataclass
class ReplicaReport:
    """What a replica holds."""

    directory: str
    robots: dict[str, int]
    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    """Rows left out because another robot's row has the same primary key (a user profile's
    user name, for one)."""
    how: str = "built"
    """built (a new directory), updated (push by push), rebuilt (whole, in place: ``reason``
    says why) or current (nothing to do)."""
    before: dict[str, int] = field(default_factory=dict)
    """An update's robots and pushes before it."""
    written: dict[str, int] = field(default_factory=dict)
    """An update's rows created, changed and deleted."""
    reason: str = ""
    left_out: dict[str, str] = field(default_factory=dict)
    """Robots not in the replica because a file of theirs is damaged, each with what is
    wrong."""

    def describe(self) -> str:
        """A few lines for the command line."""
        lines = [self._summary()]
        lines.extend(f"robot {r} left out: {why}" for r, why in sorted(self.left_out.items()))
        return "\n".join(lines)

    def _summary(self) -> str:
        robots = ", ".join(f"{r} (push {p})" for r, p in self.robots.items())
        totals = (
            f"nodes: {sum(self.nodes.values())}, edges: {sum(self.edges.values())}, "
            f"rows left out as duplicates: {self.duplicates}"
        )
        if self.how == "current":
            return f"fleet replica at {self.directory} is current: robots {robots}"
        if self.how == "updated":
            moved = ", ".join(
                f"{r} push {self.before.get(r, 0)} -> {p}"
                for r, p in self.robots.items()
                if self.before.get(r, 0) != p
            )
            rows = ", ".join(f"{n} {what}" for what, n in self.written.items())
            return "\n".join(
                [
                    f"fleet replica at {self.directory} updated: {moved}",
                    f"rows written: {rows}",
                    f"nodes: {sum(self.nodes.values())}, edges: {sum(self.edges.values())}",
                ]
            )
        head = f"fleet replica at {self.directory}"
        if self.how == "rebuilt":
            head += f" rebuilt whole ({self.reason})"
        return "\n".join([f"{head}: robots {robots}", totals])


def fleet_graph(graphs: dict[str, dict[str, pa.Table]]) -> dict[str, pa.Table]:
    """Every graph table of the robots (``graphs``: robot -> its _robot_graph), with a
    ``robot`` column, robots in name order; positions in the fleet frame."""
    combined: dict[str, list[pa.Table]] = {}
    for robot, graph in sorted(graphs.items()):
        for name, table in graph.items():
            robot_column = pa.array([robot] * table.num_rows, pa.string())
            combined.setdefault(name, []).append(table.append_column("robot", robot_column))
    return {
        name: pa.concat_tables(parts, promote_options="default") for name, parts in combined.items()
    }


def _robot_graph(location: FleetLocation, robot: str, last: int) -> dict[str, pa.Table]:
    """The robot's graph tables as of its push ``last``: its pushes' rows replayed in order.

    Raises:
        DamagedFleetFileError: a file of those pushes is not what a push writes.
    """
    current: dict[str, pa.Table] = {}
    for push in range(1, last + 1):
        removed = read_removed(location, robot, push)
        changed = pushed_tables(location, robot, push)
        for name in set(current) | set(changed):
            rows = changed.get(name)
            gone = [] if rows is None else rows.column("key").to_pylist()
            if removed is not None:
                mask = pc.equal(removed.column("table"), name)
                gone += removed.filter(mask).column("key").to_pylist()
            kept = current.get(name)
            if kept is not None and gone:
                kept = kept.filter(pc.invert(pc.is_in(kept.column("key"), pa.array(gone))))
            parts = [t for t in (kept, rows) if t is not None]
            current[name] = pa.concat_tables(parts, promote_options="default")
    return current


def build_replica(
    location: FleetLocation | str,
    directory: str | Path,
    robots: dict[str, int] | None = None,
    left_out: dict[str, str] | None = None,
) -> ReplicaReport:
    """Build a read-only graph replica of the fleet in the new ``directory``.

    A robot with a damaged file (its manifest, or a state, index, removed-rows or table file
    of the pushes replicated) is left out, with a warning: the replica holds the other robots
    as a fleet without it would (ReplicaReport.left_out names it and the file).

    Args:
        location: the fleet.
        directory: a new directory (it must not exist: nothing is overwritten).
        robots: name -> push to replicate; default every robot's committed push.
        left_out: robots already known to be left out (with ``robots``), for the report.

    Raises:
        InvalidInputError: the directory exists.
        FleetStorageError: the fleet could not be read.
    """
    from emem_graph.fleet.memory import FleetMemory

    where = location if isinstance(location, FleetLocation) else FleetLocation(location)
    target = Path(directory)
    if target.exists():
        raise InvalidInputError(
            f"{target} exists: a replica is built in a new directory (nothing is overwritten)"
        )
    if not where.exists(FLEET_MARKER):
        raise InvalidInputError(
            f"{where} holds no fleet (no {FLEET_MARKER}): push a robot's memory there first"
        )
    left_out = dict(left_out or {})
    if robots is None:
        fleet = FleetMemory(where)
        robots = fleet.robots()
        left_out.update(fleet.damaged_robots())
    frames: dict[str, Frame] = {}
    prints: dict[str, str] = {}
    graphs: dict[str, dict[str, pa.Table]] = {}
    for robot, push in sorted(robots.items()):
        try:
            frames[robot] = _committed_frame(where, robot)
            prints[robot] = robot_state(where, robot, push)[1]
            graphs[robot] = _robot_graph(where, robot, push)
        except DamagedFleetFileError as exc:
            log.warning("robot %s is left out of the replica: %s", robot, exc)
            left_out[robot] = str(exc)
    robots = {r: p for r, p in robots.items() if r in graphs}
    report = ReplicaReport(directory=str(target), robots=dict(robots), left_out=left_out)
    tables = fleet_graph(graphs)
    target.mkdir(parents=True)
    try:
        _load(GraphDB(target / GRAPH_FILE), tables, robots, frames, report)
        write_marker(target, where, robots, prints, "ready")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return report


def _committed_frame(where: FleetLocation, robot: str) -> Frame:
    """The robot's frame, as its manifest names it.

    Raises:
        DamagedFleetFileError: the manifest is damaged or gone.
    """
    manifest = read_manifest(where, robot)
    if manifest is None:
        raise DamagedFleetFileError(f"{where}: robot {robot}'s manifest is missing")
    return manifest.frame


def robot_state(where: FleetLocation, robot: str, push: int) -> tuple[pa.Table, str]:
    """(table, key, digest) of every row of ``robot``'s memory as of its push ``push``, and a
    fingerprint of that state (layout.read_state).

    Raises:
        DamagedFleetFileError: the push's state is missing (the fleet lost a file) or is not
            what a push writes.
        FleetStorageError: the location could not be read.
    """
    if push == 0:
        names = ("table", "key", "digest")
        return pa.table({n: pa.array([], pa.string()) for n in names}), ""
    read = read_state(where, robot, push)
    if read is None:
        raise DamagedFleetFileError(f"{where}: the state of robot {robot}'s push {push} is missing")
    return read


def write_marker(
    target: Path, where: FleetLocation, robots: dict[str, int], prints: dict[str, str], state: str
) -> None:
    """Write the replica's marker (a new file renamed over the old: never half-written)."""
    marker = {
        "format": MARKER_FORMAT,
        "version": 1,
        "fleet": str(where),
        "state": state,
        "robots": {r: {"push": p, "state": prints[r]} for r, p in sorted(robots.items())},
    }
    part = target / f".{MARKER}.part"
    with part.open("w", encoding="utf-8") as file:
        json.dump(marker, file, indent=1)
        file.flush()
        os.fsync(file.fileno())
    os.replace(part, target / MARKER)


def read_marker(target: Path) -> dict[str, Any]:
    """The replica's marker.

    Raises:
        InvalidInputError: ``target`` is not a directory holding a replica's marker (nothing
            else is ever written over).
    """
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"{target} exists and is not a fleet replica (no readable {MARKER}; a replica "
            "built before replicas were updated has none either): give a new directory, "
            "nothing else is overwritten"
        ) from exc
    if not isinstance(marker, dict) or marker.get("format") != MARKER_FORMAT:
        raise InvalidInputError(f"{target / MARKER} is not a fleet replica's marker")
    return marker


def _load(
    graph: GraphDB,
    tables: dict[str, pa.Table],
    robots: dict[str, int],
    frames: dict[str, Frame],
    report: ReplicaReport,
) -> None:
    try:
        graph.ensure_schema({"fleet_replica": "1"})
        with graph.write() as tx:
            for statement in _statements():
                tx.run_text(statement)
        ids: dict[str, pa.Array] = {}
        with graph.write() as tx:
            robot_rows = _robot_rows(robots, frames)
            tx.copy_nodes("Robot", robot_rows)
            for name in NODE_TABLES:
                rows = tables.get(name)
                if rows is None or rows.num_rows == 0:
                    continue
                unique = _first_per_key(rows)
                report.duplicates += rows.num_rows - unique.num_rows
                tx.copy_nodes(name, with_all_columns(tx, name, unique))
                report.nodes[name] = unique.num_rows
                ids[name] = unique.column("id").combine_chunks()
        # Rel-table COPYs last, each in its own transaction (graph.py: a rolled-back rel COPY
        # loses its table's edges; a failed replica is deleted whole anyway).
        for rel, (starts, ends) in REL_ENDS.items():
            rows = tables.get(rel)
            if rows is None or rows.num_rows == 0:
                continue
            rows = _first_per_key(rows)
            for start in starts:
                for end in ends:
                    part = _pair(rows, start, end, len(starts) > 1, len(ends) > 1)
                    part = _linked(part, ids.get(start), ids.get(end))
                    if part.num_rows:
                        with graph.write() as tx:
                            tx.copy_edges(rel, part, from_table=start, to_table=end)
                        report.edges[rel] = report.edges.get(rel, 0) + part.num_rows
        for name in REMEMBERED:
            rows = tables.get(name)
            if rows is None or rows.num_rows == 0:
                continue
            unique = _first_per_key(rows)
            edges = pa.table({"from": unique.column("id"), "to": unique.column("robot")})
            with graph.write() as tx:
                tx.copy_edges("REMEMBERED_BY", edges, from_table=name, to_table="Robot")
            report.edges["REMEMBERED_BY"] = report.edges.get("REMEMBERED_BY", 0) + edges.num_rows
    finally:
        graph.close()


def _robot_rows(robots: dict[str, int], frames: dict[str, Frame]) -> pa.Table:
    """A Robot node per robot: its name, push and frame."""
    names = sorted(robots)
    return pa.table(
        {
            "name": pa.array(names, pa.string()),
            "push": pa.array([robots[r] for r in names], pa.int64()),
            "frame_x": pa.array([frames[r].x for r in names], pa.float64()),
            "frame_y": pa.array([frames[r].y for r in names], pa.float64()),
            "frame_yaw": pa.array([frames[r].yaw for r in names], pa.float64()),
        }
    )


def _statements() -> list[str]:
    lines = [
        line
        for line in read_cypher("schema", "fleet_replica").splitlines()
        if not line.lstrip().startswith("//")
    ]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _first_per_key(rows: pa.Table) -> pa.Table:
    """The first row of each key (robots in name order)."""
    keys = rows.column("key").to_pylist()
    seen: set[str] = set()
    keep = []
    for index, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            keep.append(index)
    return rows.take(pa.array(keep, pa.int64())) if len(keep) < len(keys) else rows


def _pair(rows: pa.Table, start: str, end: str, by_start: bool, by_end: bool) -> pa.Table:
    """The edges of one (from table, to table) pair: from, to, then the properties."""
    if by_start:
        rows = rows.filter(pc.equal(rows.column("from_table"), start))
    if by_end:
        rows = rows.filter(pc.equal(rows.column("to_table"), end))
    ends = ("from", "to", "from_table", "to_table", *_EXTRA)
    properties = [c for c in rows.schema.names if c not in ends]
    return rows.select(["from", "to", *properties])


def _linked(edges: pa.Table, starts: pa.Array | None, ends: pa.Array | None) -> pa.Table:
    """The edges whose two ends are in the replica."""
    if starts is None or ends is None:
        return edges.slice(0, 0)
    mask = pc.and_(
        pc.is_in(edges.column("from"), value_set=starts),
        pc.is_in(edges.column("to"), value_set=ends),
    )
    return edges.filter(mask)
