"""Commands replace only what they themselves wrote, and never through a link: a repeated
parquet/csv export checks every file of its folder before writing any, the demo removes only the
memory it made (never while a process holds it), a fleet replica is rebuilt only when its folder
holds the replica alone, and migrate never copies a memory into itself or into another memory.
Each refusal is one line naming what is in the way; every file stays as it was."""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.cli import main
from emem_graph.errors import DatabaseLockedError, InvalidInputError
from emem_graph.evals.demo import run_demo
from emem_graph.fleet import Frame, push_memory
from emem_graph.fleet.replica import MARKER
from emem_graph.fleet.replica_update import replicate
from emem_graph.ingest.unwritten import UNWRITTEN_FILE
from emem_graph.migrate import MigrationError, migrate
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.health import HEALTH_FILE, report_damage
from emem_graph.storage.store import GRAPH_FILE

Snapshot = dict[str, tuple[str, int]]
QUIET: Callable[[str], None] = lambda _line: None  # noqa: E731


def snapshot(root: Path) -> Snapshot:
    """Every file under ``root`` (links not followed): its bytes' hash and its mtime."""
    files: Snapshot = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            files[str(path.relative_to(root))] = (f"-> {os.readlink(path)}", 0)
        elif path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            files[str(path.relative_to(root))] = (digest, path.stat().st_mtime_ns)
    return files


def make_memory(directory: Path, things: tuple[str, ...] = ("red cup", "kettle")) -> Path:
    """A small closed memory (hashing embedder) at ``directory``."""
    config = MemoryConfig(db_path=str(directory), maintenance_interval=None)
    with SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384)) as memory:
        for i, thing in enumerate(things):
            memory.add(f"a {thing} on the table", float(i), 2.0, timestamp=1_790_000_000.0 + i)
            memory.add_entity(thing, float(i), 2.0, timestamp=1_790_000_000.0 + i)
    return directory


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``emem-graph -q ARGV``, expect exit status 2 and one line; returns that line."""
    capsys.readouterr()
    rc = main(["-q", *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2, (argv, rc, err)
    assert err.startswith("emem-graph: error: ") and "\n" not in err, err
    return err


def exported(capsys: pytest.CaptureFixture[str], *argv: str) -> None:
    assert main(["-q", "export", *argv]) == 0, capsys.readouterr().err
    capsys.readouterr()


@contextmanager
def held_by_another_process(memory: Path) -> Iterator[None]:
    """A child process holding the memory's graph open (read-only) until the block ends."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from pathlib import Path; "
            "from emem_graph.storage.graph import GraphDB; "
            f"g = GraphDB(Path({str(memory / GRAPH_FILE)!r}), read_only=True); "
            "print('open', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "open"
        yield
    finally:
        child.kill()
        child.wait()


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_memory(tmp_path_factory.mktemp("ownership") / "mem")


# --- export into its own earlier folder -----------------------------------------------------


def test_a_repeated_csv_export_refuses_links_put_in_its_folder_and_writes_nothing(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    exported(capsys, str(memory), "--format", "csv", str(out))
    victim = make_memory(tmp_path / "victim_mem", ("drill",))
    (tmp_path / "victim.txt").write_text("precious user data\n")
    (out / "Observation.csv").unlink()
    (out / "Observation.csv").symlink_to(tmp_path / "victim.txt")
    (out / "Episode.csv").unlink()
    (out / "Episode.csv").symlink_to(victim / GRAPH_FILE)
    before = snapshot(tmp_path)

    err = refused(capsys, "export", str(memory), "--format", "csv", str(out))
    assert "Observation.csv is a symbolic link" in err  # the first table checked
    assert snapshot(tmp_path) == before  # no file of the folder, nor a link's target, written


@pytest.mark.parametrize("format", ["csv", "parquet"])
def test_a_repeated_export_refuses_a_file_edited_since_or_hard_linked_elsewhere(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], format: str
) -> None:
    out = tmp_path / "out"
    exported(capsys, str(memory), "--format", format, str(out))
    gist = out / f"Gist.{format}"
    gist.write_bytes(gist.read_bytes() + b"\n")  # the user's now
    before = snapshot(tmp_path)
    err = refused(capsys, "export", str(memory), "--format", format, str(out))
    assert f"Gist.{format} was changed since" in err
    assert snapshot(tmp_path) == before

    gist.unlink()
    os.link(out / f"Place.{format}", tmp_path / f"kept-place.{format}")
    before = snapshot(tmp_path)
    err = refused(capsys, "export", str(memory), "--format", format, str(out))
    assert f"Place.{format} has 1 other name(s)" in err
    assert snapshot(tmp_path) == before


