"""Durability under kill -9: a writer process (crash_writer.py) ingests into real Kuzu + LanceDB
files with the real MiniLM model and is SIGKILLed at random moments, some of them inside a
flush. After every kill the memory must reopen with every confirmed observation in the graph, in
the vector table and findable by a prefiltered vector search, no vector row without its node,
and no episode left active. The same directory is used for every round, so it accumulates.

EMEM_CRASH_SEED=<n> replays a run; EMEM_CRASH_KILLS=<n> changes the number of kills (5 by
default, 10 in the long campaigns); EMEM_CREATE_KILLS=<n> those of the creation test (6, 12).
"""

from __future__ import annotations

import os
import queue
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

import campaign
import pytest

from emem_graph import MemoryConfig, SpatioTemporalMemory, VectorFilter

WRITER = Path(__file__).with_name("crash_writer.py")
KILLS = int(os.environ.get("EMEM_CRASH_KILLS") or campaign.repeat(5, 10))
SEARCH_SAMPLE = 40
FINAL_SEARCH_SAMPLE = 300
"""Every id is searched for after the kill that follows its confirmation; older ids are searched
again by sample (LanceDB answers a prefiltered search in ~15 ms here), a larger one at the end.
Presence of every confirmed id in both stores is checked after every kill."""
LINE_TIMEOUT = 120.0
WARM_AHEAD = 2
"""Writers started ahead of the one being killed (each spends seconds loading the model)."""
CREATE_KILLS = int(os.environ.get("EMEM_CREATE_KILLS") or campaign.repeat(6, 12))
"""Kills of the creation test: spread evenly over the time creating takes, one per slice."""


class Writer:
    """One crash_writer.py process; its stdout lines arrive on a queue with their arrival time."""

    def __init__(self, db_path: Path, seed: int, log_path: Path, *mode: str) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(db_path), str(seed), *mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        self.last_line = "(nothing)"
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            # A line cut by the kill has no newline: the child never finished saying it.
            if line.endswith("\n"):
                self.lines.put((time.monotonic(), line.rstrip("\n")))
        self.lines.put((time.monotonic(), None))

    def next_line(self, timeout: float = LINE_TIMEOUT) -> tuple[float, str]:
        try:
            at, line = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"writer said nothing for {timeout} s\n{self.stderr_tail()}")
        if line is None:
            self.fail_exited()
        self.last_line = line
        return at, line

    def fail_exited(self) -> NoReturn:
        """Fail saying where the child crashed: the short summary of a CI run shows only the
        first line, so the innermost frames of its faulthandler dump go there."""
        rc = self.proc.wait()
        tail = self.stderr_tail()
        pytest.fail(
            f"writer exited by itself (rc={rc}) after {self.last_line.split(' ')[0]!r}; "
            f"crashed in: {crash_frames(tail)}\n{tail}"
        )

    def expect(self, word: str) -> None:
        _, line = self.next_line()
        assert line == word, f"expected {word!r} from the writer, got {line!r}"

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("GO\n")
        self.proc.stdin.flush()

    def kill(self) -> list[tuple[float, str]]:
        """SIGKILL the process; returns the complete lines it wrote before dying."""
        self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=30)
        self._log.close()
        rest = []
        while not self.lines.empty():
            at, line = self.lines.get_nowait()
            if line is not None:
                rest.append((at, line))
        return rest

    def stderr_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


def crash_frames(stderr: str, count: int = 4) -> str:
    """The innermost frames of the crashing thread in a faulthandler dump, on one line (with
    the other threads' innermost frame when the crash was in a thread running no Python)."""
    stacks: list[tuple[str, list[str]]] = []
    for line in stderr.splitlines():
        if line.startswith(("Current thread", "Thread 0x")):
            stacks.append((line.split(" (")[0], []))
        elif stacks and (match := re.match(r'\s+File "(.+)", line (\d+) in (\S+)', line)):
            stacks[-1][1].append(f"{Path(match[1]).name}:{match[2]} {match[3]}")
    current = [frames for name, frames in stacks if name.startswith("Current thread")]
    if not current:
        return "no faulthandler dump in the log"
    if current[-1]:
        return " <- ".join(current[-1][:count])
    others = "; ".join(frames[0] for name, frames in stacks if frames)
    return f"a thread running no Python; other threads at: {others or 'none'}"


