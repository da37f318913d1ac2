"""Copy a memory to another graph engine (kuzu <-> ladybug) or to a fresh file of the same one.

The two engines' files are incompatible both ways and their Python modules cannot share a
process, so the graph travels as Parquet (storage/graph_transfer.py): a child process running
the source engine exports it, another running the destination engine imports it. The vector
table and every other file of the memory are copied as they are. Then the copy is checked:
rows per node and rel table, the vector files, and a sample of tool answers asked of both
memories at one fixed time must be identical. The source is only read, under a shared lock
(no writer can start meanwhile), and only a scratch copy of it is ever opened; the destination
appears, whole and checked, by one rename at the end.

The scratch directory beside the destination holds a whole copy of the source, so it does not
outlive the migration (emem_graph/scratch.py): SIGTERM or SIGINT removes it and stops the
running step before the process ends; a step's child process dies with its parent; and a
directory left by a migration killed outright is removed by the next migrate beside it, once
its owner file proves it is a migrate scratch directory whose process is gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emem_graph.errors import EmemGraphError, InvalidInputError, StorageError
from emem_graph.outputs import enclosing_memory
from emem_graph.scratch import (
    die_with_parent,
    make_scratch,
    remove_stale_scratch,
    run_child,
    unwind_on_stop_signals,
)
from emem_graph.storage import open_registry
from emem_graph.storage.graph_engine import ENGINE_ENV, ENGINES, file_engine
from emem_graph.storage.store import GRAPH_FILE, VECTOR_DIR

CHILD_TIMEOUT_S = 3600.0
"""A child process still exporting, importing or answering after this long is stopped."""

SCRATCH_KIND = "emem-graph migrate"
"""The kind in a scratch directory's owner file (emem_graph/scratch.py)."""

SCRATCH_NAME = re.compile(r"\..+\.migrate-[a-z0-9_]+")
"""How the scratch directory beside a destination is named: ``.DST.migrate-<random>``."""

_GRAPH_ONLY = frozenset(
    {
        GRAPH_FILE,
        f"{GRAPH_FILE}.wal",
        f"{GRAPH_FILE}.lock",
        f"{GRAPH_FILE}.shadow",
        "graph_seal.json",
    }
)
"""Files of the graph itself (or of its state in one engine): rebuilt, never copied."""

SAMPLE_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("temporal_query", {"order": "oldest"}),
    ("temporal_query", {"last_n_minutes": 60}),
    ("episode_summary", {"last_n": 5}),
    ("entity_query", {}),
    ("entity_query", {"name": "door"}),
    ("semantic_search", {"query": "a cup on the table"}),
    ("search_gists", {"query": "kitchen"}),
    ("locate", {"concept": "cup"}),
    ("recall", {"query": "where was the kettle"}),
    ("spatial_query", {"x": 0.0, "y": 0.0, "radius": 50.0}),
    ("get_current_context", {}),
    ("body_status", {}),
)
"""The tool answers compared between the source and the copy (asked at one fixed time)."""


class MigrationError(EmemGraphError):
    """The copy could not be made or did not check out; the source is unchanged."""


@dataclass
class MigrationReport:
    """What migrate copied and checked."""

    source_engine: str
    engine: str
    tables: dict[str, int]
    """Rows per node and rel table, identical in both."""
    vector_files: int
    tool_answers: int
    """Tool answers compared (all identical)."""
    other_files: list[str] = field(default_factory=list)
    stale_removed: list[str] = field(default_factory=list)
    """Scratch directories of killed migrations removed before this one began."""

    def lines(self) -> list[str]:
        """The report as the command prints it."""
        nodes = sum(self.tables.values())
        lines = [
            f"graph: {self.source_engine} -> {self.engine}, {len(self.tables)} tables, "
            f"{nodes} rows, counts identical per table",
            f"vectors: {self.vector_files} files copied, identical",
            f"tool answers: {self.tool_answers} compared, identical",
        ]
        if self.stale_removed:
            lines.append(f"removed what killed migrations left: {', '.join(self.stale_removed)}")
        return lines


