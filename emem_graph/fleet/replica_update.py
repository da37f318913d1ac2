"""update_replica: bring a fleet's graph replica up to the robots' latest committed pushes by
writing only the rows those pushes changed.

Which rows changed comes from the robots' push states (the (table, key, digest) of every row
as of each push): a row whose digest differs between the push the replica holds and the latest
one, or that is in only one of them. A row two robots share by primary key belongs to the
first robot in name order that holds it, as in a replica built whole (replica.py). For each
changed key the update then deletes the row (no robot holds it any more), creates it, or
rewrites it: a node's properties are set in place (its edges stay), an edge is deleted and
created again. The rows come from the new pushes' Parquet.

The replica's marker says ``updating`` from the first write to the last; an update that is
cut (a kill, a full disk) leaves it so, and the next one rebuilds the replica whole. So does an
update that would rewrite more than REBUILD_SHARE of the rows (a robot's new frame rewrites
all of its rows: one bulk load is faster then), one that finds the fleet is not the one
the replica was built from, and one that meets a damaged file of a robot (layout.py): the
rebuild leaves that robot out, as a replica built whole does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emem_graph.errors import InvalidInputError
from emem_graph.explore.selection import NODE_TABLES, REL_ENDS
from emem_graph.fleet.frame import Frame
from emem_graph.fleet.layout import pushed_tables
from emem_graph.fleet.location import DamagedFleetFileError, FleetLocation
from emem_graph.fleet.replica import (
    MARKER,
    REMEMBERED,
    ReplicaReport,
    _committed_frame,
    _first_per_key,
    _linked,
    _pair,
    _robot_graph,
    build_replica,
    read_marker,
    robot_state,
    write_marker,
)
from emem_graph.storage import open_registry, probe
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.graph_rows import (
    delete_edges,
    delete_nodes,
    set_nodes,
    with_all_columns,
)
from emem_graph.storage.store import GRAPH_FILE

REBUILD_SHARE = 0.25
"""An update that would write more than this share of the fleet's rows rebuilds the replica
whole instead (a bulk load beats row-by-row writes past it)."""


def replicate(location: FleetLocation | str, directory: str | Path) -> ReplicaReport:
    """Build the replica in ``directory`` when it does not exist; otherwise bring the replica
    there up to date (update_replica)."""
    target = Path(directory)
    if target.exists():
        return update_replica(location, target)
    return build_replica(location, target)


def update_replica(location: FleetLocation | str, directory: str | Path) -> ReplicaReport:
    """Bring the replica in ``directory`` up to every robot's committed push.

    Raises:
        InvalidInputError: ``directory`` holds no replica, or a replica of another fleet.
        FleetStorageError: the fleet could not be read.
        StorageError: the replica's graph could not be written (it is rebuilt next time).
    """
    from emem_graph.fleet.memory import FleetMemory

    where = location if isinstance(location, FleetLocation) else FleetLocation(location)
    target = Path(directory)
    marker = read_marker(target)
    if marker.get("fleet") != str(where):
        raise InvalidInputError(
            f"{target} is a replica of the fleet at {marker.get('fleet')}, not of {where}: "
            "give that fleet, or build a new replica in a new directory"
        )
    fleet = FleetMemory(where)
    latest = fleet.robots()
    left_out = fleet.damaged_robots()
    try:
        held = {str(r): int(v["push"]) for r, v in marker["robots"].items()}
        prints = {str(r): str(v["state"]) for r, v in marker["robots"].items()}
    except (AttributeError, KeyError, TypeError, ValueError):
        return _rebuild(where, target, latest, left_out, f"its {MARKER} was damaged")
    if marker.get("state") != "ready":
        return _rebuild(where, target, latest, left_out, "an earlier update did not finish")
    damaged = sorted(r for r in held if r in left_out)
    if damaged:
        reason = f"robot {damaged[0]} is left out: its manifest is damaged"
        return _rebuild(where, target, latest, left_out, reason)
    behind = sorted(r for r, p in held.items() if latest.get(r, 0) < p)
    if behind:
        reason = f"robot {behind[0]}'s committed push is older than the replica's"
        return _rebuild(where, target, latest, left_out, reason)
    try:
        return _update(where, target, latest, held, prints, left_out)
    except DamagedFleetFileError:
        # Which robot's files are damaged, the rebuild finds out: it leaves that robot out.
        reason = "a robot's file is damaged"
        return _rebuild(where, target, latest, left_out, reason)


def _update(
    where: FleetLocation,
    target: Path,
    latest: dict[str, int],
    held: dict[str, int],
    prints: dict[str, str],
    left_out: dict[str, str],
) -> ReplicaReport:
    """Write the rows the pushes since ``held`` changed (or rebuild, when that is more).

    Raises:
        DamagedFleetFileError: a robot's file is not what a push writes.
    """
    old_read = {r: robot_state(where, r, p) for r, p in held.items()}
    old_states = {r: state for r, (state, _) in old_read.items()}
    strange = sorted(r for r, (_, fingerprint) in old_read.items() if fingerprint != prints[r])
    if strange:
        reason = f"robot {strange[0]}'s pushes are not those the replica was built from"
        return _rebuild(where, target, latest, left_out, reason)
    report = ReplicaReport(
        directory=str(target), robots=dict(latest), how="current", before=held, left_out=left_out
    )
    moved = {r: p for r, p in latest.items() if p != held.get(r, 0)}
    if not moved:
        return report
    new_read = {r: robot_state(where, r, p) for r, p in moved.items()}
    new_states = {**old_states, **{r: state for r, (state, _) in new_read.items()}}
    plan = _plan(where, held, latest, old_states, new_states)
    total = sum(state.num_rows for state in new_states.values())
    if plan.size > REBUILD_SHARE * total:
        return _rebuild(where, target, latest, left_out, f"{plan.size} of {total} rows changed")
    frames = {r: _committed_frame(where, r) for r in moved}
    graph = GraphDB(target / GRAPH_FILE)  # refused while another process holds it open
    try:
        write_marker(target, where, held, prints, "updating")
        report.written = _apply(graph, plan, {r: latest[r] for r in moved}, frames)
        counts = graph.table_counts()
    finally:
        graph.close()
    prints.update({r: fingerprint for r, (_, fingerprint) in new_read.items()})
    write_marker(target, where, latest, prints, "ready")
    report.how = "updated"
    report.nodes = {t: counts.get(t, 0) for t in NODE_TABLES if counts.get(t)}
    report.edges = {t: counts.get(t, 0) for t in (*REL_ENDS, "REMEMBERED_BY") if counts.get(t)}
    return report


def _rebuild(
    where: FleetLocation,
    target: Path,
    robots: dict[str, int],
    left_out: dict[str, str],
    reason: str,
) -> ReplicaReport:
    """Build the replica whole beside ``target``, then put it in its place.

    The old directory is deleted whole, so it must hold the replica's files only, and no
    process may have the replica open meanwhile (it is held the way a writer holds it).

    Raises:
        InvalidInputError: ``target`` holds anything else (named): nothing is rebuilt.
        DatabaseLockedError: a process has the replica open.
    """
    _refuse_foreign_entries(target)
    claim = open_registry.claim(target / GRAPH_FILE, read_only=False)
    try:
        parent = target.resolve().parent
        building = Path(tempfile.mkdtemp(prefix=f".{target.name}.rebuild-", dir=parent))
        retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=parent))
        try:
            report = build_replica(where, building / "replica", robots, left_out)
            os.rename(target, retired / "replica")
            os.rename(building / "replica", target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
            shutil.rmtree(retired, ignore_errors=True)
    finally:
        claim.release()
    report.directory, report.how, report.reason = str(target), "rebuilt", reason
    return report


def _refuse_foreign_entries(target: Path) -> None:
    """Refuse when ``target`` holds entries a replica does not: its graph (with the graph's
    log, lock, seal and scratch directories) and its marker (and the marker's next version)."""
    graph = target / GRAPH_FILE
    own = {
        GRAPH_FILE,
        probe.wal_path(graph).name,
        probe.seal_path(graph).name,
        open_registry.lock_path(graph).name,
        MARKER,
        f".{MARKER}.part",
    }
    foreign = sorted(
        entry.name
        for entry in target.iterdir()
        if entry.name not in own and not entry.name.startswith(probe.SCRATCH_PREFIXES)
    )
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if foreign[5:] else "")
        raise InvalidInputError(
            f"{target} holds {shown}, which no replica holds; rebuilding the replica would "
            "delete them: move them out, then run the update again"
        )


