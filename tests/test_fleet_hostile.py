"""Hostile or damaged files at a fleet location: a manifest, a push index, a state or a
removed-rows file of the wrong shape. One robot's bad files never stop the fleet from
answering about the others (that robot is left out, with a warning naming the file), a
replica leaves that robot out, and a push of that robot stops in one line naming the file;
nothing ever ends in a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import campaign
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from emem_graph import HashingEmbedder, SpatioTemporalMemory
from emem_graph.errors import EmemGraphError, InvalidInputError
from emem_graph.fleet import FleetLocation, FleetMemory, push_memory
from emem_graph.fleet.layout import MAX_PUSH, read_manifest
from emem_graph.fleet.location import DamagedFleetFileError
from emem_graph.fleet.replica import build_replica
from emem_graph.fleet.replica_update import replicate
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.store import GRAPH_FILE

CLI = (sys.executable, "-m", "emem_graph.cli")
START = 1_790_000_000.0
SEEN = {
    "alpha": "a red toolbox by the kitchen door",
    "bravo": "a red toolbox on the workbench",
    "charlie": "a red toolbox in the garage",
}
Damage = Callable[[Path], None]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _manifest(text: str) -> Damage:
    return lambda fleet: _write(fleet / "robots/charlie/manifest.json", text)


def _edited_manifest(**fields: object) -> Damage:
    def damage(fleet: Path) -> None:
        path = fleet / "robots/charlie/manifest.json"
        manifest = json.loads(path.read_text())
        manifest.update(fields)
        path.write_text(json.dumps(manifest))

    return damage


def _index(text: str) -> Damage:
    return lambda fleet: _write(fleet / "robots/charlie/graph/00000001/_index.json", text)


def _parquet(relative: str, table: pa.Table) -> Damage:
    return lambda fleet: pq.write_table(table, fleet / "robots/charlie" / relative)


def _not_parquet(relative: str) -> Damage:
    return lambda fleet: _write(fleet / "robots/charlie" / relative, "not parquet")


MANIFESTS = {
    "push is text": (_manifest('{"push": "abc"}'), "push must be a whole number"),
    "push is negative": (_edited_manifest(push=-3), "got -3"),
    "push is infinite": (_manifest('{"push": 1e999, "frame": [0, 0, 0]}'), "got inf"),
    "push is true": (_edited_manifest(push=True), "got True"),
    "push is a fraction": (_edited_manifest(push=1.5), "got 1.5"),
    "push is past the last": (_edited_manifest(push=MAX_PUSH + 1), "from 0 to 99999999"),
    "push is huge": (_edited_manifest(push=10**40), "push must be a whole number"),
    "frame has two numbers": (_edited_manifest(frame=[1, 2]), "frame must be [x, y, yaw]"),
    "frame holds text": (_edited_manifest(frame=[1, 2, "x"]), "frame must be [x, y, yaw]"),
    "frame is missing": (_manifest('{"push": 1}'), "frame must be [x, y, yaw]"),
    "frame is past any float": (_edited_manifest(frame=[10**400, 0, 0]), "three finite"),
    "frame is past the coordinate bound": (_edited_manifest(frame=[0, 1e12, 0]), "MAX_COORDINATE"),
    "not JSON": (_manifest("{"), "is not valid JSON"),
    "a JSON list": (_manifest("[1]"), "does not hold a JSON object"),
    "deeply nested": (_manifest("[" * 100_000 + "]" * 100_000), "is not valid JSON"),
}
"""A damaged manifest of robot charlie, and what the error says about it."""

PUSH_FILES = {
    "index tables is a number": (_index('{"tables": 5}'), "_index.json: tables must be a list"),
    "index names a path": (_index('{"tables": ["../../x"]}'), "graph table names"),
    "index names a table and a newline": (
        _index('{"tables": ["Observation\\n"]}'),
        "graph table names",
    ),
    "removed rows lack the table column": (
        _parquet("graph/00000001/_removed.parquet", pa.table({"x": [1]})),
        "_removed.parquet: it has no (single) 'table' column",
    ),
    "removed rows are not Parquet": (
        _not_parquet("graph/00000001/_removed.parquet"),
        "_removed.parquet is not a readable Parquet file",
    ),
    "state lacks the table column": (
        _parquet("state/00000001.parquet", pa.table({"x": [1]})),
        "00000001.parquet: it has no (single) 'table' column",
    ),
    "state keys are numbers": (
        _parquet(
            "state/00000001.parquet",
            pa.table({"table": ["Observation"], "key": [1], "digest": ["d"]}),
        ),
        "its 'key' column holds int64, not text",
    ),
    "a table file lacks its key": (
        _parquet("graph/00000001/Observation.parquet", pa.table({"id": ["o"]})),
        "Observation.parquet: it has no (single) 'key' column",
    ),
}
"""A damaged file of charlie's push 1 (its manifest is sound), and what the error says."""

