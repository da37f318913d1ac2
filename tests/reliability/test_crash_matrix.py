"""Crash matrix: a robot workload (ingest with MiniLM embeddings, episodes consolidated into
gists, entity merges, time-window consolidation, archival, LanceDB compaction) is killed with
SIGKILL inside each kind of write, over and over, on one memory directory that accumulates.

The workload runs in crash_workload.py (a fork server: the model is loaded once, each run is a
fork). Kill points are hooks that process puts into its own copy of the library (see
crash_workload.py): inside the graph batch, during the COMMIT, between the graph commit and the
LanceDB write, inside a LanceDB write, inside compaction, consolidation, entity merge and
archival, or at a random moment. After every kill the memory is reopened in this process and
must hold:

- every observation acknowledged as flushed, in the graph; searchable by its own text unless it
  was archived (then its gist is);
- every acknowledged entity and every gist an acknowledged episode end returned;
- exactly one vector row per node that should have one (observations not archived, gists,
  entities) and none for any other id; the vector's tier column equal to the graph's;
- an empty vector journal, no episode active, none left waiting for consolidation;
- gists consistent with their SUMMARIZES edges (source_observation_count edges each; an
  observation is long_term or archived exactly when a gist summarizes it).

EMEM_MATRIX_SEED=<n> replays a run; EMEM_MATRIX_KILLS=<n> sets the number of kills.
"""

from __future__ import annotations

import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emem_graph import MemoryConfig, SpatioTemporalMemory, VectorFilter
from emem_graph.consolidation import reads

WORKLOAD = Path(__file__).with_name("crash_workload.py")
LINE_TIMEOUT = 180.0
SEARCH_NEW = 8
SEARCH_OLD = 5

# How many times each point is passed before the kill (drawn from 1..n), and the delay from
# reaching it to the SIGKILL: 0 is exact (at that point), else a timer that lands inside the
# operation (Kuzu and LanceDB release the GIL).
NTH = {
    "graph_batch": 4,
    "graph_commit": 12,
    "between": 5,
    "vector_batch": 8,
    "compaction": 3,
    "consolidation": 2,
    "entity_merge": 3,
    "archival": 2,
    "anywhere": 1,
}
DELAY_MAX = {
    "graph_batch": 0.0,
    "graph_commit": 0.004,
    "between": 0.0,
    "vector_batch": 0.05,
    "compaction": 0.4,
    "consolidation": 0.6,
    "entity_merge": 0.2,
    "archival": 0.1,
    "anywhere": 2.5,
}


class Server:
    """The crash_workload.py process; its stdout lines arrive on a queue."""

    def __init__(self, log_path: Path) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKLOAD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.endswith("\n"):
                self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_line(self) -> str:
        try:
            line = self.lines.get(timeout=LINE_TIMEOUT)
        except queue.Empty:
            pytest.fail(f"the workload said nothing for {LINE_TIMEOUT} s\n{self.stderr_tail()}")
        if line is None:
            pytest.fail(f"the workload server exited\n{self.stderr_tail()}")
        return line

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def stderr_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


@dataclass
class Ledger:
    """What the workloads acknowledged, over every run."""

    observations: list[str] = field(default_factory=list)
    entities: set[str] = field(default_factory=set)
    gists: set[str] = field(default_factory=set)

    def take(self, line: str) -> list[str]:
        word, *ids = line.split()
        if word == "FLUSHED":
            self.observations.extend(ids)
            return ids
        if word == "ENTITY":
            self.entities.update(ids)
        elif word == "EPISODE":
            self.gists.update(ids[1:])
        return []


def run_once(server: Server, ledger: Ledger, command: str) -> tuple[int, bool, list[str]]:
    """Send one RUN; returns the exit code, whether the kill point was reached, new ids."""
    server.send(command)
    new: list[str] = []
    armed = False
    while True:
        line = server.next_line()
        if line.startswith("EXIT"):
            return int(line.split()[1]), armed, new
        if line == "ARMED":
            armed = True
        elif line not in ("READY", "DONE"):
            new += ledger.take(line)


