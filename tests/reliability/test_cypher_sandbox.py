"""Read-only Cypher stays read-only below the text allow-list: the sandbox child
(Kuzu read-only, Landlock, rlimits) and the live path's plan check each refuse every escape on
their own, and time and memory are bounded.

Every surface is tried with every escape form: run_cypher, the shell, the CLI (a subprocess),
the ROS ServiceDispatcher's Query; then the text allow-list is switched off and each lower
layer is shown to refuse alone: nothing written, the secret file never returned, settings
unchanged in a fresh check.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import (
    EmemGraphError,
    InvalidInputError,
    QueryResourceError,
    QueryTimeoutError,
)
from emem_graph.explore import cypher as cypher_module
from emem_graph.explore import sandbox as sandbox_module
from emem_graph.explore.cypher import run_cypher, run_named_query
from emem_graph.explore.landlock import landlock_abi
from emem_graph.explore.sandbox import CypherSandbox, sandbox_layers
from emem_graph.explore.sandbox_wire import decode_value, encode_value
from emem_graph.explore.shell import shell
from emem_graph.storage.graph import GraphDB, resolve_engine
from ros_bridge import services as services_module
from ros_bridge.services import DefaultServiceSettings, MemoryOwner, ServiceDispatcher
from ros_bridge.srv_files import default_request

SECRET = "TOPSECRET-4f9a"
ESCAPES = {
    "load_secret": "LOAD FROM '{secret}' (file_format='csv', header=false) RETURN *",
    "copy_to": "COPY (MATCH (o:Observation) RETURN o.text) TO '{out}/leak.csv'",
    "export": "EXPORT DATABASE '{out}/export'",
    "load_extension": "LOAD EXTENSION '{out}/evil.so'",
    "threads": "CALL threads=1",
    "timeout_setting": "CALL timeout=1",
    "attach": "ATTACH '{out}/other.kuzu' AS other (dbtype kuzu)",
    "install": "INSTALL json",
}
HIDDEN = "MATCH (n) RETURN count(n) /* **/ ' */ ; {statement} ; //'"
"""An escape as a second statement after a comment Kuzu does not end at ``/* **/``: the live
path's statement count once ended it there, read one statement, and its plan check's EXPLAIN
ran the second (a COPY TO wrote every observation's text to a file)."""
SETTINGS = "CALL current_setting('threads') RETURN *"
BIND_BOMB = "UNWIND range(1, 50000000) AS x RETURN count(x)"
"""Kuzu builds the 5e7-element list while binding (~25 GB, minutes), outside its timeout."""
VALUE_BOMB = {
    "kuzu": BIND_BOMB,
    "ladybug": "RETURN size(range(1, 500000000)) AS n",
}[resolve_engine()]
"""A statement whose allocation fails under a 512 MB RLIMIT_DATA on the run's engine:
LadybugDB streams BIND_BOMB's UNWIND (it answered count = 50000000 inside 512 MB) but builds
range() as a list value (5e8 integers: 4 GB; 5e7 of them fitted inside 512 MB in 3 s)."""
LIVE_SLOW = (
    "WITH [1, 2, 3, 4] AS a0 "
    + " ".join(f"WITH a{i - 1} + a{i - 1} + a{i - 1} + a{i - 1} AS a{i}" for i in range(1, 10))
    + " RETURN size(a9) AS n"
)
"""4^10 elements by concatenation while binding: ~6 s and ~650 MB here, no generator used."""
LIVE_TIMEOUT_MARGIN_S = 2.0
"""How far past its 1 s timeout the live statement may answer: well short of its ~6 s."""
MEASURED: dict[str, Any] = {"cases": 0, "refused": 0, "leaks": 0}


@dataclass(frozen=True)
class Place:
    memory: Path
    out: Path
    secret: Path

    def statement(self, name: str) -> str:
        return ESCAPES[name].format(out=self.out, secret=self.secret)

    def untouched(self) -> bool:
        return sorted(p.name for p in self.out.iterdir()) == ["evil.so"]


def _open(directory: Path) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(directory), maintenance_interval=None)
    return SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    root = tmp_path_factory.mktemp("sandbox")
    with _open(root / "memory") as memory:
        for i in range(5):
            memory.add(f"a red cup number {i}", float(i), 1.0, layer_name="captions")
    out = root / "out"
    out.mkdir()
    (out / "evil.so").write_bytes(b"\x7fELF not really")
    secret = root / "secret.csv"
    secret.write_text(f"token,{SECRET}\n")
    return Place(root / "memory", out, secret)


