"""A fleet replica kept up to date push by push (fleet/replica_update.py) holds exactly what a
replica built whole from the same pushes holds: every table's rows compared after each round
of robots writing, consolidating, forgetting, sharing rows by primary key and changing frames.
Plus the ways an update must refuse or rebuild: a cut update, another fleet, a directory that
is not a replica, a fleet pushed anew under the same name."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import campaign
import pyarrow.parquet as pq
import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import InvalidInputError
from emem_graph.fleet import Frame, push_memory, replica_update
from emem_graph.fleet.replica import MARKER
from emem_graph.fleet.replica_update import replicate
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.graph_transfer import export_tables
from emem_graph.storage.store import GRAPH_FILE

CLI = (sys.executable, "-m", "emem_graph.cli")
START = 1_790_000_000.0


class Robot:
    """One robot's memory directory and its clock; each visit opens, writes and closes it."""

    def __init__(self, name: str, directory: Path, start: float) -> None:
        self.name, self.directory, self.now = name, directory, start

    def visit(self, write: Any) -> None:
        def clock() -> float:
            return self.now

        memory = SpatioTemporalMemory(
            config=MemoryConfig(
                db_path=str(self.directory),
                maintenance_interval=None,
                consolidation_window=600.0,
                archive_after_seconds=1200.0,
            ),
            embedding_provider=HashingEmbedder(384),
            get_current_time=clock,
        )
        try:
            write(memory, self)
        finally:
            memory.close()

    def tick(self, seconds: float = 30.0) -> float:
        self.now += seconds
        return self.now


def _patrol(things: list[str], x0: float) -> Any:
    def write(memory: SpatioTemporalMemory, robot: Robot) -> None:
        for i, thing in enumerate(things):
            memory.add(f"a {thing} near shelf {i}", x0 + i, 0.5 * i, timestamp=robot.tick())
            memory.add_entity(thing, x0 + i, 0.5 * i, timestamp=robot.tick())

    return write


def _profile(alias: str, objects: list[str]) -> Any:
    def write(memory: SpatioTemporalMemory, robot: Robot) -> None:
        memory.profile.add_object_semantics("anna", alias, objects)

    return write


def _consolidate(memory: SpatioTemporalMemory, robot: Robot) -> None:
    robot.tick(3_600.0)
    memory.consolidate_time_window()
    memory.maintenance()


def _forget(alias: str) -> Any:
    def write(memory: SpatioTemporalMemory, robot: Robot) -> None:
        assert memory.profile.remove("anna", alias)

    return write


def _dump(directory: Path, scratch: Path) -> dict[str, list[str]]:
    """Every table of the replica's graph: its rows as sorted JSON lines."""
    graph = GraphDB(directory / GRAPH_FILE, read_only=True)
    try:
        manifest = export_tables(graph, scratch)
    finally:
        graph.close()
    tables = {}
    for entry in manifest["files"]:
        rows = pq.read_table(scratch / entry["file"]).to_pylist()
        tables[entry["file"]] = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    return tables


def _same_as_whole(uri: str, replica: Path, scratch: Path, label: str) -> None:
    whole = scratch / f"whole-{label}"
    replicate(uri, whole)
    kept = _dump(replica, scratch / f"dump-kept-{label}")
    built = _dump(whole, scratch / f"dump-whole-{label}")
    assert kept.keys() == built.keys()
    for name in built:
        assert kept[name] == built[name], f"{label}: {name} differs"