@dataclass
class _Change:
    """What an update does to one table."""

    deleted: list[tuple[str, str]] = field(default_factory=list)
    """(key, robot that held it) of rows no robot holds any more."""
    rows: pa.Table | None = None
    """Rows to create (``fresh``) or to rewrite, with ``robot``: the robot they belong to."""
    owner_changed: list[tuple[str, str]] = field(default_factory=list)
    """(key, robot it belonged to) of rewritten rows that now belong to another robot."""

    @property
    def size(self) -> int:
        return len(self.deleted) + (self.rows.num_rows if self.rows is not None else 0)


@dataclass
class _Plan:
    tables: dict[str, _Change]
    present: dict[str, pa.Array]
    """Per node table, the ids every robot's latest state holds (what edges may join)."""
    where: FleetLocation
    held: dict[str, int]
    old_rows: dict[str, dict[str, pa.Table]] = field(default_factory=dict)
    """Robot -> table -> rows as of the push the replica holds (read only where needed)."""

    @property
    def size(self) -> int:
        return sum(change.size for change in self.tables.values())


def _plan(
    where: FleetLocation,
    held: dict[str, int],
    latest: dict[str, int],
    old_states: dict[str, pa.Table],
    new_states: dict[str, pa.Table],
) -> _Plan:
    robots = sorted(set(held) | set(latest))
    moved = sorted(r for r, p in latest.items() if p != held.get(r, 0))
    touched: dict[str, dict[str, set[str]]] = {}  # table -> robot -> keys
    for robot in moved:
        for table, keys in _changed_keys(old_states.get(robot), new_states[robot]).items():
            touched.setdefault(table, {})[robot] = keys
    pushed = {r: _pushed_since(where, r, held.get(r, 0), latest[r]) for r in moved}
    history: dict[str, dict[str, pa.Table]] = {}

    def rows_of(robot: str, table: str, keys: list[str]) -> pa.Table:
        changed = pushed.get(robot, {}).get(table)
        if changed is not None:
            found = changed.filter(pc.is_in(changed.column("key"), pa.array(keys, pa.string())))
            if found.num_rows == len(keys):
                return found
        # The row did not change in the new pushes (another robot's copy went away): it is
        # read from the robot's whole history. Only rows two robots share come here.
        if robot not in history:
            history[robot] = _robot_graph(where, robot, latest[robot])
        whole = history[robot][table]
        return whole.filter(pc.is_in(whole.column("key"), pa.array(keys, pa.string())))

    tables: dict[str, _Change] = {}
    for table, by_robot in touched.items():
        ordered = sorted(set().union(*by_robot.values()))
        key_array = pa.array(ordered, pa.string())
        before = _owners(key_array, table, robots, old_states)
        after = _owners(key_array, table, robots, new_states)
        change = _Change()
        wanted: dict[str, list[tuple[str, bool]]] = {}  # robot -> (key, fresh)
        for key, old, new in zip(ordered, before.tolist(), after.tolist(), strict=True):
            if new < 0:
                if old >= 0:
                    change.deleted.append((key, robots[old]))
                continue
            owner = robots[new]
            if old < 0 or old != new or key in by_robot.get(owner, ()):
                wanted.setdefault(owner, []).append((key, old < 0))
            if old >= 0 and old != new:
                change.owner_changed.append((key, robots[old]))
        parts = []
        for owner, entries in sorted(wanted.items()):
            rows = rows_of(owner, table, [k for k, _ in entries])
            fresh = {k for k, is_new in entries if is_new}
            flags = [k in fresh for k in rows.column("key").to_pylist()]
            rows = rows.append_column("robot", pa.array([owner] * rows.num_rows, pa.string()))
            parts.append(rows.append_column("fresh", pa.array(flags, pa.bool_())))
        if parts:
            change.rows = pa.concat_tables(parts, promote_options="default")
        if change.size:
            tables[table] = change
    present = {
        name: pa.concat_arrays(
            [_keys_in(state, name) for state in new_states.values()] or [pa.array([], pa.string())]
        )
        for name in NODE_TABLES
    }
    return _Plan(tables=tables, present=present, where=where, held=held)