def _threads(place: Place) -> str:
    """The threads setting seen by a fresh sandbox (a fresh check)."""
    with CypherSandbox(place.memory) as sandbox:
        return str(sandbox.run(SETTINGS, limit=5, timeout_s=30).rows[0][0])


def _note(refused: bool, leaked: bool) -> None:
    MEASURED["cases"] += 1
    MEASURED["refused"] += int(refused)
    MEASURED["leaks"] += int(leaked)


@pytest.fixture
def no_text_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the text allow-list off everywhere (explore.cypher.check_statement checks only
    the limit and timeout then, on every surface, the ROS Query included)."""

    def bare(cypher: str, params: Any = None, *, limit: int = 1000, timeout_s: float = 30.0):
        return dict(params or {})

    monkeypatch.setattr(cypher_module, "check_statement", bare)
    monkeypatch.setattr(services_module, "check_statement", bare)


# --- the layers on this machine --------------------------------------------------------------


def test_the_sandbox_reports_its_layers_and_landlock_is_active_here(place: Place) -> None:
    layers = sandbox_layers()
    assert layers["read_only_engine"] and layers["plan_check"] and layers["timeout_kill"]
    with CypherSandbox(place.memory) as sandbox:
        assert sandbox.landlock_abi == landlock_abi()
        if sys.platform.startswith("linux") and landlock_abi() >= 1:
            assert layers["landlock_files"]
        assert sandbox.run("MATCH (o:Observation) RETURN count(o)", limit=5, timeout_s=30).rows == [
            [5]
        ]


def test_values_cross_the_pipe_unchanged(place: Place) -> None:
    statement = (
        "MATCH (o:Observation) WITH o ORDER BY o.x LIMIT 1 RETURN o, date('2024-01-02') AS d, "
        "timestamp('2024-01-01 10:00:00') AS ts, interval('1 day 2 hours') AS i, "
        "[1, 2.5, NULL] AS l, {a: 1, b: 'x'} AS m, CAST(1.5 AS DECIMAL(5, 2)) AS dec, "
        "UUID('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') AS u, BLOB('\\\\xAA\\\\xBB') AS b"
    )
    sandboxed = run_cypher(place.memory, statement)
    graph = GraphDB(place.memory / "graph.kuzu", read_only=True)
    try:
        direct = graph.run_statement(statement, limit=10, timeout_s=30)
    finally:
        graph.close()
    assert sandboxed == direct
    assert [decode_value(encode_value(v)) for v in direct.rows[0]] == direct.rows[0]


# --- every escape, every surface, the text allow-list on ------------------------------------


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_run_cypher_refuses_every_escape(place: Place, name: str) -> None:
    with pytest.raises(EmemGraphError) as caught:
        run_cypher(place.memory, place.statement(name))
    assert SECRET not in str(caught.value)
    assert place.untouched()
    _note(True, SECRET in str(caught.value) or not place.untouched())


def test_the_shell_refuses_every_escape_and_settings_stay(place: Place) -> None:
    before = _threads(place)
    script = "".join(place.statement(name) + ";\n" for name in sorted(ESCAPES)) + SETTINGS + ";\n"
    out, err = io.StringIO(), io.StringIO()
    shell(place.memory, stdin=io.StringIO(script), stdout=out, stderr=err, output="csv")
    errors = err.getvalue().splitlines()
    assert len(errors) == len(ESCAPES) and all(e.startswith("error: ") for e in errors)
    assert SECRET not in out.getvalue() + err.getvalue()
    assert out.getvalue().splitlines()[-1] == before  # the same session's setting
    assert place.untouched()
    assert _threads(place) == before


def test_the_shell_answers_an_endless_statement_with_one_error_and_goes_on(place: Place) -> None:
    # A statement never ended by ';' grows past the length bound: one error line, then the
    # shell runs the next statement (no exception escapes the loop).
    script = "RETURN 1 +\n" + ("1 + " * 30_000 + "\n") + "\nRETURN 7 AS seven;\n"
    out, err = io.StringIO(), io.StringIO()
    shell(place.memory, stdin=io.StringIO(script), stdout=out, stderr=err, output="csv")
    errors = err.getvalue().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: ")
    assert out.getvalue().splitlines()[-1] == "7"
    assert place.untouched()


def _emem_graph() -> list[str]:
    script = Path(sys.executable).with_name("emem-graph")
    return [str(script)] if script.exists() else [sys.executable, "-m", "emem_graph.cli"]


def test_the_cli_refuses_escapes_in_a_subprocess(place: Place) -> None:
    for name in ("load_secret", "copy_to"):
        done = subprocess.run(
            [*_emem_graph(), "cypher", str(place.memory), place.statement(name)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("emem-graph: error: ")
        assert SECRET not in done.stdout + done.stderr
        assert place.untouched()


# --- each lower layer alone --------------------------------------------------------------------


@pytest.mark.parametrize("engine_checks", [True, False], ids=["plan+readonly+os", "os+readonly"])
def test_the_sandbox_alone_refuses_without_the_text_allow_list(
    place: Place, no_text_guard: None, engine_checks: bool
) -> None:
    before = _threads(place)
    with CypherSandbox(place.memory, engine_checks=engine_checks) as sandbox:
        for name in sorted(ESCAPES):
            try:
                rows = sandbox.run(place.statement(name), limit=50, timeout_s=30).rows
                text = json.dumps(rows, default=str)
                refused = False
            except EmemGraphError as exc:
                text, refused = str(exc), True
            leaked = SECRET in text or not place.untouched()
            _note(refused, leaked)
            assert not leaked, (name, text)
            if engine_checks:
                assert refused, name
        # The session's own connection: settings are per statement there.
        assert str(sandbox.run(SETTINGS, limit=5, timeout_s=30).rows[0][0]) == before
    assert _threads(place) == before


def test_without_the_sandbox_kuzu_read_only_would_write_the_file(place: Place, tmp_path) -> None:
    """The control: the same COPY ... TO in-process on a read-only graph, plan check off,
    writes the file; in the sandbox (test above, os+readonly) it does not."""
    graph = GraphDB(place.memory / "graph.kuzu", read_only=True)
    target = tmp_path / "control.csv"
    try:
        graph.run_statement(
            f"COPY (MATCH (o:Observation) RETURN o.text) TO '{target}'",
            limit=5,
            timeout_s=30,
            check_plan=False,
        )
    finally:
        graph.close()
    assert target.is_file()


# --- the live path (ROS Query) -------------------------------------------------------------------


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Callable[..., ServiceDispatcher]]:
    owners: list[MemoryOwner] = []

    def build(**settings: Any) -> ServiceDispatcher:
        memory = _open(tmp_path / f"live{len(owners)}")
        memory.add("a red cup on the kitchen table", 1.0, 2.0, layer_name="captions")
        memory.flush()
        owner = MemoryOwner(memory)
        owners.append(owner)
        return ServiceDispatcher(owner, DefaultServiceSettings(**settings))

    yield build
    for owner in owners:
        owner.close()


def _ask(dispatcher: ServiceDispatcher, srv: str, **fields: Any) -> dict[str, Any]:
    return dispatcher.handle(srv, default_request(srv, **fields))


def test_query_is_off_by_default(live: Callable[..., ServiceDispatcher]) -> None:
    response = _ask(live(), "Query", cypher="RETURN 1 AS one")
    assert response["success"] is False and "Query is disabled" in response["error"]


@pytest.mark.parametrize("guarded", [True, False], ids=["all layers", "plan check alone"])
def test_the_live_query_refuses_every_escape(
    place: Place,
    live: Callable[..., ServiceDispatcher],
    request: pytest.FixtureRequest,
    guarded: bool,
) -> None:
    if not guarded:
        request.getfixturevalue("no_text_guard")
    dispatcher = live(query_service=True)
    before = _ask(dispatcher, "Query", cypher=SETTINGS)["rows_json"]
    texts = [(name, place.statement(name)) for name in sorted(ESCAPES)]
    texts += [(f"{name} hidden", HIDDEN.format(statement=text)) for name, text in texts]
    for name, text in texts:
        response = _ask(dispatcher, "Query", cypher=text)
        leaked = SECRET in json.dumps(response)
        # Binding EXPORT DATABASE creates its (empty) directory before any plan exists: on the
        # live path only the text allow-list prevents that.
        written = sorted(p.name for p in place.out.iterdir() if p.name != "export")
        export = place.out / "export"
        if export.exists():
            assert not guarded and list(export.iterdir()) == []
            export.rmdir()
        _note(response["success"] is False, leaked or written != ["evil.so"])
        assert response["success"] is False, (name, response)
        assert not leaked and written == ["evil.so"], name
    assert _ask(dispatcher, "Query", cypher=SETTINGS)["rows_json"] == before


def test_live_generators_are_bounded_before_kuzu_binds(
    live: Callable[..., ServiceDispatcher],
) -> None:
    dispatcher = live(query_service=True)
    for statement in (
        "UNWIND range(1, 50000000) AS x RETURN count(x)",
        "RETURN size(repeat('x', 300000000))",
        "UNWIND range(1, $n) AS x RETURN count(x)",
        "RETURN [x IN range(1, 1000) | range(1, 1000)]",
    ):
        params = '{"n": 5}' if "$n" in statement else ""
        response = _ask(dispatcher, "Query", cypher=statement, params_json=params)
        assert response["success"] is False and "live memory" in response["error"], statement
    ok = _ask(dispatcher, "Query", cypher="UNWIND range(1, 10) AS x RETURN count(x) AS s")
    assert json.loads(ok["rows_json"])["rows"] == [{"s": 10}]


# --- resource bounds ---------------------------------------------------------------------------


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_a_bind_time_statement_is_killed_at_the_timeout(place: Place) -> None:
    with CypherSandbox(place.memory, max_memory_mb=16_000) as sandbox:
        started = time.monotonic()
        with pytest.raises(QueryTimeoutError, match="longer than 1 s"):
            sandbox.run(BIND_BOMB, limit=5, timeout_s=1.0)
        took = time.monotonic() - started
        MEASURED["timeout_overshoot_s"] = round(took - 1.0, 3)
        # Unkilled, the statement runs for minutes. The kill lands within ~0.1 s of the timeout
        # on an idle machine; 0.5 s of slack failed once on a CI machine loaded by other work.
        assert took < 5.0
        assert sandbox.run("RETURN 1 AS one", limit=5, timeout_s=30).rows == [[1]]  # respawned


def test_a_memory_bomb_is_stopped_below_the_bound(place: Place) -> None:
    parent_before = _rss_mb()
    with CypherSandbox(place.memory, max_memory_mb=512) as sandbox:
        started = time.monotonic()
        with pytest.raises(QueryResourceError, match="more than 512 MB"):
            sandbox.run(BIND_BOMB, limit=5, timeout_s=120)
        MEASURED["memory_kill_mb"] = round(sandbox.peak_memory_mb)
        MEASURED["memory_kill_s"] = round(time.monotonic() - started, 2)
        # Polled every 20 ms: the kill lands within one poll's growth of the bound.
        assert sandbox.peak_memory_mb < 512 + 256
    assert _rss_mb() - parent_before < 64
    with pytest.raises(InvalidInputError, match="at least 256 MB"):
        CypherSandbox(place.memory, max_memory_mb=10)


def test_rlimit_data_alone_stops_a_memory_bomb(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's /proc poll switched off (as where there is no /proc): the child's
    RLIMIT_DATA makes the allocation fail, the child answers and keeps serving."""
    monkeypatch.setattr(sandbox_module, "_resident_mb", lambda pid: 0.0)
    with CypherSandbox(place.memory, max_memory_mb=512) as sandbox:
        pid = sandbox.pid
        started = time.monotonic()
        with pytest.raises(QueryResourceError, match="more memory"):
            sandbox.run(VALUE_BOMB, limit=5, timeout_s=60)
        MEASURED["rlimit_data_s"] = round(time.monotonic() - started, 2)
        assert sandbox.run("RETURN 1 AS one", limit=5, timeout_s=30).rows == [[1]]
        assert sandbox.pid == pid  # the same child: no kill was needed


