"""Fleet memory: three robots (own map frames and areas) push to a real S3-compatible server on
loopback (moto's, started here) and to a plain directory; the fleet's answers are checked
against the union of each robot's own answers, and pushes are repeated, cut and resumed."""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import campaign
import pyarrow as pa
import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import InvalidInputError
from emem_graph.evals.moto_s3 import atomic_conditional_puts
from emem_graph.fleet import FleetLocation, FleetMemory, Frame, push_memory
from emem_graph.fleet.location import FleetStorageError
from emem_graph.fleet.replica import build_replica
from emem_graph.fleet.shared_table import SCALAR_INDEXES, SharedTable, record_schema
from emem_graph.fleet.tools import FLEET_TOOLS
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.store import GRAPH_FILE

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

BUCKET = "fleet"
CLI = (sys.executable, "-m", "emem_graph.cli")
DAY = 86_400.0
LINE_RE = re.compile(r"^\d+\. (?:\[robot (?P<robot>[^\]]+)\] )?(?P<rest>.*)$")


@dataclass
class Robot:
    """A simulated robot: its name, where its map frame sits in the fleet frame, its own
    start time and what it sees (text, x, y in its own frame)."""

    name: str
    frame: Frame
    start: float
    seen: list[tuple[str, float, float]]
    entities: list[tuple[str, float, float]] = field(default_factory=list)

    def local(self, fx: float, fy: float) -> tuple[float, float]:
        """A fleet-frame point in this robot's frame."""
        dx, dy = fx - self.frame.x, fy - self.frame.y
        c, s = math.cos(self.frame.yaw), math.sin(self.frame.yaw)
        return c * dx + s * dy, -s * dx + c * dy


def _robots() -> list[Robot]:
    a = Robot(
        "alpha",
        Frame(0.0, 0.0, 0.0),
        1_790_000_000.0,
        [
            ("a kettle on the kitchen counter", 1.0, 2.0),
            ("a red toolbox by the kitchen door", 4.0, 0.5),
            ("a bowl of apples on the table", 2.5, 3.0),
        ],
    )
    b = Robot(
        "bravo",
        Frame(10.0, -5.0, math.pi / 2),
        1_790_000_100.0,
        [
            ("a drill on the workbench", 0.0, 0.0),
            ("a ladder against the wall", 3.0, -1.0),
            ("a stack of pallets in the corner", -2.0, -2.0),
        ],
    )
    c = Robot(
        "charlie",
        Frame(-20.0, 8.0, math.pi),
        1_790_000_200.0,
        [
            ("a fire extinguisher in the corridor", 1.0, 1.0),
            ("a vending machine near the stairs", 5.0, 0.0),
        ],
    )
    # alpha and bravo both see the red toolbox at one place of the fleet frame (4, 0.5).
    a.entities = [("red toolbox", 4.0, 0.5), ("kettle", 1.0, 2.0)]
    b.entities = [("red toolbox", *b.local(4.2, 0.5)), ("drill", 0.0, 0.0)]
    c.entities = [("fire extinguisher", 1.0, 1.0)]
    return [a, b, c]


def _build(robot: Robot, directory: Path, extra: int = 0, extra_start: float = 0.0) -> None:
    """Write the robot's memory (or, with ``extra``, that many more observations a day
    later) and close it."""
    now = [robot.start + extra_start]

    def clock() -> float:
        return now[0]

    memory = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(directory), maintenance_interval=None),
        embedding_provider=HashingEmbedder(384),
        get_current_time=clock,
    )
    try:
        if extra:
            for i in range(extra):
                now[0] += 60.0
                memory.add(f"patrol note {i} of {robot.name}", i % 7, i % 5, timestamp=now[0])
            return
        for text, x, y in robot.seen:
            now[0] += 10.0
            memory.add(text, x, y, timestamp=now[0], layer_name="vision")
        for name, x, y in robot.entities:
            now[0] += 10.0
            memory.add_entity(name, x, y, timestamp=now[0])
    finally:
        memory.close()


def _copy(directory: Path, to: Path) -> None:
    """A copy of a robot's memory with its files' times, so their seals hold and opening the
    copy needs no probe in a child process (storage/probe.py). The copy that loses its times
    (``cp -r``, a robot provisioned by hand) is test_two_robots_copied_from_one_memory's."""
    shutil.copytree(directory, to)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _RequestCounter(logging.Handler):
    """Counts the requests moto's server logs (one line per HTTP request)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, object]]:
    """A moto S3 server on 127.0.0.1 (random port) with the bucket, its AWS_* variables set
    for this process and the pushes' child processes."""
    with atomic_conditional_puts():  # S3's guarantee, which moto lacks (evals/moto_s3.py)
        port = _free_port()
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        counter = _RequestCounter()
        werkzeug = logging.getLogger("werkzeug")
        werkzeug.addHandler(counter)
        werkzeug.propagate = False
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield {"client": client, "requests": counter}
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        werkzeug.removeHandler(counter)
        server.stop()


@pytest.fixture(scope="module")
def robots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Robot, Path]]:
    """The three robots' memories, written once per module (tests that add copy them)."""
    root = tmp_path_factory.mktemp("robots")
    built = {}
    for robot in _robots():
        _build(robot, root / robot.name)
        built[robot.name] = (robot, root / robot.name)
    return built


def _objects(s3: dict[str, object], prefix: str) -> dict[str, str]:
    """Key -> ETag of every object under the prefix."""
    client = s3["client"]
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {o["Key"]: o["ETag"] for page in pages for o in page.get("Contents", [])}