def one_column(mem: SpatioTemporalMemory, cypher: str) -> list:
    return [next(iter(r.values())) for r in mem._store.graph.query_text(cypher)]


def check_memory(
    mem: SpatioTemporalMemory, ledger: Ledger, search_ids: list[str], context: str
) -> None:
    store = mem._store
    assert store.active_episode_ids() == [], f"an episode is still active ({context})"
    # Recovery queued the consolidation of episodes a kill cut short: let it finish.
    mem.consolidation.worker.submit("drain", lambda: None).result(timeout=300)
    assert reads.pending_episodes(store) == [], f"episode left unconsolidated ({context})"
    assert mem.consolidation.worker.failures == 0, f"a consolidation job failed ({context})"

    rows = store.graph.query_text(
        "MATCH (o:Observation) RETURN o.id AS id, o.tier AS tier, o.text AS text"
    )
    tier = {r["id"]: r["tier"] for r in rows}
    lost = [i for i in ledger.observations if i not in tier]
    assert not lost, f"{len(lost)} acknowledged observations lost ({context})"
    assert all(r["text"] is None for r in rows if r["tier"] == "archived"), context
    gists = set(one_column(mem, "MATCH (g:Gist) RETURN g.id"))
    entities = set(one_column(mem, "MATCH (e:Entity) RETURN e.id"))
    assert ledger.gists <= gists, f"acknowledged gists lost ({context})"
    assert ledger.entities <= entities, f"acknowledged entities lost ({context})"

    # One vector per node that should have one, none for anything else.
    assert store.counts()["pending_vectors"] == 0, f"vector journal not drained ({context})"
    vector_ids = store.vectors.all_ids()
    duplicates = [i for i, n in Counter(vector_ids).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} ids with several vector rows ({context})"
    should = {i for i, t in tier.items() if t != "archived"} | gists | entities
    orphans = set(vector_ids) - should
    assert not orphans, f"{len(orphans)} vectors without a node ({context})"
    missing = should - set(vector_ids)
    assert not missing, f"{len(missing)} nodes without their vector ({context})"
    for name in ("short_term", "long_term"):
        in_vectors = set(store.vectors.all_ids(VectorFilter(kinds=("observation",), tiers=(name,))))
        in_graph = {i for i, t in tier.items() if t == name}
        assert in_vectors == in_graph, f"vector tier column differs for {name} ({context})"

    # Gists and their SUMMARIZES edges.
    for row in store.graph.query_text(
        "MATCH (g:Gist) OPTIONAL MATCH (g)-[:SUMMARIZES]->(o:Observation) "
        "RETURN g.id AS id, g.source_observation_count AS n, count(o) AS edges"
    ):
        assert row["edges"] >= 1, f"gist {row['id']} summarizes nothing ({context})"
        assert row["edges"] == row["n"], f"gist {row['id']} count != edges ({context})"
    summarized = set(one_column(mem, "MATCH (:Gist)-[:SUMMARIZES]->(o:Observation) RETURN o.id"))
    promoted = {i for i, t in tier.items() if t in ("long_term", "archived")}
    assert summarized == promoted, (
        f"{len(summarized - promoted)} summarized but short_term, "
        f"{len(promoted - summarized)} long_term/archived without a gist ({context})"
    )
    twice = one_column(
        mem,
        "MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation) WITH o, count(g) AS n WHERE n > 1 "
        "RETURN o.id",
    )
    assert not twice, f"{len(twice)} observations summarized twice ({context})"

    # Searchable: by its own text, or (archived) through its gist.
    observations = store.get_observations([i for i in search_ids if tier.get(i) != "archived"])
    if observations:
        vectors = mem.embed([o.text for o in observations])
        # Body-state readings all sit at the origin and repeat their text ("battery at 51
        # percent"): identical vectors at one point tie at 1.0, so ask for all of them.
        same = Counter(
            (row["text"], row["x"], row["y"])
            for row in store.graph.query_text(
                "MATCH (o:Observation) RETURN o.text AS text, o.x AS x, o.y AS y"
            )
        )
        for obs, vector in zip(observations, vectors, strict=True):
            n = 5 + same[(obs.text, obs.x, obs.y)]
            hits = store.nearest(vector, n, VectorFilter(center=(obs.x, obs.y), radius=1e-3))
            scores = {hit.id: hit.score for hit, _ in hits}
            assert scores.get(obs.id, 0.0) > 0.99, f"{obs.id} not found by search ({context})"
    archived = [i for i in search_ids if tier.get(i) == "archived"][:5]
    for oid in archived:
        gist = store.graph.query_text(
            "MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation {id: $id}) RETURN g.text AS text, "
            "g.id AS id",
            {"id": oid},
        )[0]
        hits = store.nearest(mem.embed([gist["text"]])[0], 5, VectorFilter(kinds=("gist",)))
        assert gist["id"] in {h.id for h, _ in hits}, f"gist of archived {oid} unfound ({context})"