def test_the_live_timeout_answers_and_a_tool_call_is_not_held_up(
    live: Callable[..., ServiceDispatcher],
) -> None:
    dispatcher = live(query_service=True, query_timeout_s=1.0)
    answers: dict[str, Any] = {}

    def slow() -> None:
        started = time.monotonic()
        answers["query"] = _ask(dispatcher, "Query", cypher=LIVE_SLOW)
        answers["query_done"] = time.monotonic()
        answers["query_s"] = answers["query_done"] - started

    worker = threading.Thread(target=slow)
    worker.start()
    time.sleep(0.1)
    started = time.monotonic()
    tool = _ask(dispatcher, "SemanticSearch", query="red cup")
    tool_done = time.monotonic()
    tool_s = tool_done - started
    # A write while the statement's read-only transaction is open: committed, not held.
    note = _ask(dispatcher, "StoreSpecificMemory", content="the keys are in the blue bowl")
    dispatcher.owner.call(lambda memory: memory.flush())
    written = time.monotonic()
    worker.join(30)
    assert answers["query"]["success"] is False
    assert "longer than 1 s" in answers["query"]["error"]
    # The statement runs ~6 s unbounded; the timeout cut it, with room for a loaded CI machine
    # (a bound of 1.5 s failed once at 1.66 s with benchmarks beside the CI).
    assert answers["query_s"] < LIVE_TIMEOUT_MARGIN_S + 1.0
    # Not held up: the tool call answered while the slow statement was still running.
    assert tool["success"] is True
    assert tool_done < answers["query_done"], (tool_s, answers["query_s"])
    assert note["success"] is True and written < answers["query_done"]
    # Kuzu goes on binding the timed-out statement for a few seconds: until it stops, a new
    # statement is refused (one at a time, each may take hundreds of MB), then it runs.
    texts = "MATCH (o:Observation) RETURN o.text AS text"
    graph = dispatcher.owner.call(lambda memory: memory.store.graph)
    if graph.running_statements():
        refused = _ask(dispatcher, "Query", cypher=texts)
        assert refused["success"] is False and "still being stopped" in refused["error"]
    deadline = time.monotonic() + 60
    while graph.running_statements() and time.monotonic() < deadline:
        time.sleep(0.1)
    found = _ask(dispatcher, "Query", cypher=texts)
    assert "the keys are in the blue bowl" in found["rows_json"], found
    MEASURED["live_timeout_s"] = round(answers["query_s"], 3)
    MEASURED["tool_wait_s"] = round(tool_s, 3)


