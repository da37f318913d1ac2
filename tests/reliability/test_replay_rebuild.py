"""A write-ahead log the engine replays correctly but damages when it writes it into the graph
file (its checkpoint): measured on Kuzu 0.11.3 after a SIGKILL inside a COMMIT (the crash
matrix, EMEM_MATRIX_SEED=1637495071 on the kuzu seam), string columns came back swapped between
rows and the next full read died of SIGSEGV. The probe replays the log on a copy, reads every
row before and after the checkpoint, and on a difference or a crash rebuilds the graph from
the replayed rows (storage/probe.py): nothing lost, the old file and log kept.

The engine fault itself cannot be produced on demand, so these tests put it into the probe's
child: a program that replays for real and then changes a row (or dies of SIGSEGV) between
the two reads. Everything else is real: Kuzu/LadybugDB files and logs left by a real SIGKILL,
the real export and import, the real swap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from killed_memory import run_killed_writer

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import DamagedMemoryError, DatabaseLockedError, RecoveryNeededError
from emem_graph.storage import probe
from emem_graph.storage.graph import GraphDB, resolve_engine
from emem_graph.storage.health import read_health

DIM = 32
N = 40
FLUSHED = N - N % 20  # the writer dies after its flush of the last full twenty


# The probe's program with the engine's fault put between its two reads: the log is replayed
# and checkpointed for real, then one row changed (what Kuzu 0.11.3 did to string columns).
_SECOND_READ = "db, connection, checkpointed = digest(path, keys)"
CHANGED_AFTER_CHECKPOINT = probe.REPLAY_PROGRAM.replace(
    _SECOND_READ,
    "db = engine.Database(path)\n"
    "engine.Connection(db).execute(\n"
    "    \"MATCH (o:Observation) WITH o LIMIT 1 SET o.text = 'swapped'\")\n"
    "db.close()\n" + _SECOND_READ,
)
assert CHANGED_AFTER_CHECKPOINT != probe.REPLAY_PROGRAM
# ... or died in it (what the next full read did).
CRASHED_AFTER_REPLAY = probe.REPLAY_PROGRAM.replace(
    _SECOND_READ, "import signal\nos.kill(os.getpid(), signal.SIGSEGV)\n" + _SECOND_READ
)
assert CRASHED_AFTER_REPLAY != probe.REPLAY_PROGRAM


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("replay") / "killed"
    return run_killed_writer(path, N, DIM, quiet=True, closed_first=True, entity=True)


def _open(path: Path, *, read_only: bool = False) -> SpatioTemporalMemory:
    return SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(path), embedding_dim=DIM, maintenance_interval=None),
        embedding_provider=HashingEmbedder(DIM),
        read_only=read_only,
    )


def _assert_whole(path: Path, *also: str) -> None:
    """Every flushed observation there with its own text (and those of ``also``), the entity
    too, nothing lost."""
    mem = _open(path)
    try:
        texts = {
            r["text"]
            for r in mem.store.graph.query_text("MATCH (o:Observation) RETURN o.text AS text")
        }
        assert texts == {f"saw a red cup number {i} near the sink" for i in range(N)} | set(also)
        names = mem.store.graph.query_text("MATCH (e:Entity) RETURN e.name AS name")
        assert [r["name"] for r in names] == ["red cup"]
        hits = mem.semantic_search("saw a red cup number 7 near the sink", n_results=1)
        assert "number 7 near" in hits
    finally:
        mem.close()
    assert read_health(path)["graph_losses"] == 0


def _kept(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if ".before-rebuild-" in p.name)


@pytest.mark.parametrize("fault", ["changed", "crashed"])
def test_a_checkpoint_that_damages_the_replayed_log_rebuilds_the_graph_and_loses_nothing(
    killed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    original = (memory / "graph.kuzu").read_bytes(), (memory / "graph.kuzu.wal").read_bytes()
    program = CHANGED_AFTER_CHECKPOINT if fault == "changed" else CRASHED_AFTER_REPLAY
    monkeypatch.setattr(probe, "REPLAY_PROGRAM", program)
    _assert_whole(memory)
    health = read_health(memory)
    assert health["damage_reports"] == 1
    assert "rebuilt from the replayed log, nothing lost" in health["reports"][-1]["action"]
    # The old file and log kept as they were, byte for byte; no scratch or note left.
    kept = _kept(memory)
    assert [k.split(".before-rebuild-")[0] for k in kept] == ["graph.kuzu", "graph.kuzu.wal"]
    assert ((memory / kept[0]).read_bytes(), (memory / kept[1]).read_bytes()) == original
    assert (
        not (memory / "graph.kuzu.wal").exists() or (memory / "graph.kuzu.wal").stat().st_size == 0
    )
    assert not list(memory.glob(".rebuild-*")) and not list(memory.glob(".probe-*"))
    assert not probe.rebuild_marker(memory / "graph.kuzu").exists()
    # Opened again: sealed by the clean close, no second rebuild.
    _assert_whole(memory)
    assert read_health(memory)["damage_reports"] == 1


def test_a_log_whose_checkpoint_keeps_every_row_is_not_rebuilt(
    killed: Path, tmp_path: Path
) -> None:
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    # Opened, the replayed log is written into the file at once, before any new write: the
    # checkpoint the probe read back.
    graph = GraphDB(memory / "graph.kuzu")
    wal = memory / "graph.kuzu.wal"
    assert not wal.exists() or wal.stat().st_size == 0
    graph.close()
    _assert_whole(memory)
    assert read_health(memory)["damage_reports"] == 0
    assert _kept(memory) == []


@pytest.fixture(scope="module")
def noted(killed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The killed memory with a rebuild killed right after writing its note (the rebuilt file
    beside the graph, the swap not begun): each stage of the swap test starts from a copy."""
    memory = tmp_path_factory.mktemp("noted") / "mem"
    shutil.copytree(killed, memory)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(probe, "finish_rebuild", lambda path, read_only: None)
        probe.rebuild_graph(memory / "graph.kuzu", resolve_engine(), "rows changed")
    return memory