class Ledger:
    """What the writers confirmed: ids in order, and how long their flushes took."""

    def __init__(self) -> None:
        self.confirmed: list[str] = []
        self.flush_seconds: list[float] = []
        self._flushing_at: float | None = None

    def take(self, at: float, line: str) -> list[str]:
        if line == "FLUSHING":
            self._flushing_at = at
            return []
        word, *ids = line.split()
        assert word == "FLUSHED", f"unexpected writer line {line!r}"
        if self._flushing_at is not None:
            self.flush_seconds.append(at - self._flushing_at)
            self._flushing_at = None
        self.confirmed.extend(ids)
        return ids

    def typical_flush(self) -> float:
        return statistics.median(self.flush_seconds[-20:]) if self.flush_seconds else 0.3


def ingest_until_kill(
    writer: Writer, ledger: Ledger, rng: random.Random, in_flush: bool, at_end: bool = False
) -> list[str]:
    """Let the writer ingest, then kill it: inside its k-th flush (after a random part of a
    typical flush; with ``at_end``, in its last part, where the storage writes are) or at a
    random moment. Returns the ids confirmed in this round."""
    new: list[str] = []
    if in_flush:
        wanted, seen = rng.randint(1, 5), 0
        while seen < wanted:
            at, line = writer.next_line()
            new += ledger.take(at, line)
            seen += line == "FLUSHING"
        # The storage writes come at the end of a flush (after embedding): every other kill
        # inside a flush aims there, so even a short run kills both while embedding and there.
        typical = ledger.typical_flush()
        share = rng.uniform(0.6, 1.1) if at_end else rng.uniform(0.0, 1.0)
        time.sleep(share * typical)
    else:
        deadline = time.monotonic() + rng.uniform(0.2, 5.0)
        while (left := deadline - time.monotonic()) > 0:
            try:
                at, line = writer.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                writer.fail_exited()
            writer.last_line = line
            new += ledger.take(at, line)
    for at, line in writer.kill():
        new += ledger.take(at, line)
    return new