def test_a_repeated_export_replaces_its_own_files_by_rename_and_leaves_the_rest(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    exported(capsys, str(memory), "--format", "parquet", str(out))
    (out / "notes.txt").write_text("mine\n")
    first = (out / "Observation.parquet").stat().st_ino
    exported(capsys, str(memory), "--format", "parquet", str(out))
    assert (out / "Observation.parquet").stat().st_ino != first  # a new file renamed in
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not [p.name for p in out.iterdir() if p.name.endswith(".part")]


def test_a_json_export_to_a_dangling_link_is_refused_and_creates_nothing(
    memory: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dangling.json").symlink_to(tmp_path / "elsewhere" / "made.json")
    (tmp_path / "elsewhere").mkdir()
    err = refused(
        capsys, "export", str(memory), "--format", "json", str(tmp_path / "dangling.json")
    )
    assert "symbolic link" in err
    assert not (tmp_path / "elsewhere" / "made.json").exists()


# --- the demo on its own earlier folder -------------------------------------------------------


def test_the_demo_again_refuses_a_folder_holding_what_it_did_not_make_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo"
    run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=QUIET, progress=False)
    (target / "notes.txt").write_text("my notes\n")
    (target / "my_exports").mkdir()
    (target / "my_exports" / "a.csv").write_text("data\n")
    before = snapshot(tmp_path)

    err = refused(capsys, "demo", str(target), "--embedder", "hashing", "--rounds", "1")
    assert "my_exports, notes.txt" in err and "no record of making" in err
    assert snapshot(tmp_path) == before

    shutil.move(target / "notes.txt", tmp_path / "notes.txt")
    shutil.move(target / "my_exports", tmp_path / "my_exports")
    run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=QUIET, progress=False)
    assert (target / GRAPH_FILE).is_file()


def test_the_demo_again_replaces_its_memory_with_the_files_the_memory_made_since(
    tmp_path: Path,
) -> None:
    """Opening the demo's memory afterwards adds files of the memory's own (a health record,
    rows kept at a failed close): they are part of the memory the demo made, so a rerun
    replaces them with it and is not refused."""
    target = tmp_path / "demo"
    run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=QUIET, progress=False)
    report_damage(target, "a test's damage", "nothing done")  # health.json, as an open writes it
    (target / UNWRITTEN_FILE).write_text("")
    run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=QUIET, progress=False)
    assert (target / GRAPH_FILE).is_file()
    assert not (target / HEALTH_FILE).exists() and not (target / UNWRITTEN_FILE).exists()


def test_the_demo_again_refuses_while_another_process_holds_its_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "demo"
    run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=QUIET, progress=False)
    before = snapshot(tmp_path)
    with held_by_another_process(target):
        err = refused(capsys, "demo", str(target), "--embedder", "hashing", "--rounds", "1")
        assert "a process has it open" in err
        assert snapshot(tmp_path) == before
    reader = GraphDB(target / GRAPH_FILE, read_only=True)  # in this process too
    try:
        with pytest.raises(DatabaseLockedError):
            run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=QUIET, progress=False)
    finally:
        reader.close()
    assert snapshot(tmp_path) == before


# --- a fleet replica rebuilt whole ------------------------------------------------------------


def test_a_replica_rebuild_refuses_files_it_did_not_make_and_a_process_holding_it(
    tmp_path: Path,
) -> None:
    robot = make_memory(tmp_path / "robot")
    uri = str(tmp_path / "fleet")
    push_memory(robot, uri, "bravo")
    replica = tmp_path / "replica"
    replicate(uri, replica)
    push_memory(robot, uri, "bravo", frame=Frame(5.0, 0.0, math.pi))  # every row changes
    (replica / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    with pytest.raises(InvalidInputError, match=r"holds notes\.txt, which no replica holds"):
        replicate(uri, replica)
    assert snapshot(tmp_path) == before

    (replica / "notes.txt").unlink()
    before = snapshot(tmp_path)
    with held_by_another_process(replica), pytest.raises(DatabaseLockedError):
        replicate(uri, replica)
    assert snapshot(tmp_path) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".replica.")]
    assert replicate(uri, replica).how == "rebuilt"
    assert (replica / MARKER).is_file()


# --- migrate into itself ----------------------------------------------------------------------


def test_migrate_refuses_a_destination_inside_the_source_or_any_memory_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_memory(tmp_path / "src")
    other = make_memory(tmp_path / "other")
    before = snapshot(tmp_path)
    for destination in (
        source / "copy",
        source / "vectors" / "copy",
        tmp_path / "elsewhere" / ".." / "src" / "copy",
        other / "copy",
    ):
        with pytest.raises(InvalidInputError, match="inside the"):
            migrate(source, destination)
    err = refused(capsys, "migrate", str(source), str(source / "copy"))
    assert "inside the source memory" in err
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "elsewhere").exists()


def test_a_failed_copy_in_migrate_is_told_in_one_short_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = make_memory(tmp_path / "src")

    def failing_copy(src: object, dst: object, **_: object) -> None:
        deep = "/".join(["copy"] * 400)
        raise shutil.Error([(f"{src}/{deep}", f"{dst}/{deep}", "File name too long")] * 300)

    monkeypatch.setattr(shutil, "copytree", failing_copy)
    with pytest.raises(MigrationError) as caught:
        migrate(source, tmp_path / "copy")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 1_000, message[:300]
    assert "300 file(s)" in message and "File name too long" in message
    assert not (tmp_path / "copy").exists()