@pytest.mark.parametrize("stage", ["noted", "linked", "log_moved", "swapped"])
def test_a_kill_during_the_swap_is_finished_by_the_next_open(
    noted: Path, tmp_path: Path, stage: str
) -> None:
    """A rebuild killed after writing its note, at each step of the swap: the next open
    finishes it and the memory is whole."""
    memory = tmp_path / "mem"
    shutil.copytree(noted, memory)
    graph, wal = memory / "graph.kuzu", memory / "graph.kuzu.wal"
    stamp = json.loads(probe.rebuild_marker(graph).read_text())["stamp"]
    rebuilt, kept, wal_kept = probe._rebuild_names(graph, stamp)
    assert rebuilt.exists() and graph.exists() and wal.exists()
    if stage in ("linked", "log_moved", "swapped"):
        os.link(graph, kept)
    if stage in ("log_moved", "swapped"):
        os.replace(wal, wal_kept)
    if stage == "swapped":
        os.replace(rebuilt, graph)
    with pytest.raises(DamagedMemoryError, match="open the memory read-write once"):
        _open(memory, read_only=True)
    _assert_whole(memory)
    assert not probe.rebuild_marker(graph).exists() and not rebuilt.exists()
    assert kept.exists() and wal_kept.exists()


_HOLDER = textwrap.dedent(
    """
    import sys
    from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
    mem = SpatioTemporalMemory(
        config=MemoryConfig(db_path=sys.argv[1], embedding_dim=int(sys.argv[2]),
                            maintenance_interval=None, entity_extraction=False),
        embedding_provider=HashingEmbedder(int(sys.argv[2])),
    )
    mem.add("a blue mug on the shelf", x=3.0, y=4.0)
    mem.flush()  # in the log, not yet in the file
    # No timed work (maintenance, extraction); the open queues the killed memory's unfinished
    # episodes on the worker (one job at a time, in order): once a job queued after them has
    # run, the holder writes nothing more while it holds the memory.
    mem.consolidation.worker.submit("settled", lambda: None).result()
    mem.flush()
    print("HOLDING", flush=True)
    sys.stdin.readline()
    mem.close()
    """
)