DAMAGE = {**MANIFESTS, **PUSH_FILES}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three robots, each seeing one red toolbox, pushed to the fleet ``fleet``."""
    root = tmp_path_factory.mktemp("hostile")
    for name, text in SEEN.items():
        memory = SpatioTemporalMemory(
            str(root / name),
            embedding_provider=HashingEmbedder(384),
            get_current_time=lambda: START,
        )
        memory.add(text, 1.0, 0.5, timestamp=START, layer_name="vision")
        memory.close()
        push_memory(root / name, str(root / "fleet"), name)
    return root


@pytest.fixture
def site(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the pristine fleet and memories, for one test to damage."""
    for entry in pristine.iterdir():
        shutil.copytree(entry, tmp_path / entry.name)
    return tmp_path


def _fleet(site: Path) -> FleetMemory:
    return FleetMemory(str(site / "fleet"), embedding_provider=HashingEmbedder(384))


def _robots_answering(answer: str) -> set[str]:
    return {robot for robot in SEEN if f"[robot {robot}]" in answer}


# --- asking the fleet -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(MANIFESTS))
def test_a_robot_with_a_damaged_manifest_is_left_out_and_the_others_answer(
    site: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    damage, expected = MANIFESTS[kind]
    damage(site / "fleet")
    fleet = _fleet(site)
    answer = fleet.semantic_search("red toolbox")
    assert _robots_answering(answer) == {"alpha", "bravo"}
    assert fleet.robots() == {"alpha": 1, "bravo": 1}
    why = fleet.damaged_robots()["charlie"]
    assert str(site / "fleet/robots/charlie/manifest.json") in why
    assert expected in why
    assert "\n" not in why and len(why) < 400
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "charlie" in warnings[0] and "manifest.json" in warnings[0]
    fleet.refresh()  # the warning is given once, not at every reread
    assert len([r for r in caplog.records if r.levelname == "WARNING"]) == 1


def test_every_tool_answers_about_the_others_and_asking_only_the_left_out_robot_says_why(
    site: Path,
) -> None:
    _manifest('{"push": "abc"}')(site / "fleet")
    fleet = _fleet(site)
    assert _robots_answering(fleet.spatial_query(1.0, 0.5, radius=5.0)) == {"alpha", "bravo"}
    assert _robots_answering(fleet.temporal_query()) == {"alpha", "bravo"}
    assert "alpha" in fleet.locate("red toolbox")
    assert _robots_answering(fleet.semantic_search("toolbox", robot=["alpha", "charlie"])) == {
        "alpha"
    }
    with pytest.raises(InvalidInputError, match=r"robot charlie is left out of the fleet: .*abc"):
        fleet.semantic_search("toolbox", robot="charlie")
    answer = fleet.dispatch_tool_call("semantic_search", {"query": "toolbox", "robot": "charlie"})
    assert answer.startswith("Error: robot charlie is left out") and "\n" not in answer


@pytest.mark.parametrize(
    "damage",
    [
        lambda fleet: _write(fleet / "robots/README", "notes"),
        lambda fleet: (fleet / "robots/not a robot").mkdir(),
        lambda fleet: (fleet / "robots/delta/manifest.json").mkdir(parents=True),
        lambda fleet: shutil.copytree(fleet / "robots/alpha", fleet / "robots/alpha\n"),
    ],
    ids=[
        "a file",
        "a folder no robot name fits",
        "a manifest that is a folder",
        "a robot's folder copied under its name and a newline",
    ],
)
def test_what_no_push_writes_under_robots_does_not_stop_the_fleet(
    site: Path, damage: Damage
) -> None:
    damage(site / "fleet")
    fleet = _fleet(site)
    assert _robots_answering(fleet.semantic_search("red toolbox")) == set(SEEN)
    assert fleet.robots() == {"alpha": 1, "bravo": 1, "charlie": 1}


def test_fleet_ask_answers_about_the_other_robots_with_a_one_line_warning(site: Path) -> None:
    _manifest('{"push": "abc"}')(site / "fleet")
    arguments = json.dumps({"query": "red toolbox"})
    ask = ["fleet", "ask", str(site / "fleet"), "semantic_search", arguments]
    done = subprocess.run(
        [*CLI, *ask, "--embedder", "hashing"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert _robots_answering(done.stdout) == {"alpha", "bravo"}
    assert "Traceback" not in done.stderr
    warnings = done.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("WARNING")
    assert "robots/charlie/manifest.json" in warnings[0] and "'abc'" in warnings[0]


# --- a replica --------------------------------------------------------------------------------


def _robot_nodes(replica: Path) -> list[str]:
    graph = GraphDB(replica / GRAPH_FILE, read_only=True)
    try:
        rows = graph.query_text("MATCH (r:Robot) RETURN r.name AS name ORDER BY name")
    finally:
        graph.close()
    return [row["name"] for row in rows]


@pytest.mark.parametrize("kind", ["push is text", "frame has two numbers", *PUSH_FILES])
def test_a_replica_leaves_out_a_robot_with_a_damaged_file(site: Path, kind: str) -> None:
    damage, expected = DAMAGE[kind]
    damage(site / "fleet")
    report = build_replica(str(site / "fleet"), site / "replica")
    assert report.robots == {"alpha": 1, "bravo": 1}
    assert expected in report.left_out["charlie"]
    assert str(site / "fleet/robots/charlie") in report.left_out["charlie"]
    assert report.nodes["Observation"] == 2
    assert _robot_nodes(site / "replica") == ["alpha", "bravo"]
    assert "robot charlie left out: " in report.describe()


def test_an_update_leaves_out_a_robot_whose_files_went_bad_and_takes_it_back_once_repaired(
    site: Path,
) -> None:
    uri, replica = str(site / "fleet"), site / "replica"
    assert replicate(uri, replica).robots == {"alpha": 1, "bravo": 1, "charlie": 1}
    state = site / "fleet/robots/charlie/state/00000001.parquet"
    good_state = state.read_bytes()
    _parquet("state/00000001.parquet", pa.table({"x": [1]}))(site / "fleet")
    report = replicate(uri, replica)
    assert (report.how, report.robots) == ("rebuilt", {"alpha": 1, "bravo": 1})
    assert "00000001.parquet: it has no (single) 'table' column" in report.left_out["charlie"]
    assert _robot_nodes(replica) == ["alpha", "bravo"]

    manifest = site / "fleet/robots/charlie/manifest.json"
    good_manifest = manifest.read_text()
    state.write_bytes(good_state)
    _manifest('{"push": "abc"}')(site / "fleet")
    report = replicate(uri, replica)
    assert report.robots == {"alpha": 1, "bravo": 1}
    assert "'abc'" in report.left_out["charlie"]

    manifest.write_text(good_manifest)
    report = replicate(uri, replica)
    assert report.robots == {"alpha": 1, "bravo": 1, "charlie": 1} and not report.left_out
    assert _robot_nodes(replica) == ["alpha", "bravo", "charlie"]


def test_an_update_rebuilds_without_a_robot_it_held_whose_manifest_went_bad(site: Path) -> None:
    uri, replica = str(site / "fleet"), site / "replica"
    replicate(uri, replica)
    _edited_manifest(push=-3)(site / "fleet")
    report = replicate(uri, replica)
    assert report.how == "rebuilt" and "robot charlie is left out" in report.reason
    assert report.robots == {"alpha": 1, "bravo": 1}
    assert _robot_nodes(replica) == ["alpha", "bravo"]


def test_fleet_replica_reports_the_left_out_robot_and_builds_the_others(site: Path) -> None:
    _index('{"tables": 5}')(site / "fleet")
    done = subprocess.run(
        [*CLI, "fleet", "replica", str(site / "fleet"), str(site / "replica")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "robots alpha (push 1), bravo (push 1)" in done.stdout
    assert "robot charlie left out: " in done.stdout and "_index.json" in done.stdout


# --- pushing the robot whose files are damaged ------------------------------------------------


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_push_refuses_its_robots_damaged_files_in_one_line_and_commits_nothing(
    site: Path, kind: str
) -> None:
    damage, expected = DAMAGE[kind]
    fleet = site / "fleet"
    damage(fleet)
    manifest = (fleet / "robots/charlie/manifest.json").read_bytes()
    with pytest.raises(DamagedFleetFileError) as caught:
        push_memory(site / "charlie", str(fleet), "charlie")
    message = str(caught.value)
    assert isinstance(caught.value, EmemGraphError)
    assert expected in message and str(fleet / "robots/charlie") in message
    assert "push the robot again" in message
    assert (fleet / "robots/charlie/manifest.json").read_bytes() == manifest
    assert not (fleet / "robots/charlie/graph/00000002").exists()
    assert push_memory(site / "alpha", str(fleet), "alpha").nothing_changed


CLI_PUSH_DAMAGE = ["push is text", "state lacks the table column"]
"""The damage the CLI push meets in the default run: a bad manifest and a bad file of a push.
Every kind meets push_memory, with the same one-line message, in
test_a_push_refuses_its_robots_damaged_files_in_one_line_and_commits_nothing; the long
campaigns send more of each through the CLI."""
if campaign.LONG:
    CLI_PUSH_DAMAGE += ["push is infinite", "push is negative", "removed rows are not Parquet"]


@pytest.mark.parametrize("kind", CLI_PUSH_DAMAGE)
def test_fleet_push_of_a_robot_with_damaged_files_is_one_line_and_exit_2(
    site: Path, kind: str
) -> None:
    damage, expected = DAMAGE[kind]
    damage(site / "fleet")
    done = subprocess.run(
        [*CLI, "fleet", "push", str(site / "charlie"), str(site / "fleet"), "--robot", "charlie"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("emem-graph: error: "), done.stderr
    assert expected in lines[0] and "robots/charlie" in lines[0]


# --- the manifest's reader ----------------------------------------------------------------


def test_a_sound_manifest_reads_as_its_push_and_frame(site: Path) -> None:
    where = FleetLocation(str(site / "fleet"))
    _edited_manifest(push=0, frame=[1, -2, 0.5])(site / "fleet")
    manifest = read_manifest(where, "charlie")
    assert manifest is not None
    assert (manifest.push, manifest.frame.as_list()) == (0, [1.0, -2.0, 0.5])
    assert read_manifest(where, "nobody") is None
    assert _fleet(site).robots() == {"alpha": 1, "bravo": 1}  # push 0: nothing committed


# --- the tool door ------------------------------------------------------------------------------


class _CountingEmbedder(HashingEmbedder):
    """A HashingEmbedder that counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(384)
        self.texts = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return super().embed(texts)


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_CALLS = {
    "deeply nested JSON text": (
        "semantic_search",
        '{"query": "toolbox", "robot": ' + "[" * 5_000 + "]" * 5_000 + "}",
        "MAX_JSON_DEPTH",
    ),
    "a deeply nested value": (
        "semantic_search",
        {"query": "toolbox", "robot": _nested(5_000)},
        "MAX_JSON_DEPTH",
    ),
    "n_results 1e18": ("semantic_search", {"query": "toolbox", "n_results": 1e18}, "n_results"),
    "n_results 10**30": ("locate", {"concept": "toolbox", "n_results": 10**30}, "n_results"),
    "a 6 MB query": ("semantic_search", {"query": "toolbox " * 750_000}, "'query' has"),
    "a 6 MB query as JSON text": (
        "recall",
        json.dumps({"query": "toolbox " * 750_000}),
        "over the limit",
    ),
    "x 1e12": ("spatial_query", {"x": 1e12, "y": 0.5}, "argument 'x'"),
    "near_x 1e12": (
        "temporal_query",
        {"near_x": 1e12, "near_y": 0, "spatial_radius": 1},
        "argument 'near_x'",
    ),
    "n_results 1e12": ("temporal_query", {"n_results": 1e12}, "n_results"),
    "a 5 MB name": ("entity_query", {"name": "x" * 5_000_000}, "'name' has"),
    "a 5 MB robot name": ("temporal_query", {"robot": "x" * 5_000_000}, "'robot' has"),
    "a robot name past 64 characters": ("temporal_query", {"robot": "a" * 65}, "at most 64"),
    "200,000 robots": ("temporal_query", {"robot": ["alpha"] * 200_000}, "MAX_TOOL_LIST_ITEMS"),
    "a robot name of 5 MB in a list": (
        "temporal_query",
        {"robot": ["alpha", "x" * 5_000_000]},
        "at most 64",
    ),
    "a list with no robot's name": (
        "semantic_search",
        {"query": "toolbox", "robot": ["alpha", "../bravo"]},
        "robot name '../bravo'",
    ),
    "a robot that is a number": ("temporal_query", {"robot": 7}, "argument 'robot'"),
    "a one-memory parameter": (
        "semantic_search",
        {"query": "toolbox", "scope": "global"},
        "unknown argument 'scope'",
    ),
    "a time that is no time": ("temporal_query", {"time_after": "garbage"}, "cannot parse"),
    "arguments that are a list": ("temporal_query", "[1, 2]", "must be an object"),
    "a tool name of 5 MB": ("x" * 5_000_000, {}, "unknown tool"),
}
"""A hostile fleet tool call: the tool, its arguments, and what the one error line says."""


@pytest.mark.parametrize("kind", list(HOSTILE_CALLS))
def test_a_hostile_fleet_tool_call_is_one_error_line_before_any_work(site: Path, kind: str) -> None:
    """The fleet's tools are checked by a memory's own dispatcher against the fleet's schemas:
    every size, depth, type and bound a memory's door refuses, the fleet refuses in one short
    ``Error:`` line, before any embedding; and ``robot`` (a name or a list of names) is
    bounded in length and count, and must be a robot's name."""
    tool, arguments, expected = HOSTILE_CALLS[kind]
    embedder = _CountingEmbedder()
    fleet = FleetMemory(str(site / "fleet"), embedding_provider=embedder)
    answer = fleet.dispatch_tool_call(tool, arguments)
    assert answer.startswith("Error: ") and "\n" not in answer, answer[:300]
    assert len(answer) < 600 and expected in answer, answer[:300]
    assert embedder.texts == 0


def test_the_fleet_door_takes_what_a_memorys_takes_and_gives_the_tools_its_types(
    site: Path,
) -> None:
    """Sound calls pass the same door: a list of robots, a count given as 2.0, a time as
    text or a number; the tools receive the schema's types."""
    fleet = _fleet(site)
    answer = fleet.dispatch_tool_call(
        "semantic_search", {"query": "red toolbox", "robot": ["alpha", "bravo"], "n_results": 2.0}
    )
    assert _robots_answering(answer) == {"alpha", "bravo"}
    assert len(answer.splitlines()) == 2
    answer = fleet.dispatch_tool_call("temporal_query", '{"robot": "charlie", "time_after": 5}')
    assert _robots_answering(answer) == {"charlie"}
    robot = fleet.get_tool_definitions()[0]["function"]["parameters"]["properties"]["robot"]
    assert robot["type"] == ["string", "array"]
    assert (robot["maxLength"], robot["items"]["maxLength"], robot["maxItems"]) == (64, 64, 100)