def migrate(source: Path, destination: Path, engine: str | None = None) -> MigrationReport:
    """Copy the memory in ``source`` to the new directory ``destination`` on ``engine``.

    Args:
        source: a memory's directory; only read.
        destination: must not exist; created whole at the end, or not at all.
        engine: kuzu or ladybug; None: the engine the source is not on.

    Raises:
        InvalidInputError: no memory in ``source``, ``destination`` exists or lies inside the
            source or inside any memory, or an unknown engine; refused before anything is
            written.
        DatabaseLockedError: another process has the source open read-write.
        MigrationError: a step failed or the copy differs, or SIGTERM / SIGINT stopped it and
            the previous handler of that signal returned (nothing is left at ``destination``).
    """
    source_engine = file_engine(source / GRAPH_FILE)
    if not source.is_dir() or source_engine is None:
        raise InvalidInputError(f"{source} holds no emem_graph memory (no {GRAPH_FILE} inside)")
    if engine is None:
        engine = next(other for other in ENGINES if other != source_engine)
    if engine not in ENGINES:
        raise InvalidInputError(f"--engine {engine!r}: use one of {', '.join(ENGINES)}")
    if destination.exists() or destination.is_symlink():
        raise InvalidInputError(f"{destination} exists; migrate writes a new directory only")
    _refuse_overlap(source, destination)
    destination.parent.mkdir(parents=True, exist_ok=True)

    def stopped(name: str) -> MigrationError:
        return MigrationError(
            f"migrate was stopped by {name}; nothing was written to {destination}"
        )

    # The scratch directory holds a whole copy of the source: gone when a signal stops the
    # migration; one that a kill left behind is removed by the next migrate beside it.
    with unwind_on_stop_signals(stopped):
        stale = remove_stale_scratch(destination.parent, SCRATCH_NAME, SCRATCH_KIND)
        prefix = f".{destination.name}.migrate-"
        work = make_scratch(destination.parent, prefix, SCRATCH_KIND)
        try:
            report = _migrate_in(work, source, source_engine, engine, destination)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    report.stale_removed = stale
    return report


def _migrate_in(
    work: Path, source: Path, source_engine: str, engine: str, destination: Path
) -> MigrationReport:
    """The steps of ``migrate``, in the scratch directory ``work``."""
    graph_path = source / GRAPH_FILE
    scratch, copy, exported = work / "source", work / "copy", work / "export"
    # No writer may start while the files are copied (the claim is shared: readers may).
    claim = open_registry.claim(graph_path, read_only=True)
    try:
        _copy_tree(source, scratch, ignore=_ignore_lock)
    finally:
        claim.release()
    before = _run_child(source_engine, "export", scratch, exported)
    copy.mkdir()
    others = _copy_others(scratch, copy)
    after = _run_child(engine, "import", copy, exported)
    if before["tables"] != {t: n for t, n in after["tables"].items() if t in before["tables"]}:
        raise MigrationError(_difference("rows per table", before["tables"], after["tables"]))
    vector_files = _same_tree(scratch / VECTOR_DIR, copy / VECTOR_DIR)
    # Tool answers from copies of both: opening a memory may write to it (catch-up).
    now = str(before["now"])
    checked = work / "check"
    _copy_tree(copy, checked)
    theirs = _run_child(source_engine, "answers", scratch, now, before["dim"])
    ours = _run_child(engine, "answers", checked, now, before["dim"])
    for (name, args), a, b in zip(SAMPLE_CALLS, theirs["answers"], ours["answers"], strict=True):
        if a != b:
            raise MigrationError(
                f"the copy answers {name}({json.dumps(args)}) differently: "
                f"{a[:200]!r} vs {b[:200]!r}"
            )
    os.replace(copy, destination)
    return MigrationReport(
        source_engine, engine, before["tables"], vector_files, len(ours["answers"]), others
    )


def _refuse_overlap(source: Path, destination: Path) -> None:
    """Refuse a destination inside the source or inside any memory: the copy (and its scratch
    directory beside the destination) would copy itself, or write into a memory. (The
    destination does not exist, so it cannot hold the source.)"""
    real_source, real_destination = source.resolve(), destination.resolve()
    if real_destination == real_source or real_source in real_destination.parents:
        raise InvalidInputError(
            f"{destination} is inside the source memory {source}; migrate writes the copy "
            "beside it, never into it: give a path outside the source"
        )
    memory = enclosing_memory(real_destination.parent)
    if memory is not None:
        raise InvalidInputError(
            f"{destination} is inside the memory {memory}; migrate never writes into a memory: "
            "give a path outside it"
        )


def _copy_tree(
    source: Path, target: Path, ignore: Callable[[str, list[str]], list[str]] | None = None
) -> None:
    """shutil.copytree (links copied as links), its failure told in one line."""
    try:
        shutil.copytree(source, target, ignore=ignore, symlinks=True)
    except shutil.Error as exc:
        failures = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        first = failures[0] if failures else None
        detail = f"{str(first[0])[:200]}: {str(first[-1])[:200]}" if first else str(exc)[:300]
        raise MigrationError(
            f"copying {source} failed for {len(failures) or 'some'} file(s), the first "
            f"{detail}; nothing was written to the destination"
        ) from exc
    except OSError as exc:
        raise MigrationError(
            f"copying {source} failed: {str(exc)[:300]}; nothing was written to the destination"
        ) from exc


