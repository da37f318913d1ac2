"""emem-graph migrate: a memory with every node and edge type copied to the other graph engine
and back, checked table by table, without touching the source."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stepped_memory import START, SteppedMemory

from emem_graph.cli import main
from emem_graph.errors import GraphEngineMismatchError
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.graph_engine import (
    DEFAULT_ENGINE,
    ENGINE_ENV,
    ENGINES,
    file_engine,
    resolve_engine,
)
from emem_graph.storage.graph_transfer import export_tables
from emem_graph.storage.store import GRAPH_FILE

JOURNAL_TABLES = {"VectorSync"}
"""Tables empty in a closed memory (the vector journal)."""


def build_memory(directory: Path) -> None:
    """Every node and edge type of the schema: episodes (one a subtask), gists, entities and
    their positions and co-occurrences, a walk (places, CONNECTS), a body state, a profile."""
    stepped = SteppedMemory(directory)
    mem, step, add = stepped.memory, stepped.step, stepped.add

    kitchen = mem.start_episode("kitchen")
    add("2 chairs, 1 person", 1.0, 2.0, source_type="detection")
    add("1 chair, 1 person", 1.2, 2.0, source_type="detection")
    add("a kettle on the stove " + "and a long note " * 800, 1.0, 2.3)  # a 12 KB record
    mem.start_episode("fill the kettle", parent_episode_id=kitchen)
    add("the kettle is full", 1.1, 2.2)
    mem.end_episode(wait=True)
    mem.end_episode(wait=True)
    step(300)
    mem.start_episode("hall")
    for i in range(10):  # a walk down the hall: places joined by CONNECTS
        add(f"hall wall {i % 3}", 20.0 + i, 20.0)
    add("1 cup, 1 plant", 20.0, 20.0, source_type="detection")
    add("1 plant, 1 cup", 20.1, 20.0, source_type="detection")
    mem.add_body_state("battery 80%", "battery", x=20.0, y=20.0, timestamp=step())
    mem.end_episode(wait=True)
    step(300)
    add("2 chairs, 1 table", 1.1, 2.1, source_type="detection")
    stepped.finish()


def fingerprint(directory: Path) -> dict[str, tuple[int, int, str]]:
    """Size, modification time and hash of every file (the lock file aside)."""
    return {
        str(p.relative_to(directory)): (
            p.stat().st_size,
            p.stat().st_mtime_ns,
            hashlib.sha256(p.read_bytes()).hexdigest(),
        )
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != f"{GRAPH_FILE}.lock"
    }


def tables_of(directory: Path, out: Path) -> dict[str, pa.Table]:
    """Every exported table of the memory, rows sorted (engines return them in any order)."""
    graph = GraphDB(directory / GRAPH_FILE, read_only=True)
    try:
        manifest = export_tables(graph, out)
    finally:
        graph.close()
    tables = {}
    for each in manifest["files"]:
        table = pq.read_table(out / each["file"])
        keys = [(name, "ascending") for name in table.column_names if "vector" not in name]
        tables[each["file"]] = table.sort_by(keys) if table.num_rows else table
    return tables


@dataclass(frozen=True)
class Migrated:
    source: Path
    other: Path
    back: Path
    untouched: bool
    printed: list[str]


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Migrated:
    root = tmp_path_factory.mktemp("migrate")
    source = root / "source"
    build_memory(source)
    other_engine = next(e for e in ENGINES if e != resolve_engine())
    before = fingerprint(source)
    printed = []
    for src, dst, engine in (
        (source, root / "other", other_engine),
        (root / "other", root / "back", resolve_engine()),
    ):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["migrate", str(src), str(dst), "--engine", engine]) == 0
        printed.append(out.getvalue())
    return Migrated(source, root / "other", root / "back", fingerprint(source) == before, printed)


def test_the_source_memory_holds_every_node_and_edge_type(
    migrated: Migrated, tmp_path: Path
) -> None:
    graph = GraphDB(migrated.source / GRAPH_FILE, read_only=True)
    try:
        counts = graph.table_counts()
    finally:
        graph.close()
    empty = {name for name, n in counts.items() if n == 0}
    assert empty == JOURNAL_TABLES, empty
    assert len(counts) == 28


def test_migrate_writes_the_other_engines_file_and_reports_its_checks(migrated: Migrated) -> None:
    here = resolve_engine()
    assert file_engine(migrated.source / GRAPH_FILE) == here
    assert file_engine(migrated.other / GRAPH_FILE) != here
    assert file_engine(migrated.back / GRAPH_FILE) == here
    for text in migrated.printed:
        assert "counts identical per table" in text
        assert "vectors: " in text and "identical" in text
        assert "tool answers: 12 compared, identical" in text


def test_migrating_there_and_back_gives_every_row_of_every_table_unchanged(
    migrated: Migrated, tmp_path: Path
) -> None:
    source = tables_of(migrated.source, tmp_path / "a")
    back = tables_of(migrated.back, tmp_path / "b")
    assert source.keys() == back.keys()
    for name, table in source.items():
        assert back[name].equals(table), name


def test_the_copy_answers_like_the_source(migrated: Migrated) -> None:
    answers = []
    for directory in (migrated.source, migrated.back):
        mem = SteppedMemory(directory, start=START + 3600).memory  # no step: the clock stays
        try:
            answers.append(
                [
                    mem.dispatch_tool_call("semantic_search", {"query": "kettle"}),
                    mem.dispatch_tool_call("episode_summary", {"last_n": 5}),
                    mem.dispatch_tool_call("entity_query", {}),
                ]
            )
        finally:
            mem.close()
    assert answers[0] == answers[1]
    assert "kettle" in answers[0][0] and "red door" in answers[0][2]


def test_migrate_never_touches_the_source(migrated: Migrated) -> None:
    assert migrated.untouched


def test_opening_the_other_engines_copy_names_migrate(migrated: Migrated) -> None:
    with pytest.raises(GraphEngineMismatchError, match="emem-graph migrate") as caught:
        GraphDB(migrated.other / GRAPH_FILE, read_only=True)
    assert "\n" not in str(caught.value)


def test_a_memory_of_the_other_engine_on_the_default_is_one_line_naming_migrate(
    migrated: Migrated,
) -> None:
    """A memory written by the engine that is not the default (a Kuzu memory, made before
    LadybugDB became the default), opened by the command line with no engine named: one line
    on stderr that names `emem-graph migrate`, exit 2, the memory unchanged."""
    other = next(e for e in ENGINES if e != DEFAULT_ENGINE)
    memory = (
        migrated.source if file_engine(migrated.source / GRAPH_FILE) == other else migrated.other
    )
    assert file_engine(memory / GRAPH_FILE) == other
    before = fingerprint(memory)
    env = {k: v for k, v in os.environ.items() if k != ENGINE_ENV}
    script = Path(sys.executable).with_name("emem-graph")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "emem_graph.cli"]
    done = subprocess.run(
        [*command, "stats", str(memory)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr == (
        f"emem-graph: error: the memory {memory} was written by graph engine {other}, this "
        f"process runs {DEFAULT_ENGINE}: set graph_engine={other!r} (or {ENGINE_ENV}={other}), "
        f"or copy it with: emem-graph migrate {memory} NEW_DIR --engine {DEFAULT_ENGINE}\n"
    )
    assert fingerprint(memory) == before


def test_migrate_refuses_an_existing_destination_and_a_directory_without_a_memory(
    migrated: Migrated, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").mkdir()
    assert main(["migrate", str(migrated.source), str(tmp_path / "taken")]) == 2
    assert "exists; migrate writes a new directory only" in capsys.readouterr().err
    assert main(["migrate", str(tmp_path / "taken"), str(tmp_path / "new")]) == 2
    assert "holds no emem_graph memory" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # no scratch left behind


# --- a migration stopped half-way ------------------------------------------------------------

STEP_WAIT_S = 120.0
"""How long a migration may take to reach its first step (imports, the copy of the source)."""
ORPHAN_WAIT_S = 2.0
"""How soon a step's child must be gone once its parent was killed (a step alone takes longer)."""
PROC = Path("/proc")
needs_proc = pytest.mark.skipif(
    not (PROC / "self" / "stat").is_file(), reason="finds the step's process in /proc"
)