FRAMES = {"bravo": Frame(10.0, -5.0, math.pi / 2), "charlie": Frame(-20.0, 8.0, math.pi)}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    """bravo and charlie written and pushed to ``fleet`` once per module; each test works on
    a copy (the ``fleet`` fixture). Also each robot's clock at the end."""
    root = tmp_path_factory.mktemp("pristine")
    robots = {
        "bravo": Robot("bravo", root / "bravo", START),
        "charlie": Robot("charlie", root / "charlie", START + 100),
    }
    robots["bravo"].visit(_patrol(["drill", "ladder", "red toolbox"], 0.0))
    robots["bravo"].visit(_profile("my toolbox", ["red toolbox"]))
    robots["charlie"].visit(_patrol(["kettle", "mug", "fire extinguisher", "chair"], 10.0))
    robots["charlie"].visit(_profile("my mug", ["blue mug"]))
    for name, robot in robots.items():
        push_memory(robot.directory, str(root / "fleet"), name, frame=FRAMES[name])
    return root, {name: robot.now for name, robot in robots.items()}


@pytest.fixture
def fleet(pristine: tuple[Path, dict[str, float]], tmp_path: Path) -> dict[str, Any]:
    """A copy of the pristine fleet and its robots' memories (with their files' times, so the
    memories' seals hold), for one test to change."""
    root, clocks = pristine
    for entry in root.iterdir():
        shutil.copytree(entry, tmp_path / entry.name)
    robots = {name: Robot(name, tmp_path / name, now) for name, now in clocks.items()}
    uri = str(tmp_path / "fleet")
    return {"uri": uri, "robots": robots, "frames": dict(FRAMES), "root": tmp_path}