def _ignore_lock(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name == f"{GRAPH_FILE}.lock"]


def _copy_others(scratch: Path, copy: Path) -> list[str]:
    copied = []
    for entry in sorted(scratch.iterdir()):
        if entry.name in _GRAPH_ONLY or entry.name.startswith((".probe-", ".rebuild-")):
            continue
        if entry.is_dir() and not entry.is_symlink():
            _copy_tree(entry, copy / entry.name)
        else:
            try:
                shutil.copy2(entry, copy / entry.name, follow_symlinks=False)
            except OSError as exc:
                raise MigrationError(f"copying {entry} failed: {str(exc)[:300]}") from exc
        copied.append(entry.name)
    return copied


def _same_tree(a: Path, b: Path) -> int:
    """The number of files under ``a``, each identical under ``b`` (and no other there)."""
    digests = [_digests(a), _digests(b)]
    if digests[0] != digests[1]:
        raise MigrationError(f"the vector files of the copy differ from {a}")
    return len(digests[0])


def _digests(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _difference(what: str, a: dict[str, int], b: dict[str, int]) -> str:
    differ = {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
    return f"the copy has other {what} than the source: {differ}"


def _run_child(engine: str, role: str, *args: object) -> dict[str, Any]:
    """Run one step in a child process on ``engine``; its JSON answer."""
    program = "import sys; from emem_graph.migrate import child_main; child_main(sys.argv[1:])"
    env = {**os.environ, ENGINE_ENV: engine}
    try:
        run = run_child(
            [sys.executable, "-c", program, role, *map(str, args)],
            env=env,
            timeout=CHILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise MigrationError(
            f"the {role} step on {engine} ran past {CHILD_TIMEOUT_S:.0f} s"
        ) from exc
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise MigrationError(f"the {role} step on {engine} failed (exit {run.returncode}): {last}")
    answer: dict[str, Any] = json.loads(lines[-1])
    if "error" in answer:
        raise MigrationError(f"the {role} step on {engine} failed: {answer['error']}")
    return answer


def child_main(argv: list[str]) -> None:
    """One step of a migration, in a process running one engine (EMEM_GRAPH_ENGINE); prints
    its answer as one JSON line."""
    die_with_parent()
    role, *args = argv
    try:
        answer = _child_step(role, args)
    except EmemGraphError as exc:
        answer = {"error": " ".join(str(exc).split())}
    print(json.dumps(answer))


def _child_step(role: str, args: list[str]) -> dict[str, Any]:
    from emem_graph.storage.graph import GraphDB
    from emem_graph.storage.graph_transfer import export_tables, import_tables

    if role == "export":
        memory, out = Path(args[0]), Path(args[1])
        graph = GraphDB(memory / GRAPH_FILE)
        try:
            info = graph.ensure_schema({})  # an older schema is upgraded (in the scratch copy)
            export_tables(graph, out)
            tables = graph.table_counts()
            newest = graph.query_text("MATCH (o:Observation) RETURN max(o.timestamp) AS t")[0]["t"]
        finally:
            graph.close()
        return {"tables": tables, "now": (newest or 0.0) + 60.0, "dim": info["embedding_dim"]}
    if role == "import":
        memory, exported = Path(args[0]), Path(args[1])
        graph = GraphDB(memory / GRAPH_FILE)
        try:
            import_tables(graph, exported)
            return {"tables": graph.table_counts()}
        finally:
            graph.close()
    if role == "answers":
        return {"answers": _answers(Path(args[0]), float(args[1]), int(args[2]))}
    raise StorageError(f"unknown migrate step {role!r}")


def _answers(memory: Path, now: float, dim: int) -> list[str]:
    from emem_graph.config import MemoryConfig
    from emem_graph.ingest.embeddings import HashingEmbedder
    from emem_graph.memory import SpatioTemporalMemory

    # A deterministic embedder: both sides search the same stored vectors with the same query
    # vectors, so their answers must be equal whatever the memory's own model is.
    mem = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(memory), embedding_dim=dim, maintenance_interval=None),
        embedding_provider=HashingEmbedder(dim),
        get_current_time=lambda: now,
    )
    try:
        return [mem.dispatch_tool_call(name, dict(args)) for name, args in SAMPLE_CALLS]
    finally:
        mem.close()
