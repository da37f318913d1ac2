"""The graph engine seam: which engine a memory runs on, and the one-writer rule between
processes, which is the memory's own lock and not the engine's (LadybugDB lets a read-only
process open a database that another process is writing)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from emem_graph.errors import (
    BackendUnavailableError,
    ConfigError,
    DatabaseLockedError,
    GraphEngineMismatchError,
)
from emem_graph.storage.graph import GraphDB, load_engine
from emem_graph.storage.graph_engine import (
    DEFAULT_ENGINE,
    ENGINE_ENV,
    ENGINES,
    file_engine,
    resolve_engine,
)

HOLDER = """
import sys
from pathlib import Path
from emem_graph.storage.graph import GraphDB
graph = GraphDB(Path(sys.argv[1]), read_only=sys.argv[2] == "1")
if sys.argv[2] == "0":
    graph.ensure_schema({"embedding_dim": "8"})
print("HOLDING", flush=True)
sys.stdin.readline()
graph.close()
"""


@contextmanager
def held(path: Path, *, read_only: bool) -> Iterator[None]:
    """The graph at ``path`` held open by another process until the block ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(int(read_only))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "HOLDING", (
            child.communicate()[1][-2000:]
        )
        yield
    finally:
        child.communicate("\n", timeout=60)


@pytest.fixture
def graph_path(tmp_path: Path) -> Path:
    path = tmp_path / "mem" / "graph.kuzu"
    graph = GraphDB(path)
    graph.ensure_schema({"embedding_dim": "8"})
    graph.close()
    return path


def test_a_writer_in_another_process_refuses_readers_and_writers_here(graph_path: Path) -> None:
    with held(graph_path, read_only=False):
        for read_only in (True, False):
            with pytest.raises(DatabaseLockedError, match="open read-write"):
                GraphDB(graph_path, read_only=read_only)
    GraphDB(graph_path, read_only=True).close()  # its lock went with its close


def test_a_reader_in_another_process_admits_readers_and_refuses_a_writer(
    graph_path: Path,
) -> None:
    with held(graph_path, read_only=True):
        reader = GraphDB(graph_path, read_only=True)
        assert reader.query_text("MATCH (i:MemoryInfo) RETURN count(*) AS n")[0]["n"] == 2
        reader.close()
        with pytest.raises(DatabaseLockedError, match="read-write or read-only"):
            GraphDB(graph_path)
    GraphDB(graph_path).close()


def test_the_engine_is_the_configured_one_then_the_environment_then_ladybug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    assert resolve_engine() == DEFAULT_ENGINE == "ladybug"
    monkeypatch.setenv(ENGINE_ENV, "kuzu")
    assert resolve_engine() == "kuzu"
    assert resolve_engine("ladybug") == "ladybug"  # a name given in the configuration wins
    monkeypatch.setenv(ENGINE_ENV, "neo4j")
    with pytest.raises(ConfigError, match="EMEM_GRAPH_ENGINE='neo4j' is not a graph engine"):
        resolve_engine()


def test_one_process_runs_one_engine(graph_path: Path) -> None:
    here = file_engine(graph_path)
    assert here == resolve_engine()
    other = next(e for e in ENGINES if e != here)
    with pytest.raises(BackendUnavailableError, match=f"already runs {here}"):
        load_engine(other)
    assert other not in sys.modules
    with pytest.raises(GraphEngineMismatchError, match="emem-graph migrate"):
        GraphDB(graph_path, engine=other)


def test_a_file_of_a_newer_storage_version_is_refused_naming_migrate(graph_path: Path) -> None:
    """The byte after the magic is the engine's storage version (Kuzu 0.11.3: 39, LadybugDB
    0.22: 49); a file of a later release of the same engine is refused in one line naming
    migrate. (LadybugDB also opens files of its earlier storage versions; Kuzu none but its own.)"""
    raw = bytearray(graph_path.read_bytes())
    assert file_engine(graph_path) == resolve_engine()
    raw[4] += 1
    graph_path.write_bytes(bytes(raw))
    with pytest.raises(GraphEngineMismatchError, match="another storage version") as caught:
        GraphDB(graph_path)
    assert "emem-graph migrate" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_threads_opening_memories_at_once_in_a_new_process_all_open(tmp_path: Path) -> None:
    """The engine's import is one thread's: LadybugDB marks its native module as tried
    before the import ends, and every thread but one was told the engine is not installed."""
    script = (
        "import sys, threading\n"
        "from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory\n"
        "root = sys.argv[1]; gate = threading.Barrier(4); results = []\n"
        "def open_one(i):\n"
        "    gate.wait()\n"
        "    try:\n"
        "        config = MemoryConfig(db_path=f'{root}/m{i}', maintenance_interval=None)\n"
        "        embedder = HashingEmbedder(8)\n"
        "        SpatioTemporalMemory(config=config, embedding_provider=embedder).close()\n"
        "        results.append('opened')\n"
        "    except Exception as exc:\n"
        "        results.append(f'{type(exc).__name__}: {exc}')\n"
        "threads = [threading.Thread(target=open_one, args=(i,)) for i in range(4)]\n"
        "[t.start() for t in threads]; [t.join(120) for t in threads]\n"
        "print(results)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip() == str(["opened"] * 4), done.stdout + done.stderr