def test_a_memory_another_process_holds_is_refused_before_any_probe_or_rebuild(
    killed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second process opening a memory that one process holds read-write (its writes in the
    log, the file unsealed) is refused by the memory's lock before the probe copies a file the
    holder is writing: no scratch copy, no rebuild under the holder, its files untouched. The
    same lock orders two processes opening one killed memory: the first probes and rebuilds,
    the second is refused."""
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(memory), str(DIM)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "HOLDING"
        wal = memory / "graph.kuzu.wal"
        assert wal.stat().st_size > 0
        files = {p.name: p.read_bytes() for p in memory.iterdir() if p.is_file()}
        monkeypatch.setattr(probe, "REPLAY_PROGRAM", CHANGED_AFTER_CHECKPOINT)  # would rebuild
        for read_only in (False, True):
            with pytest.raises(DatabaseLockedError):
                _open(memory, read_only=read_only)
        assert {p.name: p.read_bytes() for p in memory.iterdir() if p.is_file()} == files
        assert not [p for p in memory.iterdir() if p.name.startswith((".probe-", ".rebuild-"))]
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=120) == 0
    monkeypatch.undo()
    _assert_whole(memory, "a blue mug on the shelf")
    assert _kept(memory) == []


def test_a_failed_rebuild_refuses_the_memory_and_leaves_its_files(
    killed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    before = sorted(p.name for p in memory.iterdir())
    monkeypatch.setattr(probe, "REPLAY_PROGRAM", CHANGED_AFTER_CHECKPOINT)
    monkeypatch.setattr(probe, "REBUILD_STEP", "import sys; sys.exit('no disk left')")
    with pytest.raises(DamagedMemoryError, match=r"rebuilding the graph from the log failed"):
        _open(memory)
    assert sorted(p.name for p in memory.iterdir() if not p.name.endswith(".lock")) == [
        n for n in before if not n.endswith(".lock")
    ]
    monkeypatch.undo()
    _assert_whole(memory)  # the log is still there: a later open without the fault has it


def test_the_probe_digest_sees_one_changed_value_and_not_a_rebuilt_file(
    killed: Path, noted: Path, tmp_path: Path
) -> None:
    """The rows' digest: equal for the replayed log and the graph rebuilt from it (another file,
    other internal ids: the one the rebuild of the ``noted`` fixture made by the export and
    import steps), different after one value changed."""
    engine = resolve_engine()

    def digest(graph: Path, mode: str) -> str | None:
        crash, output = probe.run_in_child(
            probe.REPLAY_PROGRAM, [str(graph), engine, mode, "twice"]
        )
        assert crash is None, output
        replayed = probe._printed(output, "REPLAYED")
        assert replayed is not None and replayed == probe._printed(output, "CHECKPOINTED")
        return replayed

    work = tmp_path / "work"
    copy = probe._copy_graph(killed / "graph.kuzu", killed / "graph.kuzu.wal", work / "a")
    keys = digest(copy, "keys")
    fresh = work / "fresh" / "graph.kuzu"
    fresh.parent.mkdir()
    (rebuilt,) = noted.glob("graph.kuzu.rebuilt-*")
    shutil.copyfile(rebuilt, fresh)
    assert digest(fresh, "keys") == keys
    assert digest(fresh, "offsets") != keys  # another order of the same rows
    changed = probe._copy_graph(fresh, fresh.with_name("none"), work / "c")
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, sys; e = importlib.import_module(sys.argv[2]); "
            "db = e.Database(sys.argv[1]); e.Connection(db).execute("
            '"MATCH (o:Observation) WITH o LIMIT 1 SET o.x = o.x + 1e-9"); db.close()',
            str(changed),
            engine,
        ],
        check=True,
    )
    assert digest(changed, "keys") != keys


def test_the_export_step_reads_the_replayed_log_without_checkpointing_it(
    killed: Path, tmp_path: Path
) -> None:
    """The export reads the rows as the replay left them: its child neither checkpoints the log
    at open (what GraphDB does after the probe checked that checkpoint) nor automatically, so
    the graph file is byte for byte as it was (a checkpoint would have written the log into it,
    and on Kuzu 0.11.3 may damage the rows it then exports)."""
    engine = resolve_engine()
    copy = probe._copy_graph(killed / "graph.kuzu", killed / "graph.kuzu.wal", tmp_path / "a")
    before = copy.read_bytes()
    crash, output = probe.run_in_child(
        probe.REBUILD_STEP, ["export", str(copy), str(tmp_path / "tables"), engine]
    )
    assert crash is None and "DONE" in output.split(), output
    assert copy.read_bytes() == before


# A rebuild whose import leaves a table out (its rows exported, not imported).
IMPORT_LOSING_A_TABLE = textwrap.dedent(
    """
    import json, pathlib, sys
    from emem_graph.storage.graph_rebuild import rebuild_step
    if sys.argv[1] == "import":
        manifest = pathlib.Path(sys.argv[3]) / "manifest.json"
        files = json.loads(manifest.read_text())
        files["files"] = [f for f in files["files"] if f["table"] != "BELONGS_TO"]
        manifest.write_text(json.dumps(files))
    rebuild_step(sys.argv[1:])
    """
)


def test_a_rebuilt_graph_without_every_replayed_row_is_refused(
    killed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    monkeypatch.setattr(probe, "REPLAY_PROGRAM", CHANGED_AFTER_CHECKPOINT)
    monkeypatch.setattr(probe, "REBUILD_STEP", IMPORT_LOSING_A_TABLE)
    with pytest.raises(DamagedMemoryError, match="does not hold the replayed rows"):
        _open(memory)
    assert _kept(memory) == [] and (memory / "graph.kuzu.wal").stat().st_size > 0


def test_the_key_digest_does_not_depend_on_the_order_rows_were_written_in(tmp_path: Path) -> None:
    engine = resolve_engine()
    writer = textwrap.dedent(
        """
        import importlib, sys
        e = importlib.import_module(sys.argv[2])
        db = e.Database(sys.argv[1])
        c = e.Connection(db)
        c.execute("CREATE NODE TABLE T(id STRING PRIMARY KEY, v STRING, w DOUBLE[])")
        c.execute("CREATE REL TABLE R(FROM T TO T, k DOUBLE)")
        ids = ["a", "b", "c", "d"][:: int(sys.argv[3])]
        for i in ids:
            c.execute("CREATE (:T {id: $i, v: $v, w: [1.0, 2.5]})", {"i": i, "v": i * 3})
        for a, b in zip(ids, ids[1:]):
            x, y = sorted((a, b))
            c.execute(
                "MATCH (x:T {id: $x}), (y:T {id: $y}) CREATE (x)-[:R {k: 0.5}]->(y)",
                {"x": x, "y": y},
            )
        db.close()
        """
    )
    digests = []
    for way in ("1", "-1"):
        graph = tmp_path / way / "graph.kuzu"
        graph.parent.mkdir()
        subprocess.run([sys.executable, "-c", writer, str(graph), engine, way], check=True)
        crash, output = probe.run_in_child(
            probe.REPLAY_PROGRAM, [str(graph), engine, "keys", "once"]
        )
        assert crash is None, output
        digests.append(probe._printed(output, "REPLAYED"))
    assert digests[0] is not None and digests[0] == digests[1]


@pytest.mark.parametrize(
    "note", ["", "{", '{"stamp": "../../graph"}', '{"stamp": 7}', '{"rebuilt": "health.json"}']
)
def test_a_rebuild_note_that_no_rebuild_wrote_refuses_the_memory_and_touches_nothing(
    killed: Path, tmp_path: Path, note: str
) -> None:
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    probe.rebuild_marker(memory / "graph.kuzu").write_text(note)
    before = {p.name: p.read_bytes() for p in memory.iterdir() if p.is_file()}
    with pytest.raises(DamagedMemoryError, match="note of an interrupted rebuild") as caught:
        _open(memory)
    assert "\n" not in str(caught.value)
    assert {p.name: p.read_bytes() for p in memory.iterdir() if p.is_file()} == before


def test_scratch_left_by_a_killed_probe_or_rebuild_is_removed_once_stale(
    killed: Path, tmp_path: Path
) -> None:
    memory = tmp_path / "mem"
    shutil.copytree(killed, memory)
    stale = [memory / ".probe-killed", memory / ".rebuild-killed"]
    live = [memory / ".probe-running", memory / ".rebuild-running"]
    others = [memory / ".probe-file", memory / "notes.probe-x"]
    for directory in stale + live:
        (directory / "graph").mkdir(parents=True)
        (directory / "graph" / "graph.kuzu").write_bytes(b"copy")
    for file in others:
        file.write_text("not a scratch directory")
    old = (memory / "graph.kuzu").stat().st_mtime - probe.SCRATCH_STALE_S - 60
    for directory in stale:
        os.utime(directory, (old, old))
    os.utime(others[0], (old, old))
    with pytest.raises(RecoveryNeededError):  # read-only: refused, and it removes nothing
        _open(memory, read_only=True)
    assert all(d.exists() for d in stale)
    _assert_whole(memory)
    assert not any(d.exists() for d in stale)
    assert all(d.exists() for d in live + others)