@pytest.mark.slow
def test_sigkill_inside_every_kind_of_write_loses_nothing_acknowledged(
    tmp_path: Path, minilm, scale, summary
) -> None:
    seed = int(os.environ.get("EMEM_MATRIX_SEED") or random.SystemRandom().randrange(2**32))
    print(f"crash matrix seed={seed} (EMEM_MATRIX_SEED={seed} replays it)")
    rng = random.Random(seed)
    db = tmp_path / "mem"
    ledger = Ledger()
    points = list(NTH)
    order: list[str] = []
    kills: Counter[str] = Counter()
    unreached: Counter[str] = Counter()
    runs = 0
    started = time.monotonic()
    server = Server(tmp_path / "workload.log")
    try:
        assert server.next_line() == "LOADED"
        while sum(kills.values()) < scale.kills:
            runs += 1
            assert runs <= 3 * scale.kills, f"kill points too rarely reached: {unreached}"
            if not order:
                order = points[:]
                rng.shuffle(order)
            point = order.pop()
            nth = rng.randint(1, NTH[point])
            delay = 0.0 if rng.random() < 0.3 else rng.uniform(0.0, DELAY_MAX[point])
            run_seed = rng.randrange(2**32)
            command = f"RUN {db} {run_seed} {point} {nth} {delay:.6f}"
            code, armed, new = run_once(server, ledger, command)
            if code == 3:
                pytest.fail(f"the workload raised ({command})\n{server.stderr_tail()}")
            if code == -9:
                kills[point] += 1
            else:
                assert code == 0 and not armed, (
                    f"workload exit {code} ({command})\n{server.stderr_tail()}"
                )
                unreached[point] += 1
            context = f"seed={seed}, run {runs}: {command}, exit {code}"
            older = ledger.observations[: len(ledger.observations) - len(new)]
            sample = rng.sample(new, min(SEARCH_NEW, len(new)))
            sample += rng.sample(older, min(SEARCH_OLD, len(older)))
            mem = SpatioTemporalMemory(
                config=MemoryConfig(db_path=str(db), maintenance_interval=None),
                embedding_provider=minilm,
            )
            try:
                check_memory(mem, ledger, sample, context)
            finally:
                mem.close()
    finally:
        server.stop()
    elapsed = time.monotonic() - started
    total = sum(kills.values())
    per_point = ", ".join(f"{p} {kills[p]}" for p in points)
    line = (
        f"crash matrix ({scale.label()}): {total} SIGKILLs survived ({per_point}); "
        f"{len(ledger.observations)} acknowledged observations, {len(ledger.entities)} "
        f"entities, {len(ledger.gists)} gists, lost 0; {runs} runs, {elapsed:.0f} s, seed={seed}"
    )
    print(line)
    summary.append(line)
    assert total >= scale.kills
    assert all(kills[p] for p in points), f"a kill point was never hit: {kills}"