def check_memory(
    mem: SpatioTemporalMemory,
    confirmed: list[str],
    search_ids: list[str],
    context: str,
) -> None:
    store = mem.store
    assert store.active_episode_ids() == [], f"episode left active after reopen ({context})"

    found = {o.id for o in store.get_observations(confirmed)}
    lost = [i for i in confirmed if i not in found]
    assert not lost, f"{len(lost)} confirmed observations missing from the graph ({context})"
    indexed = store.vectors.existing_ids(confirmed)
    unindexed = [i for i in confirmed if i not in indexed]
    assert not unindexed, f"{len(unindexed)} confirmed ids missing from LanceDB ({context})"

    graph_ids = [r["id"] for r in store.graph.query_text("MATCH (o:Observation) RETURN o.id AS id")]
    vector_ids = store.vectors.all_ids(VectorFilter(kinds=("observation",)))
    assert len(vector_ids) == len(set(vector_ids)), f"duplicate vector rows ({context})"
    orphans = set(vector_ids) - set(graph_ids)
    assert not orphans, f"{len(orphans)} vector rows point at no node ({context})"
    missing = set(graph_ids) - set(vector_ids)
    assert not missing, f"{len(missing)} graph observations have no vector ({context})"
    assert store.counts()["pending_vectors"] == 0, f"journal not drained ({context})"

    members = store.graph.query_text(
        "MATCH (o:Observation) WHERE o.episode_id IS NOT NULL RETURN count(*) AS n"
    )[0]["n"]
    linked = store.graph.query_text(
        "MATCH (o:Observation)-[:BELONGS_TO]->(e:Episode) WHERE e.id = o.episode_id "
        "RETURN count(*) AS n"
    )[0]["n"]
    assert members == linked, f"observations without their BELONGS_TO edge ({context})"

    observations = store.get_observations(search_ids)
    vectors = mem.embed([o.text for o in observations])
    for obs, vector in zip(observations, vectors, strict=True):
        hits = store.nearest(vector, 5, VectorFilter(center=(obs.x, obs.y), radius=1e-3))
        scores = {hit.id: hit.score for hit, _ in hits}
        assert obs.id in scores, f"{obs.id} ({obs.text!r}) not found by search ({context})"
        assert scores[obs.id] > 0.99, f"{obs.id} has a vector of another text ({context})"


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_nothing_confirmed(tmp_path: Path, minilm) -> None:
    seed = int(os.environ.get("EMEM_CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"crash test seed={seed} (EMEM_CRASH_SEED={seed} replays it)")
    rng = random.Random(seed)
    db = tmp_path / "mem"
    ledger = Ledger()
    modes = [True] * (KILLS // 2) + [False] * (KILLS - KILLS // 2)
    rng.shuffle(modes)
    seeds = [rng.randrange(2**32) for _ in modes]
    started = time.monotonic()
    writers: list[Writer] = []
    kills = in_flush_kills = 0
    try:
        for round_no, in_flush in enumerate(modes):
            # Loading the model takes seconds: keep the next writers loading while this one works.
            while len(writers) < min(len(modes), round_no + 1 + WARM_AHEAD):
                log = tmp_path / f"writer-{len(writers)}.log"
                writers.append(Writer(db, seeds[len(writers)], log))
            writer = writers[round_no]
            writer.expect("LOADED")
            writer.go()
            writer.expect("READY")
            new = ingest_until_kill(writer, ledger, rng, in_flush, at_end=in_flush_kills % 2 == 1)
            kills += 1
            in_flush_kills += in_flush
            context = (
                f"seed={seed}, kill {kills}, {'inside a flush' if in_flush else 'at random'}"
                f"\nwriter stderr:\n{writer.stderr_tail()}"
            )
            older = ledger.confirmed[: len(ledger.confirmed) - len(new)]
            wanted = FINAL_SEARCH_SAMPLE if round_no + 1 == len(modes) else SEARCH_SAMPLE
            sample = rng.sample(older, min(wanted, len(older)))
            mem = SpatioTemporalMemory(
                config=MemoryConfig(db_path=str(db)), embedding_provider=minilm
            )
            try:
                check_memory(mem, ledger.confirmed, new + sample, context)
            finally:
                mem.close()
    finally:
        for writer in writers:
            if writer.proc.poll() is None:
                writer.kill()
    elapsed = time.monotonic() - started
    print(
        f"crash test: {kills} kills ({in_flush_kills} inside a flush), "
        f"{len(ledger.confirmed)} confirmed observations, "
        f"{len(ledger.flush_seconds)} flushes, {elapsed:.0f} s, seed={seed}"
    )
    assert kills >= min(KILLS, 10)
    assert ledger.confirmed, "no flush was ever confirmed"


@pytest.mark.slow
def test_kill_9_while_creating_a_memory_leaves_it_openable(tmp_path: Path, minilm) -> None:
    """A robot switched off while it creates its memory (first boot) must boot next time: the
    kill points are spread over the time creating takes here, each on a new directory."""
    seed = int(os.environ.get("EMEM_CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"creation crash test seed={seed}")
    rng = random.Random(seed)

    def creator(number: int) -> Writer:
        db = tmp_path / f"mem-{number}"
        return Writer(db, 0, tmp_path / f"creator-{number}.log", "create")

    timing = creator(-1)
    timing.expect("LOADED")
    started = time.monotonic()
    timing.go()
    timing.expect("READY")
    creating = time.monotonic() - started
    timing.kill()

    delays = [(k + rng.random()) / CREATE_KILLS * 1.2 * creating for k in range(CREATE_KILLS)]
    creators: list[Writer] = []
    try:
        for number, delay in enumerate(delays):
            while len(creators) < min(len(delays), number + 1 + WARM_AHEAD):
                creators.append(creator(len(creators)))
            writer = creators[number]
            writer.expect("LOADED")
            writer.go()
            time.sleep(delay)
            writer.kill()
            context = f"seed={seed}, killed {delay:.3f} s into a {creating:.3f} s creation"
            db = tmp_path / f"mem-{number}"
            mem = SpatioTemporalMemory(
                config=MemoryConfig(db_path=str(db)), embedding_provider=minilm
            )
            try:
                oid = mem.add("green plant by the window", 1.0, 2.0)
                hits = mem.store.nearest(
                    mem.embed(["green plant by the window"])[0], 1, VectorFilter()
                )
                assert [hit.id for hit, _ in hits] == [oid], context
            finally:
                mem.close()
    finally:
        for writer in creators:
            if writer.proc.poll() is None:
                writer.kill()
    print(f"creation crash test: {CREATE_KILLS} kills over {creating:.3f} s, seed={seed}")