def _changed_keys(before: pa.Table | None, after: pa.Table) -> dict[str, set[str]]:
    """Per table, the keys whose row a robot added, changed or removed between two states."""
    if before is None or before.num_rows == 0:
        changed = after.select(["table", "key"])
    else:
        joined = after.join(
            before, keys=["table", "key"], join_type="full outer", right_suffix="_before"
        )
        differs = pc.fill_null(
            pc.not_equal(joined.column("digest"), joined.column("digest_before")), True
        )
        changed = joined.filter(differs).select(["table", "key"])
    keys: dict[str, set[str]] = {}
    for table, key in zip(
        changed.column("table").to_pylist(), changed.column("key").to_pylist(), strict=True
    ):
        keys.setdefault(table, set()).add(key)
    return keys


def _keys_in(state: pa.Table, table: str) -> pa.Array:
    return state.filter(pc.equal(state.column("table"), table)).column("key").combine_chunks()


def _owners(
    keys: pa.Array, table: str, robots: list[str], states: dict[str, pa.Table]
) -> np.ndarray:
    """For each key, the index in ``robots`` of the first robot whose state holds it; -1 for
    none."""
    owner = np.full(len(keys), -1, dtype=np.int64)
    for index in range(len(robots) - 1, -1, -1):
        state = states.get(robots[index])
        if state is None:
            continue
        held = pc.is_in(keys, value_set=_keys_in(state, table)).to_numpy(zero_copy_only=False)
        owner[held] = index
    return owner