def test_live_statements_run_one_at_a_time(live: Callable[..., ServiceDispatcher]) -> None:
    dispatcher = live(query_service=True, query_timeout_s=1.0)
    answers: list[dict[str, Any]] = []

    def slow() -> None:
        answers.append(_ask(dispatcher, "Query", cypher=LIVE_SLOW))

    workers = [threading.Thread(target=slow) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert len(answers) == 3 and not any(a["success"] for a in answers), answers
    errors = sorted(a["error"] for a in answers)
    # One ran to its timeout; the others waited for the slot (or found it still stopping).
    assert sum("longer than 1 s" in e for e in errors) == 1, errors
    assert all(
        "longer than 1 s" in e or "one runs at a time" in e or "still being stopped" in e
        for e in errors
    ), errors
    graph = dispatcher.owner.call(lambda memory: memory.store.graph)
    assert graph.running_statements() <= 1


def test_closing_the_memory_under_a_live_statement_stops_it(
    live: Callable[..., ServiceDispatcher],
) -> None:
    dispatcher = live(query_service=True, query_timeout_s=30.0)
    answers: dict[str, Any] = {}

    def slow() -> None:
        answers["query"] = _ask(dispatcher, "Query", cypher=LIVE_SLOW)

    worker = threading.Thread(target=slow)
    worker.start()
    time.sleep(0.5)  # the statement is running on its own connection
    started = time.monotonic()
    dispatcher.owner.close()
    closed_s = time.monotonic() - started
    worker.join(30)
    assert not worker.is_alive()
    # Kuzu does not look at an interrupt while it binds (this statement's ~6 s are constant
    # folding), so the statement may finish: then with its right answer, read from the
    # snapshot it began on. close() waits for it (at most 10 s), never closes under it.
    query = answers["query"]
    assert query["success"] is False or '"n": 1048576' in query["rows_json"], query
    assert closed_s < 15, closed_s
    late = _ask(dispatcher, "Query", cypher="RETURN 1 AS one")
    assert late["success"] is False and "closed" in late["error"]


def test_named_queries_run_in_the_sandbox(place: Place) -> None:
    result = run_named_query(place.memory, "node_counts")
    assert result.rows[0][0] == 5


def test_sandbox_overhead(place: Place, summary: list[str]) -> None:
    statement = "MATCH (o:Observation) RETURN count(o)"
    started = time.monotonic()
    sandbox = CypherSandbox(place.memory)
    startup = time.monotonic() - started
    try:
        started = time.monotonic()
        for _ in range(20):
            sandbox.run(statement, limit=5, timeout_s=30)
        sandboxed = (time.monotonic() - started) / 20
    finally:
        sandbox.close()
    graph = GraphDB(place.memory / "graph.kuzu", read_only=True)
    try:
        started = time.monotonic()
        for _ in range(20):
            graph.run_statement(statement, limit=5, timeout_s=30)
        direct = (time.monotonic() - started) / 20
    finally:
        graph.close()
    summary.append(
        "cypher sandbox: "
        f"{MEASURED['cases']} escape cases, {MEASURED['refused']} refused, "
        f"{MEASURED['leaks']} leaks (written/read/changed); startup {startup:.2f} s, "
        f"statement {sandboxed * 1000:.1f} ms vs {direct * 1000:.1f} ms in-process "
        f"({sandboxed / max(direct, 1e-6):.1f}x); timeout overshoot "
        f"{MEASURED.get('timeout_overshoot_s')} s; memory kill at "
        f"{MEASURED.get('memory_kill_mb')} MB (bound 512) after {MEASURED.get('memory_kill_s')} s, "
        f"by RLIMIT_DATA alone after {MEASURED.get('rlimit_data_s')} s; "
        f"live timeout answered in {MEASURED.get('live_timeout_s')} s, a concurrent tool call in "
        f"{MEASURED.get('tool_wait_s')} s"
    )
    assert MEASURED["leaks"] == 0