@pytest.fixture(scope="module")
def small_memory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A memory of a few observations (only read by the migrations)."""
    directory = tmp_path_factory.mktemp("small") / "memory"
    stepped = SteppedMemory(directory)
    for i in range(5):
        stepped.add(f"a red cup on the table {i}", 1.0 + i, 2.0)
    stepped.memory.close()
    return directory


def start_migrate(source: Path, destination: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "emem_graph.cli", "migrate", str(source), str(destination)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def steps_of(pid: int) -> list[int]:
    """The running step processes (migrate's children running child_main) of process ``pid``."""
    steps = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        if parent == pid and b"child_main" in command:
            steps.append(int(entry.name))
    return steps


def scratch_of(destination: Path) -> list[Path]:
    return sorted(destination.parent.glob(f".{destination.name}.migrate-*"))


def wait_for_a_step(
    process: subprocess.Popen[str], destination: Path, others: tuple[Path, ...] = ()
) -> tuple[Path, list[int]]:
    """Wait until the migration runs a step in a child: (its scratch directory, the child).
    ``others``: directories beside the destination that are not its own."""
    deadline = time.monotonic() + STEP_WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        steps = steps_of(process.pid)
        if steps:
            (work,) = [p for p in scratch_of(destination) if p not in others]
            return work, steps
        time.sleep(0.02)
    raise AssertionError("the migration ran no step in time")


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The processes of ``pids`` still running after ``timeout``."""
    deadline = time.monotonic() + timeout
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if running(pid)]


@needs_proc
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_step_removes_the_scratch_copy_and_stops_the_step(
    small_memory: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    destination = tmp_path / "copy"
    process = start_migrate(small_memory, destination)
    work, steps = wait_for_a_step(process, destination)
    assert (work / "source" / GRAPH_FILE).is_file()  # the whole source is copied in there
    process.send_signal(stop)
    printed = process.communicate(timeout=60)[0]
    assert process.returncode == -stop, printed  # the process ends as the signal ends it
    assert scratch_of(destination) == []
    assert not destination.exists()
    assert wait_gone(steps, ORPHAN_WAIT_S) == []


@needs_proc
def test_a_killed_migrations_step_dies_with_it_and_the_next_migrate_removes_its_scratch(
    small_memory: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "copy"
    killed = start_migrate(small_memory, destination)
    left, steps = wait_for_a_step(killed, destination)
    killed.kill()
    killed.communicate(timeout=60)
    assert wait_gone(steps, ORPHAN_WAIT_S) == [], "the step outlived its killed parent"
    assert (left / "source" / GRAPH_FILE).is_file()  # SIGKILL leaves the copy behind

    # Beside it, directories migrate did not make, or whose process still runs: kept.
    foreign = tmp_path / f".{destination.name}.migrate-foreign"
    (foreign / "keep").mkdir(parents=True)
    alive = tmp_path / ".other.migrate-alive"
    alive.mkdir()
    (owner_file,) = [p for p in left.iterdir() if p.suffix == ".json"]
    owner = json.loads(owner_file.read_text())
    stat = (PROC / "self" / "stat").read_text()
    started = int(stat[stat.rindex(")") + 2 :].split()[19])
    owner.update(directory=alive.name, pid=os.getpid(), started=started)
    (alive / owner_file.name).write_text(json.dumps(owner))

    following = start_migrate(small_memory, destination)
    assert wait_for_a_step(following, destination, others=(foreign,))
    assert not left.exists()
    assert (foreign / "keep").is_dir() and (alive / owner_file.name).is_file()
    following.terminate()
    following.communicate(timeout=60)
    assert scratch_of(destination) == [foreign]