def _pushed_since(where: FleetLocation, robot: str, since: int, last: int) -> dict[str, pa.Table]:
    """The rows pushes since+1..last wrote, by table: the latest version of each key."""
    parts: dict[str, list[pa.Table]] = {}
    for push in range(since + 1, last + 1):
        for name, table in pushed_tables(where, robot, push).items():
            parts.setdefault(name, []).append(table)
    latest = {}
    for name, tables in parts.items():
        rows = pa.concat_tables(tables, promote_options="default")
        backwards = rows.take(pa.array(np.arange(rows.num_rows - 1, -1, -1)))
        latest[name] = _first_per_key(backwards)
    return latest


def _apply(
    graph: GraphDB,
    plan: _Plan,
    pushes: dict[str, int],
    frames: dict[str, Frame],
) -> dict[str, int]:
    written = {"created": 0, "changed": 0, "deleted": 0}
    with graph.write() as tx:
        robots = []
        for robot, push in sorted(pushes.items()):
            frame = frames[robot]
            robots.append(
                {
                    "name": robot,
                    "push": push,
                    "frame_x": frame.x,
                    "frame_y": frame.y,
                    "frame_yaw": frame.yaw,
                }
            )
        tx.run_each("replica_robot", robots)
        for name in NODE_TABLES:
            change = plan.tables.get(name)
            if change is None:
                continue
            written["deleted"] += delete_nodes(tx, name, [key for key, _ in change.deleted])
            if name in REMEMBERED:
                delete_edges(tx, "REMEMBERED_BY", name, "Robot", change.owner_changed)
            if change.rows is None:
                continue
            fresh = change.rows.column("fresh")
            written["changed"] += set_nodes(tx, name, change.rows.filter(pc.invert(fresh)))
            created = change.rows.filter(fresh)
            if created.num_rows:
                tx.copy_nodes(name, with_all_columns(tx, name, created))
                written["created"] += created.num_rows
    edges: list[tuple[str, str, str, pa.Table]] = []
    with graph.write() as tx:
        for rel, (starts, ends) in REL_ENDS.items():
            change = plan.tables.get(rel)
            if change is None:
                continue
            gone = _edge_ends(plan, rel, change)
            for (start, end), pairs in gone.items():
                delete_edges(tx, rel, start, end, pairs)
            written["deleted"] += len(change.deleted)
            if change.rows is None:
                continue
            rows = change.rows
            written["changed"] += rows.num_rows - int(pc.sum(rows.column("fresh")).as_py() or 0)
            written["created"] += int(pc.sum(rows.column("fresh")).as_py() or 0)
            for start in starts:
                for end in ends:
                    part = _pair(
                        rows.drop_columns(["fresh"]), start, end, len(starts) > 1, len(ends) > 1
                    )
                    part = _linked(part, plan.present.get(start), plan.present.get(end))
                    if part.num_rows:
                        edges.append((rel, start, end, part))
    # Rel-table COPYs each in a transaction of their own (storage/graph.py: a rolled-back one
    # loses its table's edges; the marker then says the replica must be rebuilt).
    for rel, start, end, part in edges:
        with graph.write() as tx:
            tx.copy_edges(rel, part, from_table=start, to_table=end)
    for name in REMEMBERED:
        change = plan.tables.get(name)
        if change is None or change.rows is None:
            continue
        re_owned = pa.array([key for key, _ in change.owner_changed], pa.string())
        mask = pc.or_(change.rows.column("fresh"), pc.is_in(change.rows.column("key"), re_owned))
        rows = change.rows.filter(mask)
        if rows.num_rows:
            links = pa.table({"from": rows.column("id"), "to": rows.column("robot")})
            with graph.write() as tx:
                tx.copy_edges("REMEMBERED_BY", links, from_table=name, to_table="Robot")
    return written