def _cli_push(
    directory: Path, uri: str, robot: Robot, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    frame = ",".join(repr(v) for v in robot.frame.as_list())
    return subprocess.Popen(
        [*CLI, "fleet", "push", str(directory), uri, "--robot", robot.name, f"--frame={frame}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


def _lines(answer: str) -> list[tuple[str | None, str]]:
    """(robot, the rest of the line) of each numbered line."""
    found = []
    for line in answer.splitlines():
        match = LINE_RE.match(line)
        if match:
            found.append((match["robot"], match["rest"]))
    return found


def _own_memory(directory: Path) -> SpatioTemporalMemory:
    return SpatioTemporalMemory(
        db_path=str(directory), embedding_provider=HashingEmbedder(384), read_only=True
    )


def _fleet(uri: str | FleetLocation) -> FleetMemory:
    return FleetMemory(uri, embedding_provider=HashingEmbedder(384), get_current_time=lambda: 2e9)


@pytest.fixture(scope="module")
def pushed(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]]
) -> tuple[str, dict[str, object]]:
    """The three robots pushed at once, each from its own process, to s3://fleet/pushed."""
    uri = f"s3://{BUCKET}/pushed"
    before = s3["requests"].count
    processes = [_cli_push(directory, uri, robot) for robot, directory in robots.values()]
    outputs = [p.communicate(timeout=120) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert "push 1 committed" in out
    return uri, {"requests": s3["requests"].count - before}


def test_three_robots_pushing_at_once_all_land(
    pushed: tuple[str, dict[str, object]], robots: dict[str, tuple[Robot, Path]]
) -> None:
    uri, stats = pushed
    fleet = _fleet(uri)
    assert fleet.robots() == {"alpha": 1, "bravo": 1, "charlie": 1}
    table = SharedTable(FleetLocation(uri))
    observations = sum(len(robot.seen) for robot, _ in robots.values())
    entities = sum(len(robot.entities) for robot, _ in robots.values())
    assert table.count("kind = 'observation'") == observations
    assert table.count("kind = 'entity'") == entities
    assert 0 < int(stats["requests"]) < 2_000


def _rows(robot: str, push: int, n: int, dim: int = 8) -> pa.Table:
    """``n`` shared-table rows of ``robot``'s push ``push`` (ids 0..n-1)."""
    columns: dict[str, object] = {
        "row_id": [f"{robot}/{i}@{push}" for i in range(n)],
        "key": [f"{robot}/{i}" for i in range(n)],
        "robot": [robot] * n,
        "id": [str(i) for i in range(n)],
        "kind": ["observation"] * n,
        "vector": [[float(i + 1)] * dim for i in range(n)],
        "push": [push] * n,
    }
    schema = record_schema(dim)
    return pa.table(
        {f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in schema}, schema=schema
    )


def _row_ids(location: FleetLocation) -> list[str]:
    table = SharedTable(location)
    return sorted(table.scan("true", ["row_id"]).column("row_id").to_pylist())


class _LateCreate:
    """A LanceDB connection as a robot sees it when its create lost the race by a hair: its
    check found no table, and its create commits after another robot's create and appends.
    LanceDB commits such a create as an Overwrite at the latest version, over the appends
    (seen with a create slowed by the data it wrote; the racing creates of
    test_robots_creating_and_appending_at_once_lose_no_row are Overwrites too, "Overwrite at
    version 2"); mode="overwrite" commits the same transaction at will, so the race is forced
    here. ``meanwhile`` runs just after it commits."""

    def __init__(self, db: Any, meanwhile: Callable[[], None] = lambda: None) -> None:
        self._db = db
        self._meanwhile = meanwhile
        self._created = False

    def open_table(self, name: str) -> Any:
        if not self._created:
            raise ValueError(f"Table '{name}' was not found")
        return self._db.open_table(name)

    def create_table(self, name: str, schema: pa.Schema, **_: Any) -> Any:
        table = self._db.create_table(name, schema=schema, mode="overwrite")
        self._created = True
        self._meanwhile()
        return table


@pytest.mark.parametrize("where", ["dir", "s3"])
def test_a_create_that_lost_the_race_puts_back_the_rows_it_overwrote(
    where: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if where == "s3":
        request.getfixturevalue("s3")
        location = FleetLocation(f"s3://{BUCKET}/late-create")
    else:
        location = FleetLocation(str(tmp_path / "fleet"))
    alpha = SharedTable(location)
    alpha.ensure(8)
    alpha.append(_rows("alpha", 1, 3))
    alpha.append(_rows("alpha", 2, 2))  # ids 0 and 1 again: 0@1 and 1@1 superseded
    alpha.delete("robot = 'alpha' AND push < 2 AND id IN ('0', '1')")

    def alpha_pushes_on() -> None:  # on alpha's handle, from before bravo's create
        alpha.append(_rows("alpha", 3, 3).slice(2))  # id 2 again: 2@1 superseded
        alpha.delete("robot = 'alpha' AND push < 3 AND id IN ('2')")

    bravo = SharedTable(location)
    bravo._db = _LateCreate(bravo._db, alpha_pushes_on)
    bravo.ensure(8)  # commits an Overwrite at version 5, then puts back what it hid
    bravo.append(_rows("bravo", 1, 2))
    assert _row_ids(location) == [
        "alpha/0@2", "alpha/1@2", "alpha/2@3", "bravo/0@1", "bravo/1@1"
    ]  # fmt: skip


def test_a_late_create_with_another_dimension_gives_the_table_back_and_is_refused(
    tmp_path: Path,
) -> None:
    location = FleetLocation(str(tmp_path / "fleet"))
    alpha = SharedTable(location)
    alpha.ensure(8)
    alpha.append(_rows("alpha", 1, 3))
    bravo = SharedTable(location)
    bravo._db = _LateCreate(bravo._db)
    with pytest.raises(FleetStorageError, match="8-dimensional vectors"):
        bravo.ensure(16)
    assert SharedTable(location).dim == 8
    alpha.append(_rows("alpha", 2, 1))
    assert _row_ids(location) == ["alpha/0@1", "alpha/0@2", "alpha/1@1", "alpha/2@1"]


RACERS = 4


def _race(location: FleetLocation) -> list[str]:
    """RACERS robots (threads, each its own SharedTable) create the fresh table at once and
    append two pushes each; the errors they met."""
    barrier = threading.Barrier(RACERS)
    errors: list[str] = []

    def robot(name: str) -> None:
        table = SharedTable(location)
        barrier.wait()
        try:
            table.ensure(8)
            table.append(_rows(name, 1, 2))
            table.append(_rows(name, 2, 1))
        except Exception as exc:
            errors.append(f"{name}: {exc}")

    threads = [threading.Thread(target=robot, args=(f"r{i}",)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_the_test_servers_conditional_puts_are_atomic_as_s3s(
    s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """LanceDB commits a version with a put "if none match": of several at once S3 lets one
    through. moto checks and stores in two steps; with its store slowed, every one of six
    concurrent puts succeeded and the race below lost rows (evals/moto_s3.py). The fixture
    makes the two steps one."""
    from moto.s3 import models

    store = models.S3Backend.put_object

    def slow_store(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return store(self, *args, **kwargs)

    monkeypatch.setattr(models.S3Backend, "put_object", slow_store)
    client = s3["client"]
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def put(i: int) -> None:
        barrier.wait()
        try:
            client.put_object(Bucket=BUCKET, Key="once/manifest", Body=str(i), IfNoneMatch="*")
            outcomes.append("stored")
        except client.exceptions.ClientError as exc:
            outcomes.append(exc.response["Error"]["Code"])

    threads = [threading.Thread(target=put, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["PreconditionFailed"] * 5 + ["stored"]


@pytest.mark.parametrize(
    ("where", "rounds"), [("dir", campaign.repeat(6, 25)), ("s3", campaign.repeat(4, 16))]
)
def test_robots_creating_and_appending_at_once_lose_no_row(
    where: str, rounds: int, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Real races, round after round: whether a round loses the race by a hair is chance, so
    the long campaigns run many rounds; the lost race itself is forced every run by
    test_a_create_that_lost_the_race_puts_back_the_rows_it_overwrote (dir and s3)."""
    if where == "s3":
        request.getfixturevalue("s3")
    expected = sorted(
        f"r{i}/{j}@{push}" for i in range(RACERS) for push, n in ((1, 2), (2, 1)) for j in range(n)
    )
    raced = 0
    for round_ in range(rounds):
        uri = f"s3://{BUCKET}/race-{round_}" if where == "s3" else str(tmp_path / f"race-{round_}")
        location = FleetLocation(uri)
        errors = _race(location)
        assert not errors, f"round {round_}: {errors}"
        assert _row_ids(location) == expected, f"round {round_}"
        # An append adds rows; a version past 1 that holds no more rows than the one before
        # is a create that LanceDB committed as an Overwrite.
        table = SharedTable(location)
        assert table.exists
        rows = [int(v["metadata"]["total_rows"]) for v in table._table.list_versions()]
        raced += any(after <= before for before, after in itertools.pairwise(rows))
    print(f"{where}: {raced} of {rounds} rounds had a create committed past version 1")


def test_fleet_temporal_answer_is_the_union_of_the_robots_answers_in_the_fleet_frame(
    pushed: tuple[str, dict[str, object]], robots: dict[str, tuple[Robot, Path]]
) -> None:
    uri, _ = pushed
    fleet_lines = _lines(_fleet(uri).temporal_query(order="oldest", n_results=100))
    expected = []
    for robot, directory in robots.values():
        with _own_memory(directory) as memory:
            own = _lines(memory.temporal_query(order="oldest", n_results=100))
        for (_, rest), (text, x, y) in zip(own, robot.seen, strict=True):
            fx, fy = robot.frame.apply(x, y)
            moved = re.sub(r"\(-?[\d.]+,-?[\d.]+\)", f"({fx:.1f},{fy:.1f})", rest, count=1)
            assert moved.endswith(text)
            expected.append((robot.name, moved))
    assert sorted(fleet_lines) == sorted(expected)
    times = [re.search(r"\[(\d{4}-[^\]]+)\]", rest)[1] for _, rest in fleet_lines]
    assert times == sorted(times)


def test_fleet_spatial_answer_is_the_union_of_each_robots_answer_around_the_same_place(
    pushed: tuple[str, dict[str, object]], robots: dict[str, tuple[Robot, Path]]
) -> None:
    uri, _ = pushed
    fleet = _fleet(uri)
    for fx, fy, radius in ((3.0, 1.0, 4.0), (10.0, -3.0, 6.0), (-21.0, 7.0, 5.0), (0, 0, 40)):
        answer = fleet.spatial_query(fx, fy, radius=radius, n_results=50)
        found = {(r, rest.rsplit("] ", 1)[1]) for r, rest in _lines(answer)}
        union = set()
        for robot, directory in robots.values():
            lx, ly = robot.local(fx, fy)
            with _own_memory(directory) as memory:
                own = memory.spatial_query(lx, ly, radius=radius, n_results=50)
            union |= {(robot.name, rest.rsplit("] ", 1)[1]) for _, rest in _lines(own)}
        assert found == union, (fx, fy)
        assert found


def test_semantic_search_finds_each_robots_own_best_answer_and_names_its_robot(
    pushed: tuple[str, dict[str, object]], robots: dict[str, tuple[Robot, Path]]
) -> None:
    uri, _ = pushed
    fleet = _fleet(uri)
    for robot, directory in robots.values():
        text = robot.seen[-1][0]
        with _own_memory(directory) as memory:
            own_best = _lines(memory.semantic_search(text, n_results=1))[0][1]
        fleet_best = _lines(fleet.semantic_search(text, n_results=3))[0]
        assert fleet_best[0] == robot.name
        assert fleet_best[1].endswith(own_best.rsplit("] ", 1)[1])
        only = _lines(fleet.semantic_search("a red toolbox", robot=robot.name))
        assert only and {r for r, _ in only} == {robot.name}


def test_entities_seen_by_two_robots_are_one_fleet_entity_with_both_sightings(
    pushed: tuple[str, dict[str, object]],
) -> None:
    uri, _ = pushed
    fleet = _fleet(uri)
    answer = fleet.entity_query(name="toolbox")
    assert len(answer.splitlines()) == 1, answer
    assert answer.startswith("1. [robots alpha, bravo] [entity/object] (4.1,0.5) [seen 2x]")
    assert "alpha: 1x at (4.0,0.5)" in answer and "bravo: 1x at (4.2,0.5)" in answer
    names = [f.entity.name for f in fleet.fleet_entities()]
    assert sorted(names) == ["drill", "fire extinguisher", "kettle", "red toolbox"]
    assert fleet.entity_query(name="toolbox", robot="charlie") == "No entities found."


def test_locate_and_recall_answer_in_the_fleet_frame(
    pushed: tuple[str, dict[str, object]],
) -> None:
    uri, _ = pushed
    fleet = _fleet(uri)
    answer = fleet.locate("a drill on the workbench")
    assert answer.splitlines()[0] == "Location: (10.0, -5.0, 0.0)"
    assert "[robot bravo]" in answer
    recall = fleet.recall("a fire extinguisher in the corridor")
    assert recall.startswith("About 'a fire extinguisher in the corridor' — location (-21.0, 7.0)")
    assert "[robot charlie] [vision] (-21.0,7.0)" in recall
    assert fleet.search_gists("kitchen") == "No gists found."


def test_two_robots_copied_from_one_memory_each_answer_with_their_own_rows(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    """bravo is provisioned from a copy of alpha's memory, so the two share every record id,
    and pushes half a metre along x: a row is one version of one record of one robot, so
    every answer without a robot filter holds both robots' rows."""
    robot, directory = robots["alpha"]
    uri = f"s3://{BUCKET}/copied"
    copy = tmp_path / "bravo"
    subprocess.run(["cp", "-r", str(directory), str(copy)], check=True)
    push_memory(directory, uri, "alpha")
    push_memory(copy, uri, "bravo", frame=Frame(0.5, 0.0, 0.0))
    fleet = _fleet(uri)
    text = robot.seen[1][0]  # the red toolbox by the kitchen door, at (4.0, 0.5)
    found = dict(_lines(fleet.semantic_search(text, n_results=2)))
    assert sorted(found) == ["alpha", "bravo"]
    assert found["alpha"].startswith("[vision] (4.0,0.5)") and found["alpha"].endswith(text)
    assert found["bravo"].startswith("[vision] (4.5,0.5)") and found["bravo"].endswith(text)
    assert {r for r, _ in _lines(fleet.temporal_query(n_results=50))} == {"alpha", "bravo"}
    assert len(_lines(fleet.temporal_query(n_results=50))) == 2 * len(robot.seen)
    entities = fleet.entity_query(name="toolbox")
    assert "alpha: 1x at (4.0,0.5)" in entities and "bravo: 1x at (4.5,0.5)" in entities
    located = fleet.locate(text, n_results=2)
    assert "Based on: 2 memories (1x robot alpha, 1x robot bravo)" in located
    rows = SharedTable(FleetLocation(uri)).scan("kind = 'observation'", ["robot", "id", "key"])
    assert rows.num_rows == 2 * len(robot.seen)
    for row in rows.to_pylist():
        assert row["key"] == f"{row['robot']}/{row['id']}"


def test_a_push_cut_after_its_commit_leaves_its_superseded_rows_to_the_next_push(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    """A push with a new frame is killed just after its manifest is written, before it
    deletes the versions it superseded; the next push (with other changes) deletes them too:
    no answer shows a record where it was before the new frame."""
    robot, directory = robots["alpha"]
    uri = f"s3://{BUCKET}/cut-after-commit"
    push_memory(directory, uri, robot.name)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_PUSH, str(directory), uri, robot.name, "after-manifest"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    table = SharedTable(FleetLocation(uri))
    assert table.count("push = 1") > 0  # the moved rows' old versions are still there
    copy = tmp_path / "alpha"
    _copy(directory, copy)
    _build(robot, copy, extra=2, extra_start=DAY)
    assert push_memory(copy, uri, robot.name).push == 3
    table.refresh()
    assert table.count("push = 1") == 0
    records = len(robot.seen) + 2 + len(robot.entities)
    assert table.count("robot = 'alpha'") == records  # one version of each record
    fleet = _fleet(uri)
    assert fleet.spatial_query(1.0, 2.0, radius=0.5) == "No observations found."
    kettle = fleet.spatial_query(51.0, 2.0, radius=0.5)
    assert kettle.startswith("1. [robot alpha] [vision] (51.0,2.0)")


def test_a_refresh_that_a_push_overtakes_answers_a_committed_state(
    s3: dict[str, object],
    robots: dict[str, tuple[Robot, Path]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A push commits and deletes its superseded rows while a FleetMemory refreshes (after
    it read the manifests, before it reads rows): the answers are those of a committed
    state, never fewer rows."""
    from emem_graph.fleet import memory as fleet_memory

    robot, directory = robots["alpha"]
    uri = f"s3://{BUCKET}/overtaken"
    push_memory(directory, uri, robot.name)
    fleet = _fleet(uri)
    before = fleet.entity_query()
    assert len(_lines(before)) == len(robot.entities)
    read_committed = fleet_memory.read_committed
    overtaken = []

    def read_then_push(where: FleetLocation) -> object:
        committed = read_committed(where)
        if not overtaken:
            overtaken.append(push_memory(directory, uri, robot.name, frame=Frame(50.0, 0, 0)))
        return committed

    monkeypatch.setattr(fleet_memory, "read_committed", read_then_push)
    fleet.refresh()
    assert overtaken and overtaken[0].push == 2
    assert fleet.robots() == {"alpha": 1}
    assert fleet.entity_query() == before
    assert len(_lines(fleet.temporal_query(n_results=50))) == len(robot.seen)
    fleet.refresh()
    assert fleet.robots() == {"alpha": 2}
    assert "(54.0,0.5)" in fleet.entity_query(name="toolbox")


def test_pushing_again_with_nothing_changed_writes_nothing(
    s3: dict[str, object],
    pushed: tuple[str, dict[str, object]],
    robots: dict[str, tuple[Robot, Path]],
) -> None:
    uri, _ = pushed
    before = _objects(s3, "pushed/")
    rows = SharedTable(FleetLocation(uri)).count()
    for robot, directory in robots.values():
        report = push_memory(directory, uri, robot.name)  # the frame is the last push's
        assert report.nothing_changed and report.push == 1
    assert _objects(s3, "pushed/") == before
    assert SharedTable(FleetLocation(uri)).count() == rows


_KILLED_PUSH = textwrap.dedent(
    """
    import os, signal, sys
    from emem_graph.fleet import push, shared_table, location
    cut = sys.argv[4]
    if cut == "vectors":  # after the first shared-table commit, before the manifest
        append = shared_table.SharedTable.append
        def append_then_die(self, rows):
            append(self, rows)
            os.kill(os.getpid(), signal.SIGKILL)
        shared_table.SharedTable.append = append_then_die
    elif cut == "manifest":  # after the state, as the manifest was to be written
        write_json = location.FleetLocation.write_json
        def die_at_manifest(self, relative, value):
            if relative.endswith("manifest.json"):
                os.kill(os.getpid(), signal.SIGKILL)
            write_json(self, relative, value)
        location.FleetLocation.write_json = die_at_manifest
    elif cut == "after-manifest":  # committed, before its superseded rows are deleted
        write_json = location.FleetLocation.write_json
        def die_after_manifest(self, relative, value):
            write_json(self, relative, value)
            if relative.endswith("manifest.json"):
                os.kill(os.getpid(), signal.SIGKILL)
        location.FleetLocation.write_json = die_after_manifest
        frame = push.Frame(50.0, 0.0, 0.0)
        push.push_memory(sys.argv[1], sys.argv[2], sys.argv[3], frame=frame)
    push.push_memory(sys.argv[1], sys.argv[2], sys.argv[3])
    """
)


@pytest.mark.parametrize("cut", ["vectors", "manifest"])
def test_a_push_killed_midway_leaves_nothing_visible_and_the_next_push_completes_it(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]], tmp_path: Path, cut: str
) -> None:
    robot, directory = robots["alpha"]
    uri = f"s3://{BUCKET}/killed-{cut}"
    push_memory(directory, uri, robot.name)
    fleet = _fleet(uri)
    before = fleet.temporal_query(n_results=100)
    copy = tmp_path / "alpha"
    _copy(directory, copy)
    _build(robot, copy, extra=5, extra_start=DAY)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_PUSH, str(copy), uri, robot.name, cut],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    table = SharedTable(FleetLocation(uri))
    assert table.count("push = 2") > 0  # the cut push's rows are there...
    fleet.refresh()
    assert fleet.robots() == {"alpha": 1}
    assert fleet.temporal_query(n_results=100) == before  # ...but nothing of them is visible
    report = push_memory(copy, uri, robot.name)
    assert report.push == 2 and report.changed["Observation"] == 5
    fleet.refresh()
    after = _lines(fleet.temporal_query(n_results=100))
    assert len(after) == len(robot.seen) + 5
    assert len({rest for _, rest in after}) == len(after)  # no record twice
    assert table.count("robot = 'alpha' AND kind = 'observation'") == len(robot.seen) + 5


def test_what_a_cut_push_wrote_never_shows_after_a_later_push_of_other_changes(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    robot, directory = robots["alpha"]
    uri = str(tmp_path / "fleet")
    push_memory(directory, uri, robot.name)
    with_ladder = tmp_path / "with-ladder"
    _copy(directory, with_ladder)
    memory = SpatioTemporalMemory(db_path=str(with_ladder), embedding_provider=HashingEmbedder(384))
    memory.add_entity("ladder", 9.0, 9.0, timestamp=robot.start + DAY)
    memory.close()
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_PUSH, str(with_ladder), uri, robot.name, "manifest"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # The robot's memory goes on without the ladder (restored from before), and changes.
    later = tmp_path / "later"
    _copy(directory, later)
    _build(robot, later, extra=3, extra_start=DAY)
    assert push_memory(later, uri, robot.name).push == 2
    fleet = _fleet(uri)
    assert "ladder" not in fleet.entity_query(n_results=50)
    assert len(_lines(fleet.temporal_query(n_results=50))) == len(robot.seen) + 3
    replica = build_replica(uri, tmp_path / "replica")
    assert replica.nodes["Entity"] == len(robot.entities)


def test_a_killed_cli_push_at_any_moment_leaves_an_all_or_nothing_fleet(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]]
) -> None:
    robot, directory = robots["charlie"]
    uri = f"s3://{BUCKET}/sigkill"
    process = _cli_push(directory, uri, robot)
    try:
        process.communicate(timeout=1.8)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.communicate()
    fleet = _fleet(uri)
    lines = _lines(fleet.temporal_query(n_results=100))
    assert len(lines) in (0, len(robot.seen))
    push_memory(directory, uri, robot.name, frame=robot.frame)
    fleet.refresh()
    assert len(_lines(fleet.temporal_query(n_results=100))) == len(robot.seen)


def test_a_day_offline_backlog_is_pushed_incrementally(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    robot, directory = robots["bravo"]
    uri = f"s3://{BUCKET}/backlog"
    copy = tmp_path / "bravo"
    _copy(directory, copy)
    first = push_memory(copy, uri, robot.name, frame=robot.frame)
    assert first.changed["Observation"] == len(robot.seen)
    _build(robot, copy, extra=120, extra_start=DAY)  # two hours of notes, a day later
    backlog = push_memory(copy, uri, robot.name)
    assert backlog.push == 2
    assert backlog.changed["Observation"] == 120  # only what changed is sent
    assert backlog.changed["Entity"] == 0
    fleet = _fleet(uri)
    newest = _lines(fleet.temporal_query(n_results=1))[0]
    assert newest[0] == "bravo" and newest[1].endswith("patrol note 119 of bravo")
    # positions of the backlog are in the fleet frame too (the frame kept from push 1)
    fx, fy = robot.frame.apply(119 % 7, 119 % 5)
    assert f"({fx:.1f},{fy:.1f})" in newest[1]


def test_a_replica_holds_each_robots_committed_rows_once_in_the_fleet_frame(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    uri = str(tmp_path / "fleet")
    for robot, directory in robots.values():
        push_memory(directory, uri, robot.name, frame=robot.frame)
    _, directory = robots["alpha"]
    copy = tmp_path / "alpha"
    _copy(directory, copy)
    memory = SpatioTemporalMemory(
        db_path=str(copy), embedding_provider=HashingEmbedder(384), get_current_time=lambda: 2e9
    )
    memory.add_entity("kettle", 1.1, 2.0, timestamp=2e9)  # the kettle's row changes
    memory.close()
    assert push_memory(copy, uri, "alpha").changed["Entity"] == 1
    report = build_replica(uri, tmp_path / "replica")
    assert report.robots == {"alpha": 2, "bravo": 1, "charlie": 1}
    assert report.nodes["Observation"] == sum(len(r.seen) for r, _ in robots.values())
    assert report.nodes["Entity"] == sum(len(r.entities) for r, _ in robots.values())
    with pytest.raises(InvalidInputError, match="exists"):
        build_replica(uri, tmp_path / "replica")
    cypher = (
        "MATCH (e:Entity)-[:REMEMBERED_BY]->(r:Robot) RETURN r.name AS robot, e.name AS name, "
        "e.observation_count AS seen, e.x AS x, e.y AS y ORDER BY robot, name"
    )
    # Read in this process; the cypher command on a replica is
    # test_fleet_replica_update.py::test_the_cli_builds_then_updates_the_replica's.
    graph = GraphDB(tmp_path / "replica" / GRAPH_FILE, read_only=True)
    try:
        rows = graph.query_text(cypher)
    finally:
        graph.close()
    assert [(r["robot"], r["name"], r["seen"]) for r in rows] == [
        ("alpha", "kettle", 2), ("alpha", "red toolbox", 1), ("bravo", "drill", 1),
        ("bravo", "red toolbox", 1), ("charlie", "fire extinguisher", 1),
    ]  # fmt: skip
    bravo_toolbox = next(r for r in rows if r["robot"] == "bravo" and r["name"] == "red toolbox")
    assert (round(bravo_toolbox["x"], 6), round(bravo_toolbox["y"], 6)) == (4.2, 0.5)


def test_a_file_uri_fleet_answers_like_the_s3_one(
    pushed: tuple[str, dict[str, object]], robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    s3_uri, _ = pushed
    local = tmp_path / "fleet"
    for robot, directory in robots.values():
        push_memory(directory, f"file://{local}", robot.name, frame=robot.frame)
    assert (local / "fleet.json").is_file()
    on_disk, on_s3 = _fleet(str(local)), _fleet(s3_uri)
    for ask in (
        lambda f: f.temporal_query(n_results=50),
        lambda f: f.spatial_query(5.0, 0.0, radius=20.0, n_results=50),
        lambda f: f.entity_query(),
        lambda f: f.locate("a ladder against the wall"),
    ):
        assert ask(on_disk) == ask(on_s3)


def test_compacting_the_shared_table_changes_no_answer_and_pushes_go_on(
    s3: dict[str, object], robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    uri = f"s3://{BUCKET}/compacted"
    for robot, directory in robots.values():
        push_memory(directory, uri, robot.name, frame=robot.frame)
    fleet = _fleet(uri)
    others = ["alpha", "bravo"]  # charlie pushes during the compaction
    asked = [
        lambda f: f.temporal_query(n_results=100),
        lambda f: f.entity_query(robot=others),
        lambda f: f.semantic_search("a ladder against the wall", robot=others),
        lambda f: f.spatial_query(0.0, 0.0, radius=50.0, n_results=50, robot=others),
    ]
    before = [ask(fleet) for ask in asked]
    robot, directory = robots["charlie"]
    copy = tmp_path / "charlie"
    _copy(directory, copy)
    _build(robot, copy, extra=20, extra_start=DAY)
    # charlie's push runs in a thread of its own (its own SharedTable, as another process's);
    # pushes from processes of their own at once: the ``pushed`` fixture.
    pushes: list[Any] = []

    def push() -> None:
        try:
            pushes.append(push_memory(copy, uri, robot.name))
        except Exception as exc:
            pushes.append(exc)

    pushing = threading.Thread(target=push)
    pushing.start()
    table = SharedTable(FleetLocation(uri))
    try:
        fragments, after = table.compact()
    finally:
        pushing.join(120)
    assert len(pushes) == 1 and getattr(pushes[0], "push", None) == 2, pushes
    assert after < fragments
    table.compact()
    fleet.refresh()
    now = _lines(fleet.temporal_query(n_results=100))
    assert len(now) == len(_lines(before[0])) + 20
    assert [ask(fleet) for ask in asked[1:]] == before[1:]


def test_the_shared_tables_scalar_indexes_change_no_answer(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    """The filters of every tool (robot and push visibility, kind, x, y, t) answer the same
    through the scalar indexes ``fleet compact`` builds as by a scan."""
    uri = str(tmp_path / "fleet")
    for robot, directory in robots.values():
        push_memory(directory, uri, robot.name, frame=robot.frame)
    fleet = _fleet(uri)
    start = min(r.start for r, _ in robots.values())
    asked = [
        lambda f: f.temporal_query(time_after=start + 15, time_before=start + 125, n_results=50),
        lambda f: f.spatial_query(4.0, 0.5, radius=3.0, n_results=50),
        lambda f: f.semantic_search("a red toolbox", robot=["alpha", "charlie"]),
        lambda f: f.locate("red toolbox"),
        lambda f: f.entity_query(near_x=4.0, near_y=0.5, spatial_radius=2.0),
    ]
    before = [ask(fleet) for ask in asked]
    assert not [a for a in before if not a or a.startswith("No ")], before
    table = SharedTable(FleetLocation(uri))
    assert table.index_columns(min_rows=1) == sorted(SCALAR_INDEXES)
    fleet.refresh()
    assert [ask(fleet) for ask in asked] == before


def test_a_push_refuses_a_location_it_did_not_create_and_bad_names(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    robot, directory = robots["alpha"]
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInputError, match="not an emem-graph fleet"):
        push_memory(directory, str(occupied), robot.name)
    assert sorted(p.name for p in occupied.iterdir()) == ["notes.txt"]
    with pytest.raises(InvalidInputError, match="robot name"):
        push_memory(directory, str(tmp_path / "fleet"), "../escape")
    with pytest.raises(InvalidInputError, match="x,y,yaw"):
        Frame.parse("1,2")
    with pytest.raises(InvalidInputError, match="scheme"):
        FleetLocation("ftp://host/fleet")
    with pytest.raises(InvalidInputError, match="names a host"):
        FleetLocation("file://fleet")  # file:///fleet or fleet
    with pytest.raises(InvalidInputError, match="no bucket"):
        FleetLocation("s3:///prefix")


def test_a_robot_name_ending_in_a_newline_and_a_frame_past_the_bound_are_refused_at_every_door(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name is matched whole: ``alpha\\n`` would make a folder ``robots/alpha\\n`` and
    split every answer line in two. A frame's offset beyond the memory's coordinate bound
    (1e9 m) is refused like any coordinate. The CLI's door is its ``main``, run here; that a
    refusal leaves its process in one line with exit status 2 is test_cli_errors_are_one_line's."""
    from emem_graph.cli import main

    robot, directory = robots["alpha"]
    uri = str(tmp_path / "fleet")
    with pytest.raises(InvalidInputError, match="robot name"):
        push_memory(directory, uri, "alpha\n")
    assert not (tmp_path / "fleet").exists()
    capsys.readouterr()
    for flag in ("--robot=alpha\n", "--frame=1e10,0,0"):
        status = main(["fleet", "push", str(directory), uri, "--robot=alpha", flag])
        err = capsys.readouterr().err
        assert status == 2, err
        assert err.count("\n") == 1, err
    assert not (tmp_path / "fleet").exists()
    with pytest.raises(InvalidInputError, match="MAX_COORDINATE"):
        Frame.parse("0,-2e9,0")
    push_memory(directory, uri, robot.name)
    fleet = _fleet(uri)
    answer = fleet.dispatch_tool_call("temporal_query", {"robot": "alpha\n"})
    assert answer.startswith("Error: robot name") and "\n" not in answer
    assert _lines(fleet.temporal_query(robot=["alpha"]))


def test_a_second_push_of_one_robot_is_refused_while_the_first_runs(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    """Two pushes of one robot to one fleet at once would each take the other's uncommitted
    rows for a cut push's and delete them: a push holds a lock for (fleet, robot), a second
    one is refused in one line and nothing it would write is written; other robots and other
    fleets push meanwhile; after the first ends, it pushes. (A CLI push refused so, in one
    line with exit status 2, from a process of its own: the tmpdir test below, dir and s3.)"""
    from emem_graph.fleet.push import push_lock

    robot, directory = robots["alpha"]
    other, other_directory = robots["bravo"]
    first, first_directory = robots["charlie"]
    uri = str(tmp_path / "fleet")
    where = FleetLocation(uri)
    push_memory(first_directory, uri, first.name)  # a push claims the root before its lock
    with push_lock(where, robot.name, directory):
        with pytest.raises(InvalidInputError, match="another push of robot 'alpha'"):
            push_memory(directory, uri, robot.name, frame=robot.frame)
        assert not where.exists("robots/alpha/manifest.json")
        push_memory(other_directory, uri, other.name, frame=other.frame)  # another robot
        push_memory(directory, str(tmp_path / "elsewhere"), robot.name)  # another fleet
    assert push_memory(directory, uri, robot.name, frame=robot.frame).push == 1


@pytest.mark.parametrize("where", ["dir", "s3"])
def test_a_push_is_refused_while_another_holds_the_lock_whatever_either_ones_tmpdir(
    robots: dict[str, tuple[Robot, Path]],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    """The lock lies beside what it guards, not in the temporary directory: a push running
    here with one TMPDIR holds it against a push of the same robot started with another
    TMPDIR (a cron job and a shell differ so). On a disk it is a hidden file in the robot's
    folder at the fleet, which no reader trips over; on an object store it is a lock on the
    memory directory, which stays unchanged (nothing is written into it)."""
    import tempfile

    from emem_graph.fleet import push as push_module

    if where == "s3":
        request.getfixturevalue("s3")
        uri = f"s3://{BUCKET}/tmpdirs"
    else:
        uri = str(tmp_path / "fleet")
    robot, directory = robots["alpha"]
    memory_files = sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))
    first_tmp, second_tmp = tmp_path / "tmp-first", tmp_path / "tmp-second"
    first_tmp.mkdir()
    second_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(first_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    holding, go_on = threading.Event(), threading.Event()
    read_snapshot = push_module.read_snapshot

    def held(*args: Any, **kwargs: Any) -> Any:
        holding.set()
        go_on.wait(120)
        return read_snapshot(*args, **kwargs)

    monkeypatch.setattr(push_module, "read_snapshot", held)
    reports: list[object] = []
    first = threading.Thread(
        target=lambda: reports.append(push_memory(directory, uri, robot.name, frame=robot.frame))
    )
    first.start()
    try:
        assert holding.wait(120)
        process = _cli_push(directory, uri, robot, env={"TMPDIR": str(second_tmp)})
        _, err = process.communicate(timeout=120)
    finally:
        go_on.set()
        first.join(120)
    assert process.returncode == 2, err
    assert len(err.strip().splitlines()) == 1 and "another push" in err, err
    assert len(reports) == 1 and getattr(reports[0], "push", None) == 1
    fleet = _fleet(uri)
    assert fleet.robots() == {"alpha": 1} and fleet.damaged_robots() == {}
    assert _lines(fleet.temporal_query(robot="alpha"))
    if where == "dir":
        assert (tmp_path / "fleet/robots/alpha/.push.lock").is_file()
        assert build_replica(uri, tmp_path / "replica").robots == {"alpha": 1}
    assert sorted(str(p.relative_to(directory)) for p in directory.rglob("*")) == memory_files
    monkeypatch.undo()
    assert push_memory(directory, uri, robot.name).nothing_changed  # the lock is free again


def test_a_push_whose_lock_cannot_be_made_says_so_in_one_line(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path, s3: dict[str, object]
) -> None:
    """On a disk, the robot's folder at the fleet must take the lock file; on an object
    store, the memory must be a directory to lock."""
    robot, directory = robots["alpha"]
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "fleet.json").write_text('{"format": "emem-graph-fleet", "version": 1}')
    (fleet / "robots").write_text("a file where the robots' folders belong")
    with pytest.raises(FleetStorageError, match="push lock") as caught:
        push_memory(directory, str(fleet), robot.name)
    assert "\n" not in str(caught.value)
    assert (fleet / "robots").read_text() == "a file where the robots' folders belong"
    with pytest.raises(InvalidInputError, match="is no directory") as refused:
        push_memory(tmp_path / "no-memory", f"s3://{BUCKET}/nodir", robot.name)
    assert "\n" not in str(refused.value)
    assert not _objects(s3, "nodir/robots/")


def test_cli_errors_are_one_line(robots: dict[str, tuple[Robot, Path]], tmp_path: Path) -> None:
    _, directory = robots["alpha"]
    result = subprocess.run(
        [*CLI, "fleet", "push", str(directory), str(tmp_path / "f"), "--robot", "no spaces"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "robot name" in result.stderr


def test_fleet_tools_by_name_and_their_definitions(
    pushed: tuple[str, dict[str, object]],
) -> None:
    uri, _ = pushed
    fleet = _fleet(uri)
    names = [d["function"]["name"] for d in fleet.get_tool_definitions()]
    assert names == [
        "semantic_search", "spatial_query", "temporal_query", "search_gists",
        "entity_query", "locate", "recall",
    ]  # fmt: skip
    for definition in fleet.get_tool_definitions():
        assert "robot" in definition["function"]["parameters"]["properties"]
    answer = fleet.dispatch_tool_call("entity_query", '{"name": "drill", "robot": "bravo"}')
    assert answer.startswith("1. [robot bravo] [entity/object]")
    assert fleet.dispatch_tool_call("episode_summary", {}).startswith("Error: unknown tool")
    assert fleet.dispatch_tool_call("locate", {"concept": ""}).startswith("Error: ")
    assert fleet.dispatch_tool_call("locate", {"concept": "x", "bogus": 1}).startswith("Error: ")


def test_frame_moves_points_rigidly() -> None:
    frame = Frame(10.0, -5.0, math.pi / 2)
    import numpy as np

    x, y = frame.apply(np.array([1.0, 0.0]), np.array([0.0, 2.0]))
    assert np.allclose(x, [10.0, 8.0]) and np.allclose(y, [-4.0, -5.0])


def test_fleet_serve_offers_the_fleet_tools_over_mcp_stdio(
    robots: dict[str, tuple[Robot, Path]], tmp_path: Path
) -> None:
    import asyncio

    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    uri = str(tmp_path / "fleet")
    for robot, directory in robots.values():
        push_memory(directory, uri, robot.name, frame=robot.frame)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    transport = StdioTransport(
        sys.executable,
        ["-m", "emem_graph.cli", "fleet", "serve", uri, "--embedder", "hashing"],
        env={**env, "HF_HUB_OFFLINE": "1"},
        keep_alive=False,
    )

    hostile = [
        ("spatial_query", {"x": 1e12, "y": 0.0}, "argument 'x'"),
        ("semantic_search", {"query": "toolbox", "n_results": 1e18}, "argument 'n_results'"),
        ("temporal_query", {"robot": ["alpha"] * 200_000}, "MAX_TOOL_LIST_ITEMS"),
        ("locate", {"concept": "x", "bogus": 1}, "bogus"),
    ]

    async def ask() -> tuple[list[str], str, list[tuple[bool, str]]]:
        async with Client(transport, timeout=60) as client:
            tools = [tool.name for tool in await client.list_tools()]
            answer = await client.call_tool("entity_query", {"name": "toolbox"})
            refused = []
            for tool, arguments, _ in hostile:
                result = await client.call_tool(tool, arguments, raise_on_error=False)
                refused.append((result.is_error, result.content[0].text))
            return tools, answer.content[0].text, refused

    tools, answer, refused = asyncio.run(ask())
    assert sorted(tools) == sorted(FLEET_TOOLS)
    assert answer.startswith("1. [robots alpha, bravo] [entity/object]")
    for (is_error, text), (tool, _, expected) in zip(refused, hostile, strict=True):
        assert is_error and text.startswith(f"Error: {tool}: ") and "\n" not in text, text
        assert expected in text, text


def test_compact_indexes_a_large_shared_table_and_searches_answer_as_a_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ANN_MIN_ROWS rows, ``compact`` builds the vectors' ANN index (IVF_SQ, re-ranked
    with the stored vectors) and searches go through it: against exact cosine over every row
    the predicate passes, the best row is the same, recall@10 is at least 0.9 and every
    score is exact; rows appended after the index are found too. Below the threshold
    nothing is indexed."""
    import numpy as np

    from emem_graph.fleet import shared_table as module

    location = FleetLocation(str(tmp_path / "fleet"))
    table = SharedTable(location)
    table.ensure(8)
    rng = np.random.default_rng(3)
    stored: dict[str, np.ndarray] = {}

    def rows(robot: str, n: int) -> pa.Table:
        made = _rows(robot, 1, n)
        vectors = rng.normal(size=(n, 8)).astype(np.float32)
        stored.update(zip(made.column("row_id").to_pylist(), vectors, strict=True))
        index = made.schema.get_field_index("vector")
        return made.set_column(
            index, "vector", pa.array(vectors.tolist(), made.schema.field("vector").type)
        )

    table.append(rows("alpha", 600))
    table.compact()
    assert table.indexed_rows() == 0  # under ANN_MIN_ROWS
    assert table.index_columns() == []
    monkeypatch.setattr(module, "ANN_MIN_ROWS", 500)
    table.compact()
    assert table.indexed_rows() == 600
    assert table.index_columns() == sorted(module.SCALAR_INDEXES)
    table.append(rows("bravo", 40))  # after the index
    recalls = []
    for robot in (None, "alpha", "bravo"):
        # through the robot, push and kind indexes (the x, y and t ones: FleetMemory's tests)
        predicate = "push <= 1 AND kind = 'observation'"
        if robot is not None:
            predicate += f" AND robot = '{robot}'"
        ids = [i for i in stored if robot is None or i.startswith(robot)]
        matrix = np.stack([stored[i] for i in ids]).astype(np.float64)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        for query in rng.normal(size=(12, 8)):
            distance = 1.0 - matrix @ (query / np.linalg.norm(query))
            exact = [ids[i] for i in np.argsort(distance)[:10]]
            found = table.search(query, predicate, 10, ["row_id"])
            assert found[0]["row_id"] == exact[0]
            recalls.append(len({r["row_id"] for r in found} & set(exact)) / 10)
            for row in found:
                at = ids.index(row["row_id"])
                assert row["_distance"] == pytest.approx(distance[at], abs=1e-5)
    assert sum(recalls) / len(recalls) >= 0.9