def test_an_updated_replica_holds_what_a_replica_built_whole_holds(
    fleet: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, robots, root = fleet["uri"], fleet["robots"], fleet["root"]
    # These memories are small: every round changes more than REBUILD_SHARE of their rows.
    monkeypatch.setattr(replica_update, "REBUILD_SHARE", 1.0)
    replica = root / "replica"
    assert replicate(uri, replica).how == "built"
    _same_as_whole(uri, replica, root, "0")

    # Round 1: bravo sees more (new rows, entities seen again: changed rows); charlie
    # consolidates and archives (gists, SUMMARIZES edges, observations rewritten).
    robots["bravo"].visit(_patrol(["drill", "bucket"], 2.0))
    # The toolbox is anna's work box too; "my toolbox" becomes the green one: the edge to the
    # red toolbox goes, both its ends stay.
    robots["bravo"].visit(_profile("work box", ["red toolbox"]))
    robots["bravo"].visit(_profile("my toolbox", ["green toolbox"]))
    robots["charlie"].visit(_consolidate)
    for name in ("bravo", "charlie"):
        push_memory(robots[name].directory, uri, name)
    report = replicate(uri, replica)
    assert report.how == "updated", report.describe()
    assert report.written["created"] > 0 and report.written["changed"] > 0
    assert report.before == {"bravo": 1, "charlie": 1}
    _same_as_whole(uri, replica, root, "1")

    # Round 2: a new robot, first in name order, with a copy of bravo's memory: every row is
    # shared by primary key and now belongs to it (REMEMBERED_BY moves).
    aaron = Robot("aaron", root / "aaron", robots["bravo"].now)
    shutil.copytree(robots["bravo"].directory, aaron.directory)
    push_memory(aaron.directory, uri, "aaron", frame=fleet["frames"]["bravo"])
    # bravo's toolbox now differs from aaron's copy; aaron's is the replica's.
    robots["bravo"].visit(_profile("my toolbox", ["red toolbox", "green toolbox"]))
    push_memory(robots["bravo"].directory, uri, "bravo")
    assert replicate(uri, replica).how == "updated"
    _same_as_whole(uri, replica, root, "2")

    # Round 3: aaron forgets anna's toolbox and sees more; the rows it drops go back to
    # bravo's copies, unchanged by bravo's new push (read from bravo's history).
    aaron.visit(_forget("my toolbox"))
    aaron.visit(_patrol(["wheelbarrow"], 5.0))
    robots["bravo"].visit(_patrol(["broom"], 7.0))
    push_memory(aaron.directory, uri, "aaron")
    push_memory(robots["bravo"].directory, uri, "bravo")
    report = replicate(uri, replica)
    assert report.how == "updated"
    _same_as_whole(uri, replica, root, "3")

    # Round 4: both copies gone: bravo forgets the toolbox too (rows deleted), and charlie
    # forgets the mug, seen by no other robot.
    robots["bravo"].visit(_forget("my toolbox"))
    robots["charlie"].visit(_forget("my mug"))
    push_memory(robots["bravo"].directory, uri, "bravo")
    push_memory(robots["charlie"].directory, uri, "charlie")
    report = replicate(uri, replica)
    assert report.how == "updated" and report.written["deleted"] > 0
    _same_as_whole(uri, replica, root, "4")
    assert replicate(uri, replica).how == "current"


def test_a_new_frame_or_a_cut_update_rebuilds_the_replica_whole(fleet: dict[str, Any]) -> None:
    uri, robots, root = fleet["uri"], fleet["robots"], fleet["root"]
    replica = root / "replica"
    replicate(uri, replica)
    push_memory(robots["charlie"].directory, uri, "charlie", frame=Frame(-21.0, 8.0, math.pi))
    report = replicate(uri, replica)
    assert report.how == "rebuilt" and "rows changed" in report.reason
    _same_as_whole(uri, replica, root, "frame")
    assert not [p for p in root.iterdir() if p.name.startswith(".replica.")]

    robots["bravo"].visit(_patrol(["crate"], 3.0))
    push_memory(robots["bravo"].directory, uri, "bravo")
    marker = json.loads((replica / MARKER).read_text())
    marker["state"] = "updating"  # what a kill between the first and last write leaves
    (replica / MARKER).write_text(json.dumps(marker))
    report = replicate(uri, replica)
    assert (report.how, report.reason) == ("rebuilt", "an earlier update did not finish")
    _same_as_whole(uri, replica, root, "cut")

    marker = json.loads((replica / MARKER).read_text())
    marker["robots"]["bravo"] = {"push": "two"}  # a damaged marker, still the replica's
    (replica / MARKER).write_text(json.dumps(marker))
    report = replicate(uri, replica)
    assert (report.how, report.reason) == ("rebuilt", f"its {MARKER} was damaged")
    _same_as_whole(uri, replica, root, "damaged")


def test_an_update_refuses_what_is_not_its_replica_and_rebuilds_for_a_new_fleet(
    fleet: dict[str, Any], tmp_path: Path
) -> None:
    uri, robots = fleet["uri"], fleet["robots"]
    replica = tmp_path / "replica"
    replicate(uri, replica)
    other = tmp_path / "other-fleet"
    push_memory(robots["bravo"].directory, str(other), "bravo")
    with pytest.raises(InvalidInputError, match="is a replica of the fleet at"):
        replicate(str(other), replica)
    stranger = tmp_path / "notes"
    stranger.mkdir()
    (stranger / "keep.txt").write_text("mine")
    with pytest.raises(InvalidInputError, match="not a fleet replica"):
        replicate(uri, stranger)
    assert [p.name for p in stranger.iterdir()] == ["keep.txt"]

    # The fleet is pushed anew at the same place: same push numbers, other rows.
    shutil.rmtree(uri)
    robots["charlie"].visit(_patrol(["bench"], 1.0))
    for name, robot in robots.items():
        push_memory(robot.directory, uri, name, frame=fleet["frames"][name])
    report = replicate(uri, replica)
    assert report.how == "rebuilt" and "not those the replica was built from" in report.reason
    _same_as_whole(uri, replica, tmp_path, "anew")


def test_the_cli_builds_then_updates_the_replica(fleet: dict[str, Any]) -> None:
    uri, robots, root = fleet["uri"], fleet["robots"], fleet["root"]
    replica = root / "replica"
    first = subprocess.run(
        [*CLI, "fleet", "replica", uri, str(replica)], capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"fleet replica at {replica}: robots bravo (push 1)")
    robots["bravo"].visit(_patrol(["crate"], 3.0))
    push_memory(robots["bravo"].directory, uri, "bravo")
    second = subprocess.run(
        [*CLI, "fleet", "replica", uri, str(replica)], capture_output=True, text=True
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith(f"fleet replica at {replica} updated: bravo push 1 -> 2")
    assert "rows written: " in second.stdout
    count = subprocess.run(
        [*CLI, "cypher", str(replica), "MATCH (r:Robot {name: 'bravo'}) RETURN r.push AS push"],
        capture_output=True,
        text=True,
    )
    assert count.returncode == 0, count.stderr
    assert "2" in count.stdout.splitlines()[-2]


def test_an_update_while_a_reader_holds_the_replica_is_refused_and_changes_nothing(
    fleet: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reader is a process of its own; the update is the CLI's ``main`` run here (the
    command in a process of its own: test_the_cli_builds_then_updates_the_replica)."""
    from emem_graph.cli import main

    uri, robots, root = fleet["uri"], fleet["robots"], fleet["root"]
    replica = root / "replica"
    replicate(uri, replica)
    robots["bravo"].visit(_patrol(["crate"], 3.0))
    push_memory(robots["bravo"].directory, uri, "bravo")
    marker = (replica / MARKER).read_text()
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from emem_graph.storage.graph import GraphDB; "
            f"g = GraphDB(Path({str(replica / GRAPH_FILE)!r}), read_only=True); "
            "print('open', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "open"
        capsys.readouterr()
        status = main(["fleet", "replica", uri, str(replica)])
        err = capsys.readouterr().err
    finally:
        reader.kill()
        reader.wait()
    assert status != 0
    assert len(err.strip().splitlines()) == 1, err
    assert "open" in err and "another process" in err
    assert (replica / MARKER).read_text() == marker
    monkeypatch.setattr(replica_update, "REBUILD_SHARE", 1.0)
    assert replicate(uri, replica).how == "updated"  # not rebuilt: nothing was half-done
    _same_as_whole(uri, replica, root, "after-reader")


_KILLED_CHILD = """
import contextlib, sys, time
from emem_graph.fleet import replica_update
from emem_graph.storage import graph

uri, directory, at, where = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
seen = [0]
plain = graph.GraphDB.write

@contextlib.contextmanager
def write(self):
    with plain(self) as tx:
        seen[0] += 1
        if seen[0] == at and where == "begun":
            print("stop", flush=True)
            time.sleep(60)
        yield tx
        if seen[0] == at and where == "before commit":
            print("stop", flush=True)
            time.sleep(60)

graph.GraphDB.write = write
replica_update.REBUILD_SHARE = 1.0
print(replica_update.replicate(uri, directory).how, flush=True)
"""


KILLS = [(1, "begun"), (2, "before commit"), (5, "before commit")]
"""Where the default run kills an update: in each kind of transaction (1: the nodes, 2: the
edges' deletes and changes, 3 and on: one edge COPY each, 5 with two COPYs committed before it)
and at each point of one (just begun; statements run, not committed). The long campaigns kill
at every pair, the third transaction too."""
if campaign.LONG:
    KILLS = [(at, where) for at in (1, 2, 3, 5) for where in ("begun", "before commit")]


@pytest.mark.parametrize(("at", "where"), KILLS)
def test_an_update_killed_in_any_transaction_is_repaired_by_the_next_one(
    fleet: dict[str, Any], monkeypatch: pytest.MonkeyPatch, at: int, where: str
) -> None:
    uri, robots, root = fleet["uri"], fleet["robots"], fleet["root"]
    replica = root / "replica"
    replicate(uri, replica)
    robots["bravo"].visit(_patrol(["crate", "barrel", "hose"], 3.0))
    robots["bravo"].visit(_profile("work box", ["red toolbox"]))
    robots["charlie"].visit(_consolidate)
    for name in ("bravo", "charlie"):
        push_memory(robots[name].directory, uri, name)
    # A child updates row by row and is killed (SIGKILL) in its transaction number ``at``:
    # just after it began, or with its statements run but not committed.
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, uri, str(replica), str(at), where],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    said = child.stdout.readline().strip()
    child.kill()
    child.wait()
    monkeypatch.setattr(replica_update, "REBUILD_SHARE", 1.0)
    report = replicate(uri, replica)
    if said == "updated":  # the update has fewer transactions than ``at``
        assert report.how == "current"
    else:
        assert said == "stop"
        assert (report.how, report.reason) == ("rebuilt", "an earlier update did not finish")
    _same_as_whole(uri, replica, root, f"kill-{at}-{where}")


@pytest.mark.parametrize("seed", range(1, 1 + campaign.repeat(1, 3)))
def test_random_rounds_of_writes_and_pushes_keep_the_replica_equal_to_a_whole_build(
    fleet: dict[str, Any], monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Differential: random rounds (robots seeing things, consolidating, adding and forgetting
    user knowledge, a robot copied from another, pushes of some robots only) and after each an
    update, compared with a replica built whole. The default run plays one seed and fewer
    rounds; the long campaigns play more of both. Each kind of change, in a fixed order:
    test_an_updated_replica_holds_what_a_replica_built_whole_holds."""
    rng = random.Random(seed)
    uri, robots, root = fleet["uri"], fleet["robots"], fleet["root"]
    monkeypatch.setattr(replica_update, "REBUILD_SHARE", 1.0)
    replica = root / "replica"
    replicate(uri, replica)
    things = ["crate", "barrel", "hose", "drill", "kettle", "ladder", "mop", "bucket"]
    aliases: dict[str, set[str]] = {"bravo": {"my toolbox"}, "charlie": {"my mug"}}
    for round_number in range(campaign.repeat(3, 6)):
        for name in sorted(robots):
            robot = robots[name]
            action = rng.choice(["see", "see", "profile", "forget", "consolidate", "rest"])
            if action == "see":
                chosen = rng.sample(things, rng.randint(1, 3))
                robot.visit(_patrol(chosen, rng.uniform(-5.0, 5.0)))
            elif action == "profile":
                alias = rng.choice(["my toolbox", "work box", "my mug", "spare box"])
                robot.visit(_profile(alias, rng.sample(["red toolbox", "blue mug", "crate"], 2)))
                aliases.setdefault(name, set()).add(alias)
            elif action == "forget" and aliases.get(name):
                alias = sorted(aliases[name])[0]
                robot.visit(_forget(alias))
                aliases[name].discard(alias)
            elif action == "consolidate":
                robot.visit(_consolidate)
        if round_number == 2:  # a new robot, copied from one that exists
            source = rng.choice(sorted(robots))
            copy = Robot(f"a{seed}", root / f"a{seed}", robots[source].now)
            shutil.copytree(robots[source].directory, copy.directory)
            robots[copy.name] = copy
            aliases[copy.name] = set(aliases.get(source, set()))
        for name in sorted(robots):
            if rng.random() < 0.7:
                push_memory(robots[name].directory, uri, name, frame=fleet["frames"].get(name))
        report = replicate(uri, replica)
        assert report.how in ("updated", "current"), report.describe()
        _same_as_whole(uri, replica, root, f"{seed}-{round_number}")


def test_reading_a_location_nothing_was_pushed_to_refuses_and_creates_nothing(
    tmp_path: Path,
) -> None:
    nowhere = tmp_path / "no-fleet"
    with pytest.raises(InvalidInputError, match="holds no fleet"):
        replicate(str(nowhere), tmp_path / "replica")
    asked = subprocess.run(
        [*CLI, "fleet", "ask", str(nowhere), "temporal_query", "{}", "--embedder", "hashing"],
        capture_output=True,
        text=True,
    )
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == "No observations found."
    assert sorted(p.name for p in tmp_path.iterdir()) == []