def _edge_ends(
    plan: _Plan, rel: str, change: _Change
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """The (from table, to table) -> (from id, to id) of the edges an update takes away: those
    no robot holds any more and those it rewrites."""
    starts, ends = REL_ENDS[rel]
    by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    rows = change.rows
    if rows is not None:
        rewritten = rows.filter(pc.invert(rows.column("fresh")))
        for row in rewritten.to_pylist():
            start = row["from_table"] if len(starts) > 1 else starts[0]
            end = row["to_table"] if len(ends) > 1 else ends[0]
            by_pair.setdefault((start, end), []).append((row["from"], row["to"]))
    for key, robot in change.deleted:
        parsed = _parse_edge_key(key, starts, ends)
        if parsed is None:  # an id holds '>' or '|': the row itself says
            parsed = _edge_from_history(plan, robot, rel, key)
        if parsed is not None:
            start, end, a, b = parsed
            by_pair.setdefault((start, end), []).append((a, b))
    return by_pair


def _parse_edge_key(
    key: str, starts: tuple[str, ...], ends: tuple[str, ...]
) -> tuple[str, str, str, str] | None:
    """(from table, to table, from id, to id) of an edge key (fleet/snapshot.py: from>to, then
    |from_table and |to_table where the rel table joins several); None when ambiguous."""
    extra = int(len(starts) > 1) + int(len(ends) > 1)
    if key.count("|") != extra:
        return None
    head, *tables = key.split("|")
    if head.count(">") != 1:
        return None
    a, b = head.split(">")
    start = tables.pop(0) if len(starts) > 1 else starts[0]
    end = tables.pop(0) if len(ends) > 1 else ends[0]
    return start, end, a, b


def _edge_from_history(
    plan: _Plan, robot: str, rel: str, key: str
) -> tuple[str, str, str, str] | None:
    if robot not in plan.old_rows:
        plan.old_rows[robot] = _robot_graph(plan.where, robot, plan.held[robot])
    rows = plan.old_rows[robot].get(rel)
    if rows is None:
        return None
    starts, ends = REL_ENDS[rel]
    for row in rows.filter(pc.equal(rows.column("key"), key)).to_pylist():
        start = row["from_table"] if len(starts) > 1 else starts[0]
        end = row["to_table"] if len(ends) > 1 else ends[0]
        return start, end, row["from"], row["to"]
    return None
