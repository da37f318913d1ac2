"""Commands that write files never delete or overwrite what they did not create, and never
write into a memory.

Each writing command (export in its four formats, map, demo, make-bag, bench) is pointed at
each protected target: a path inside a memory, the memory itself, a directory holding a
memory, an existing foreign file, a non-empty directory no command created, and the same
through a symlink and through ``..``. Each must refuse with one line (exit status 2) and leave
every file's bytes and mtime as they were. Re-running a command onto its own earlier output
works.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from emem_graph import HashingEmbedder, SpatioTemporalMemory
from emem_graph.cli import main
from emem_graph.errors import InvalidInputError
from emem_graph.outputs import DIRECTORY_MARKER

Snapshot = dict[str, tuple[str, int]]


def snapshot(root: Path) -> Snapshot:
    """Every file under ``root``: its bytes' hash and its mtime."""
    files: Snapshot = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            files[str(path.relative_to(root))] = (digest, path.stat().st_mtime_ns)
    return files


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed memory ``mem``, a foreign file, a foreign directory, a directory holding a
    memory, and symlinks to the memory and to the foreign file. Built once for the module:
    the tests only read it (each compares every file's bytes and mtime before and after)."""
    root = tmp_path_factory.mktemp("site")
    with SpatioTemporalMemory(str(root / "mem"), embedding_provider=HashingEmbedder(384)) as memory:
        memory.add("a red cup on the table", 1.0, 2.0)
        memory.add_entity("red cup", 1.0, 2.0)
    (root / "foreign.json").write_text('{"mine": true}\n')
    (root / "foreign.png").write_bytes(b"\x89PNG not yours")
    (root / "foreign.yaml").write_text("mine: true\n")
    (root / "notes").mkdir()
    (root / "notes" / "todo.txt").write_text("keep me\n")
    (root / "holder").mkdir()
    with SpatioTemporalMemory(
        str(root / "holder" / "inner"), embedding_provider=HashingEmbedder(384)
    ) as memory:
        memory.add("another memory", 0.0, 0.0)
    (root / "to-mem").symlink_to(root / "mem")
    (root / "to-foreign.json").symlink_to(root / "foreign.json")
    (root / "to-graph.json").symlink_to(root / "mem" / "graph.kuzu")
    return root


def file_targets(root: Path, suffix: str) -> list[str]:
    """Protected paths for a command writing one file."""
    foreign = {".json": "foreign.json", ".graphml": "foreign.json", ".png": "foreign.png"}
    return [
        f"{root}/mem/out{suffix}",  # inside a memory
        f"{root}/mem/graph.kuzu",  # the memory's own graph file
        f"{root}/mem/vectors/out{suffix}",  # deeper inside
        f"{root}/to-mem/out{suffix}",  # through a symlink to the memory
        f"{root}/notes/../mem/out{suffix}",  # through ..
        f"{root}/holder/inner/out{suffix}",  # inside another memory
        f"{root}/{foreign.get(suffix, 'foreign.yaml')}",  # an existing foreign file
        f"{root}/to-foreign.json",  # a symlink to a foreign file
        f"{root}/to-graph.json",  # a symlink to the memory's graph file
        f"{root}/mem",  # the memory itself
        f"{root}/notes",  # a foreign directory
    ]


def dir_targets(root: Path) -> list[str]:
    """Protected paths for a command writing (or deleting) a directory."""
    return [
        f"{root}/mem",  # the memory itself
        f"{root}/to-mem",  # the memory through a symlink
        f"{root}/notes/../mem",  # the memory through ..
        f"{root}/mem/out",  # inside the memory
        f"{root}/holder",  # a directory holding a memory
        f"{root}/notes",  # a non-empty directory no command created
        f"{root}/foreign.json",  # a file
        f"{root}",  # the parent of everything
    ]


REFUSALS: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def _figures(summary: list[str]) -> Iterator[None]:
    yield
    commands = set(REFUSALS)
    summary.append(
        f"destructive: {len(REFUSALS)} writes at protected targets by {len(commands)} commands "
        "refused with one line, 0 files changed (bytes and mtimes compared)"
    )


def refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI, expect exit status 2 and one line on stderr; returns that line."""
    REFUSALS.append(argv[0])
    rc = main(["-q", *argv])
    err = capsys.readouterr().err.strip()
    assert rc == 2, (argv, rc, err)
    assert err.startswith("emem-graph: error: ") and "\n" not in err, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("format", ["json", "graphml"])
def test_export_to_a_file_refuses_every_protected_target(
    site: Path, format: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(site)
    for target in file_targets(site, f".{format}"):
        refused(capsys, ["export", str(site / "mem"), "--format", format, target])
    assert snapshot(site) == before


@pytest.mark.parametrize("format", ["csv", "parquet"])
def test_export_to_a_directory_refuses_every_protected_target(
    site: Path, format: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(site)
    for target in dir_targets(site):
        refused(capsys, ["export", str(site / "mem"), "--format", format, target])
    assert snapshot(site) == before


def test_map_refuses_every_protected_target(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(site)
    for target in file_targets(site, ".png"):
        if target.endswith(".png"):  # the map refuses other suffixes anyway
            refused(capsys, ["map", str(site / "mem"), target])
    assert snapshot(site) == before


def test_demo_refuses_every_protected_target_and_deletes_nothing(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(site)
    for target in dir_targets(site):
        err = refused(capsys, ["demo", target, "--embedder", "hashing", "--rounds", "1"])
        assert "demo" in err
    assert snapshot(site) == before


def test_make_bag_refuses_paths_inside_a_memory_and_foreign_configs(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(site)
    for bag in (f"{site}/mem/bag", f"{site}/to-mem/bag", f"{site}/notes/../mem/bag"):
        refused(capsys, ["make-bag", bag, "--duration", "5"])
    for config in (f"{site}/mem/b.yaml", f"{site}/foreign.yaml", f"{site}/to-mem/b.yaml"):
        refused(capsys, ["make-bag", str(site / "newbag"), "--config", config, "--duration", "5"])
    assert not (site / "newbag").exists()
    assert snapshot(site) == before


def test_bench_refuses_a_memory_and_a_foreign_directory_before_any_work(site: Path) -> None:
    from emem_graph.evals.bench.run import run_bench

    before = snapshot(site)
    for target in dir_targets(site):
        with pytest.raises(InvalidInputError):
            run_bench(10, Path(target), repeats=1, progress=False)
    assert snapshot(site) == before


def test_the_fleet_bench_refuses_a_memory_and_a_foreign_directory_before_any_work(
    site: Path,
) -> None:
    # It used to create the directory whatever it held and remove it whole at the end.
    from emem_graph.evals.bench.fleet import run_fleet_bench

    before = snapshot(site)
    for target in dir_targets(site):
        with pytest.raises(InvalidInputError):
            run_fleet_bench(1, 10, Path(target), queries=1, progress=False)
    assert snapshot(site) == before


def test_bench_again_keeps_what_it_did_not_make_in_its_own_directory(
    site: Path, tmp_path: Path
) -> None:
    # A later run removed fixed scratch names (``raw``, ``floor``...) from its directory
    # without a record of having made them; now it removes what its marker records, and
    # refuses while anything else is there.
    from emem_graph.evals.bench.run import run_bench

    out = tmp_path / "scratch"
    run_bench(200, out, repeats=1, progress=False, keep=True)
    assert (out / DIRECTORY_MARKER).is_file() and (out / "raw").is_dir()
    run_bench(200, out, repeats=1, progress=False, keep=True)  # replaces its own entries
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(InvalidInputError, match="no record of making"):
        run_bench(200, out, repeats=1, progress=False)
    assert (out / "notes.txt").read_text() == "mine\n"
    (out / "notes.txt").unlink()
    run_bench(200, out, repeats=1, progress=False)
    assert not out.exists()


def test_export_runs_again_onto_its_own_earlier_output_but_not_once_it_was_changed(
    site: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "exports"
    for _ in range(2):
        assert main(["-q", "export", str(site / "mem"), "--format", "json", f"{out}/m.json"]) == 0
        assert main(["-q", "export", str(site / "mem"), "--format", "csv", f"{out}/csv"]) == 0
    assert (out / "csv" / DIRECTORY_MARKER).is_file()
    capsys.readouterr()
    (out / "m.json").write_text("edited by hand\n")  # now it is the user's
    refused(capsys, ["export", str(site / "mem"), "--format", "json", f"{out}/m.json"])
    assert (out / "m.json").read_text() == "edited by hand\n"


def test_an_empty_existing_directory_is_fine(
    site: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["-q", "export", str(site / "mem"), "--format", "parquet", str(empty)]) == 0
    assert (empty / "Observation.parquet").is_file()


def test_map_runs_again_onto_its_own_earlier_image(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "map.png"
    for _ in range(2):
        assert main(["-q", "map", str(site / "mem"), str(out)]) == 0
    assert out.stat().st_size > 0


def test_demo_runs_again_onto_its_own_earlier_demo_and_nowhere_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from emem_graph.evals.demo import run_demo

    target = tmp_path / "demo"
    quiet: Callable[[str], None] = lambda _line: None  # noqa: E731
    for _ in range(2):
        run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=quiet, progress=False)
        assert (target / "graph.kuzu").exists() and (target / DIRECTORY_MARKER).is_file()
    # the marker is what makes it the demo's: without it the memory is refused
    os.remove(target / DIRECTORY_MARKER)
    before = snapshot(tmp_path)
    with pytest.raises(InvalidInputError):
        run_demo(target, embedder=HashingEmbedder(384), rounds=1, echo=quiet, progress=False)
    assert snapshot(tmp_path) == before


def test_the_fleet_bench_runs_and_removes_only_what_it_made(tmp_path: Path) -> None:
    from emem_graph.evals.bench.fleet import run_fleet_bench

    out = tmp_path / "fleet-bench"
    figures = run_fleet_bench(2, 200, out, queries=2, progress=False, keep=True)
    assert figures["robots"] == 2 and figures["replica_rows"] > 0
    assert {"robot-0", "robot-1", "one-memory", "replica", "fleet"} <= {
        entry.name for entry in out.iterdir()
    }
    run_fleet_bench(2, 200, out, queries=2, progress=False)  # replaces its own earlier run
    assert not out.exists()
