"""Damage matrix: every kind of file of a memory removed, emptied, cut in half,
flipped in the middle or replaced by garbage, then the memory opened. The long campaigns
(``bash .ci/run --long``) run every file kind with every damage; the default run a covering
design: every file kind with two damages, every damage on six file kinds.

Each case either opens, with every observation the graph holds searchable (a damaged vector
table moved aside and rebuilt from the graph, a warning logged, ``vector_rebuilds`` counted),
or refuses with a clear EmemGraphError; never a raw Kuzu/Lance/OS exception. For the graph's
write-ahead log: either every flushed observation is there or the loss is reported (warning
plus ``graph_losses``), never a silent loss. Each case opens the memory a second time: it
stays repaired, with no second rebuild.

Two seed memories are built once per module (real Kuzu and LanceDB files, the hashing
embedder) and copied per case: one closed normally (with scalar, full-text and ANN indexes),
one killed (SIGKILL) right after a flush, so its graph lives in graph.kuzu.wal.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import campaign
import pytest
from killed_memory import run_killed_writer

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import DamagedMemoryError, EmemGraphError, StorageError
from emem_graph.explore.cypher import open_graph
from emem_graph.explore.stats import format_stats, memory_stats
from emem_graph.storage import probe
from emem_graph.storage.graph_engine import DEFAULT_ENGINE, ENGINE_ENV
from emem_graph.storage.health import read_health

DIM = 64
N_CLOSED = 300
"""Observations of the closed seed: enough for LanceDB to train an ANN index on."""
N_KILLED = 60
DAMAGES = ("remove", "zero", "half", "flip", "garbage")
LANCE = "vectors/memory_vectors.lance"
RESULTS: list[str] = []


def _text(i: int) -> str:
    return f"saw a red cup number {i} near the sink"


def _config(path: Path) -> MemoryConfig:
    return MemoryConfig(
        db_path=str(path),
        embedding_dim=DIM,
        ann_index_min_rows=256,
        vector_compact_every=4,
        vector_cleanup_after_seconds=3600.0,
    )


def _open(path: Path) -> SpatioTemporalMemory:
    return SpatioTemporalMemory(config=_config(path), embedding_provider=HashingEmbedder(DIM))


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("damage_seeds")
    closed = root / "closed"
    mem = _open(closed)
    mem.start_episode("tidy the kitchen")
    for i in range(N_CLOSED):
        mem.add(_text(i), x=float(i % 10), y=float(i // 10))
        if i % 100 == 99:
            mem.flush()
    mem.add_entity("red cup", x=1.0, y=2.0)
    mem.end_episode(consolidate=True, wait=True)
    mem.flush()
    mem.rebuild_places()
    mem.store.vectors.compact()
    assert mem.store.vectors.wait_for_index(120)
    mem.close()
    killed = run_killed_writer(root / "killed", N_KILLED, DIM)
    return {"closed": closed, "killed": killed}


def _first(root: Path, pattern: str) -> Path:
    found = sorted(root.glob(pattern))
    assert found, f"the seed has no file {pattern}: the matrix would not test it"
    return found[0]


FILE_KINDS: dict[str, tuple[str, str]] = {
    # kind: (seed, glob of the file damaged; the first in name order)
    "graph": ("closed", "graph.kuzu"),
    "graph_mark": ("closed", "graph_mark.json"),
    "manifest": ("closed", f"{LANCE}/_versions/*.manifest"),  # the latest sorts first
    "version_hint": ("closed", f"{LANCE}/_versions/latest_version_hint.json"),
    "transaction": ("closed", f"{LANCE}/_transactions/*.txn"),
    "fragment": ("closed", f"{LANCE}/data/*.lance"),
    "index_bitmap": ("closed", f"{LANCE}/_indices/*/bitmap_page_lookup.lance"),
    "index_btree": ("closed", f"{LANCE}/_indices/*/page_lookup.lance"),
    "index_fts": ("closed", f"{LANCE}/_indices/*/part_*_invert.lance"),
    "index_ann": ("closed", f"{LANCE}/_indices/*/auxiliary.idx"),
    "killed_wal": ("killed", "graph.kuzu.wal"),
    "killed_graph": ("killed", "graph.kuzu"),
    "killed_mark": ("killed", "graph_mark.json"),
    "killed_fragment": ("killed", f"{LANCE}/data/*.lance"),
    "killed_manifest": ("killed", f"{LANCE}/_versions/*.manifest"),
}


def damage(path: Path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "remove":
        path.unlink()
    elif kind == "zero":
        path.write_bytes(b"")
    elif kind == "half":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "flip":
        middle = bytearray(data)
        start = len(middle) // 2
        for at in range(start, min(len(middle), start + 16)):
            middle[at] ^= 0xFF
        path.write_bytes(bytes(middle))
    elif kind == "garbage":
        path.write_bytes(os.urandom(max(len(data), 64)))
    else:
        raise AssertionError(kind)


def _searchable(mem: SpatioTemporalMemory, sample: int = 25) -> tuple[int, list[str]]:
    """How many observations the graph holds, and those of them not searchable: every one
    must have a vector row, and a sample must come back first for their own text."""
    store = mem.store
    held = store.graph.query_arrow("vector_node_ids")
    kinds = zip(held["id"].to_pylist(), held["kind"].to_pylist(), strict=True)
    ids = [i for i, k in kinds if k == "observation"]
    indexed = set(store.vectors.all_ids())
    missing = [i for i in ids if i not in indexed]
    for observation in store.get_observations(ids[:: max(1, len(ids) // sample)]):
        if observation.text not in mem.semantic_search(observation.text, n_results=1):
            missing.append(observation.id)
    return len(ids), missing


def _read_only_reads(memory: Path) -> None:
    """The read-only surface (emem-graph stats, the explore graph) on the damaged memory:
    answers or raises an EmemGraphError, nothing else (it changes nothing to repair)."""
    with contextlib.suppress(EmemGraphError):
        memory_stats(memory)
    with contextlib.suppress(EmemGraphError), open_graph(memory) as graph:
        graph.query("node_counts")


def _matrix(full: bool) -> list[tuple[str, str]]:
    """The (file kind, damage) cases run: every pair in the long campaigns; by default a
    covering design, each file kind with two damages (the k-th kind takes DAMAGES[k % 5] and
    DAMAGES[(k + 2) % 5]), so each damage falls on six file kinds of both seeds."""
    if full:
        return [(kind, damage) for kind in FILE_KINDS for damage in DAMAGES]
    return [
        (kind, DAMAGES[(k + step) % len(DAMAGES)])
        for k, kind in enumerate(FILE_KINDS)
        for step in (0, 2)
    ]


MATRIX = _matrix(campaign.LONG)


@pytest.mark.parametrize(("file_kind", "damage_kind"), MATRIX)
def test_damaged_file(
    seeds: dict[str, Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    file_kind: str,
    damage_kind: str,
    summary: list[str],
) -> None:
    seed_name, pattern = FILE_KINDS[file_kind]
    memory = tmp_path / "mem"
    shutil.copytree(seeds[seed_name], memory)
    flushed = N_CLOSED if seed_name == "closed" else N_KILLED
    damage(_first(memory, pattern), damage_kind)
    caplog.set_level(logging.WARNING)
    case = f"{file_kind}/{damage_kind}"
    _read_only_reads(memory)
    try:
        mem = _open(memory)
    except EmemGraphError as exc:
        # (b) refused: one clear line saying what is damaged and what to do.
        message = str(exc)
        assert "\n" not in message and ("backup" in message or "damaged" in message), message
        assert file_kind in {"graph", "killed_graph"}, f"{case}: refused {exc!r}"
        RESULTS.append(f"{case} refused")
        return
    try:
        held, missing = _searchable(mem)
    finally:
        mem.close()
    health = read_health(memory)
    assert missing == [], f"{case}: {len(missing)} observations the graph holds not searchable"
    if health["vector_rebuilds"]:
        assert list(memory.glob("vectors.damaged-*")), f"{case}: the damaged table is gone"
        assert any("re-indexed" in r.getMessage() for r in caplog.records), case
    lost = flushed - held
    if lost:
        # The WAL lost flushed observations: reported, never silent.
        assert health["graph_losses"] == 1, f"{case}: {lost} flushed observations lost silently"
        assert any("lost" in r.getMessage() for r in caplog.records), case
    else:
        assert health["graph_losses"] == 0, f"{case}: a loss reported where none happened"
    # Opened again: stays repaired, nothing reported twice.
    caplog.clear()
    mem = _open(memory)
    try:
        held_again, missing_again = _searchable(mem)
    finally:
        mem.close()
    assert (held_again, missing_again) == (held, [])
    assert read_health(memory) == health, f"{case}: a second repair or report"
    stats = memory_stats(memory)
    assert stats.health["vector_rebuilds"] == health["vector_rebuilds"]
    assert stats.health["graph_losses"] == health["graph_losses"]
    RESULTS.append(
        f"{case} opened"
        + (" rebuilt" if health["vector_rebuilds"] else "")
        + (f" lost={lost} reported" if lost else "")
    )


def test_read_only_stats_on_damaged_vectors(seeds: dict[str, Path], tmp_path: Path) -> None:
    """emem-graph stats (read-only) cannot repair: a damaged vector table gives a clear
    EmemGraphError naming it; one read-write open repairs it, and stats count the repair."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    damage(_first(memory, f"{LANCE}/data/*.lance"), "garbage")
    with pytest.raises(EmemGraphError, match=r"vector table .* is damaged"):
        memory_stats(memory)
    _open(memory).close()
    stats = memory_stats(memory)
    assert stats.health["vector_rebuilds"] == 1
    assert sum(stats.vector_rows.values()) == N_CLOSED + 2  # observations, the gist, the entity


def test_legacy_memory_without_mark_gets_one(seeds: dict[str, Path], tmp_path: Path) -> None:
    """A memory from before the mark opens quietly and gets a mark of what it holds."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    (memory / "graph_mark.json").unlink()
    _open(memory).close()
    assert read_health(memory)["damage_reports"] == 0
    assert json.loads((memory / "graph_mark.json").read_text()) == {"observations": N_CLOSED}


def test_wal_loss_reported_without_mark(seeds: dict[str, Path], tmp_path: Path) -> None:
    """A memory from before the mark whose WAL was damaged: the vector table still holds the
    observations the graph dropped, so the loss is reported once (then the mark takes over)."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["killed"], memory)
    (memory / "graph_mark.json").unlink()
    damage(memory / "graph.kuzu.wal", "half")
    mem = _open(memory)
    try:
        held, missing = _searchable(mem)
    finally:
        mem.close()
    assert held < N_KILLED and missing == []
    assert read_health(memory)["graph_losses"] == 1
    _open(memory).close()
    assert read_health(memory)["graph_losses"] == 1


def test_damaged_health_record(seeds: dict[str, Path], tmp_path: Path) -> None:
    """A garbled health.json reads as empty (stats still answer) and the next report says its
    counts restarted."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    (memory / "health.json").write_bytes(os.urandom(100))
    assert memory_stats(memory).health["vector_rebuilds"] == 0
    damage(_first(memory, f"{LANCE}/data/*.lance"), "half")
    _open(memory).close()
    health = read_health(memory)
    assert health["vector_rebuilds"] == 1
    assert any("health.json was unreadable" in r["what"] for r in health["reports"])


def test_vector_directory_removed(seeds: dict[str, Path], tmp_path: Path) -> None:
    """The whole vectors directory gone (or moved away by hand): rebuilt from the graph."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    shutil.rmtree(memory / "vectors")
    mem = _open(memory)
    try:
        held, missing = _searchable(mem)
    finally:
        mem.close()
    assert (held, missing) == (N_CLOSED, [])
    assert read_health(memory)["vector_rebuilds"] == 1


def test_read_only_stats_name_a_missing_vector_table(
    seeds: dict[str, Path], tmp_path: Path
) -> None:
    """stats cannot rebuild a vector table that is gone (or a file in its place): it says so
    rather than counting 0 rows as if the memory held none."""
    for name, replace in [("removed", False), ("a file", True)]:
        memory = tmp_path / name
        shutil.copytree(seeds["closed"], memory)
        shutil.rmtree(memory / LANCE)
        if replace:
            (memory / LANCE).write_text("not a table")
        stats = memory_stats(memory)
        assert stats.vector_table_missing, name
        assert "vector table missing" in format_stats(stats)
    assert not memory_stats(seeds["closed"]).vector_table_missing


def test_a_directory_in_place_of_the_graph_log_is_refused_in_one_line(
    seeds: dict[str, Path], tmp_path: Path
) -> None:
    """The open copies the graph and its log to check them: a directory where the log should
    be is a StorageError naming it, not an IsADirectoryError."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    wal = memory / "graph.kuzu.wal"
    wal.unlink(missing_ok=True)
    wal.mkdir()
    with pytest.raises(StorageError, match=r"cannot copy .*graph\.kuzu\.wal"):
        _open(memory).close()


def test_unreadable_pending_vector_file(seeds: dict[str, Path], tmp_path: Path) -> None:
    """A garbled or cut pending-vector file is skipped (its nodes are re-embedded)."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    (memory / "pending_vectors").mkdir(exist_ok=True)
    (memory / "pending_vectors" / "a.npz").write_bytes(os.urandom(300))
    (memory / "pending_vectors" / "b.npz").write_bytes(b"PK\x03\x04" + os.urandom(40))
    _open(memory).close()


def test_damaged_while_open(seeds: dict[str, Path], tmp_path: Path) -> None:
    """A data file damaged under a running memory: a search answers or raises a clear
    EmemGraphError (never Lance's own error); the next open repairs it."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    mem = _open(memory)
    try:
        for path in (memory / LANCE / "data").glob("*.lance"):
            damage(path, "garbage")
        for i in range(0, N_CLOSED, 50):
            with contextlib.suppress(EmemGraphError):
                mem.semantic_search(_text(i), n_results=3)
    finally:
        mem.close()
    mem = _open(memory)
    try:
        assert _searchable(mem) == (N_CLOSED, [])
    finally:
        mem.close()
    assert read_health(memory)["vector_rebuilds"] == 1


def test_a_vector_row_whose_id_was_damaged_is_found_at_open_and_its_node_reindexed(
    seeds: dict[str, Path], tmp_path: Path
) -> None:
    """The row count stays right but one row's id names no node (what one flipped bit in a
    Lance data file did in a CI run of test_random_byte_flips): the open compares the ids,
    re-indexes the observation from the graph and reports it."""
    import lancedb

    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    mem = _open(memory)
    victim = next(iter(mem.store.index.records([mem.store.index.id_of(7)]).values()))
    mem.close()
    table = lancedb.connect(str(memory / "vectors")).open_table("memory_vectors")
    damaged_id = victim.id[:-1] + ("0" if victim.id[-1] != "0" else "1")
    table.update(where=f"id = '{victim.id}'", values={"id": damaged_id})
    mem = _open(memory)
    try:
        assert _searchable(mem) == (N_CLOSED, [])
        assert victim.text in mem.semantic_search(victim.text, n_results=1)
    finally:
        mem.close()
    assert read_health(memory)["vector_rebuilds"] == 1


@pytest.mark.parametrize("marker_at", [0, 5, 30])
def test_a_graph_text_damaged_into_invalid_utf8_is_refused_in_one_line(
    tmp_path: Path, marker_at: int
) -> None:
    """A bit flipped inside a stored text can leave bytes that are not UTF-8 (found by the
    random flips in CI: Arrow's UnicodeDecodeError escaped the open raw). The open refuses it
    with one DamagedMemoryError line; so do the graph-only surfaces (stats, the explore
    graph), never a raw error."""
    memory = tmp_path / "mem"
    marker = "a zebra-striped umbrella that marks this text for the damage test"
    with _open(memory) as mem:
        mem.add(marker, 1.0, 2.0)
        mem.add("a plain cup on the table", 1.5, 2.0)
    graph = memory / "graph.kuzu"
    raw = bytearray(graph.read_bytes())
    at = raw.find(marker.encode())
    assert at >= 0 and raw.count(marker.encode()) == 1, "the text is not stored as is"
    raw[at + marker_at] = 0xB5  # a continuation byte where none may stand
    graph.write_bytes(bytes(raw))
    with pytest.raises(DamagedMemoryError) as refused:
        _open(memory)
    message = str(refused.value)
    assert "\n" not in message and "damaged values" in message and "backup" in message
    _read_only_reads(memory)


def test_random_byte_flips(seeds: dict[str, Path], tmp_path: Path, scale) -> None:
    """Bytes flipped at random places of random files: never a raw exception, never a silent
    loss (CI: 10 flips; --long: 100)."""
    rng = random.Random(19)
    outcomes = {"opened": 0, "refused": 0}
    for case in range(100 if scale.long else 10):
        seed_name = rng.choice(["closed", "killed"])
        memory = tmp_path / f"mem{case}"
        shutil.copytree(seeds[seed_name], memory)
        files = sorted(p for p in memory.rglob("*") if p.is_file())
        target = rng.choice(files)
        data = bytearray(target.read_bytes())
        if data:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            target.write_bytes(bytes(data))
        try:
            mem = _open(memory)
        except EmemGraphError:
            outcomes["refused"] += 1
            continue
        try:
            held, missing = _searchable(mem, sample=5)
        finally:
            mem.close()
        flushed = N_CLOSED if seed_name == "closed" else N_KILLED
        assert missing == [], f"{target.name}: observations not searchable"
        assert held == flushed or read_health(memory)["graph_losses"] == 1, target.name
        outcomes["opened"] += 1
    RESULTS.append(f"random flips opened={outcomes['opened']} refused={outcomes['refused']}")


_FLIP_SEARCH = f"""
import importlib, os, signal, sys, time
engine = importlib.import_module(os.environ.get({ENGINE_ENV!r}) or {DEFAULT_ENGINE!r})
path, start, stop, patience = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
raw = bytearray(open(path, "rb").read())

def put(offset, value):
    with open(path, "r+b") as file:
        file.seek(offset)
        file.write(bytes([value]))

for offset in range(start, min(stop, len(raw))):
    put(offset, raw[offset] ^ 0xFF)
    pid = os.fork()
    if pid == 0:  # the open, in a process of its own: a crash ends only it
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            db = engine.Database(path, read_only=True)
            engine.Connection(db).execute("CALL show_tables() RETURN *").get_all()
        except BaseException:
            os._exit(1)
        os._exit(0)
    deadline = time.monotonic() + patience
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    if done[0] == 0:  # a slow failure, not a crash: stopped, the next byte
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    elif os.WIFSIGNALED(done[1]):
        print(offset)
        sys.exit(0)
    put(offset, raw[offset])
print(-1)
"""
"""Flips the graph file's bytes in [start, stop) one at a time and opens each in a forked
process with the run's engine (the variable --graph-engine sets, else the default engine),
until an open crashes: prints that offset (its flip left in the file), or -1. One interpreter
and one import for the whole search; no emem_graph imported."""


def _crashing_catalog_flip(graph: Path) -> int:
    """Flip catalog bytes of ``graph`` one at a time until the engine crashes opening it (a
    signal, not an error; about one byte in ten does, measured); the offset of the flip left in.

    Some flips make the open fail slowly instead (3-15 s, an error in the end): a first pass
    gives each open half a second and moves on, a second pass (reached only when the first finds
    nothing, e.g. on a machine too loaded for any open to end in time) waits for each."""
    raw = graph.read_bytes()
    catalog = struct.unpack_from("<I", raw, 12)[0] * 4096  # header: magic, version, catalog page
    for patience in ("0.5", "120"):
        run = subprocess.run(
            [sys.executable, "-c", _FLIP_SEARCH, str(graph), str(catalog), str(catalog + 4096),
             patience],
            capture_output=True,
            text=True,
            timeout=3600,
            check=True,
        )  # fmt: skip
        offset = int(run.stdout.split()[-1])
        if offset >= 0:
            return offset
    pytest.fail("no catalog byte flip crashed the engine: the probe is not exercised")


def test_engine_crash_on_open_is_refused(
    seeds: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A graph file Kuzu crashes on (SIGSEGV/SIGABRT inside kuzu.Database, which no Python code
    survives) is opened in a child process first: DamagedMemoryError, and this process lives."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["closed"], memory)
    _crashing_catalog_flip(memory / "graph.kuzu")
    for _ in range(2):  # refused every time, the file left as it is
        with pytest.raises(DamagedMemoryError, match="crashed opening it"):
            _open(memory)
    with pytest.raises(DamagedMemoryError, match="crashed opening it"):
        memory_stats(memory)
    RESULTS.append("engine crash on open refused")


def test_clean_close_seals_and_skips_the_probe(
    seeds: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A clean close seals the graph; the next open skips the child; a kill or any change to
    the file breaks the seal and the child runs again."""
    memory = tmp_path / "mem"
    shutil.copytree(seeds["killed"], memory)
    caplog.set_level(logging.DEBUG, logger="emem_graph.storage")
    _open(memory).close()  # the killed seed: its WAL is replayed in the child first
    assert "child process first" in caplog.text
    assert probe.is_sealed(memory / "graph.kuzu")
    caplog.clear()
    _open(memory).close()
    assert "child process first" not in caplog.text
    graph = memory / "graph.kuzu"
    os.utime(graph, ns=(graph.stat().st_atime_ns, graph.stat().st_mtime_ns + 1))
    assert not probe.is_sealed(graph)
    mem = _open(memory)
    assert not probe.seal_path(graph).exists()  # broken while open read-write
    mem.close()
    assert "child process first" in caplog.text


def test_summary(summary: list[str]) -> None:
    """One line of figures for the reliability summary (runs after the matrix)."""
    flips = next((r for r in RESULTS if r.startswith("random flips")), "random flips not run")
    cases = [r for r in RESULTS if not r.startswith("random flips")]
    opened = sum(" opened" in r for r in cases)
    rebuilt = sum(" rebuilt" in r for r in cases)
    refused = sum(" refused" in r for r in cases)
    reported = sum(" reported" in r for r in cases)
    summary.append(
        f"damage matrix: {len(cases)} cases ({len(FILE_KINDS)} file kinds, {len(DAMAGES)} "
        f"damages, {len(MATRIX) // len(FILE_KINDS)} damages per kind), opened {opened} "
        f"({rebuilt} rebuilt the vectors, {reported} reported a WAL loss), refused clearly "
        f"{refused}, silent losses 0; {flips}"
    )


@pytest.mark.parametrize(
    "raised", [IndexError("unordered_map::at"), ValueError("bad"), KeyError(3)]
)
def test_any_engine_error_at_open_is_a_damaged_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: Exception
) -> None:
    """pybind11 turns Kuzu's std::out_of_range into IndexError ("unordered_map::at", seen from a
    flipped catalog byte in CI): every engine error at open is one DamagedMemoryError line."""
    import importlib

    from emem_graph.errors import DamagedMemoryError
    from emem_graph.storage.graph import GraphDB, resolve_engine

    kuzu = importlib.import_module(resolve_engine())  # the run's engine, kuzu or ladybug

    def broken(*_args: object, **_kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(kuzu, "Database", broken)
    with pytest.raises(DamagedMemoryError) as refused:
        GraphDB(tmp_path / "g.kuzu")
    assert "\n" not in str(refused.value) and "restore" in str(refused.value)
