"""Child process of test_crash_matrix.py: a fork server that runs a robot workload and dies by
SIGKILL at a chosen kill point.

Usage: python crash_workload.py

It imports emem_graph and loads the real all-MiniLM-L6-v2 model once, says ``LOADED``, then reads
commands on stdin, one per line::

    RUN <db_path> <seed> <point> <nth> <delay>

For each it forks a workload process (so a kill costs a fork, not a Python start and a model
load). The workload arms the kill point: on the ``nth`` time the program reaches ``point`` it
sends itself SIGKILL, at once when ``delay`` is 0, else from a timer thread ``delay`` seconds
later while the operation goes on (Kuzu and LanceDB release the GIL, so the timer fires inside
the write). Kill points:

    graph_batch   inside the graph transaction that writes an observation batch (before COMMIT)
    graph_commit  during the COMMIT of a graph transaction (timer started just before it)
    between       after the graph commit, before the LanceDB write of the same batch
    vector_batch  inside a LanceDB write (add, merge-insert, update, delete)
    compaction    inside a LanceDB optimize (merge, index update, cleanup of old versions)
    consolidation inside an episode's consolidation (gist texts, embedding, graph, vectors)
    entity_merge  inside an entity merge (add_entity or extraction)
    archival      inside archival of long-term observations
    anywhere      a timer started when the workload starts

The workload's own protocol lines (one ``os.write`` each, so a kill never leaves half a line)::

    READY                        the memory is open
    FLUSHED <id> ...             flush() returned: these observations are durable
    ENTITY <id>                  add_entity() and flush() returned: the entity is durable
    EPISODE <id> <gist id> ...   end_episode(wait=True) returned: the gists are durable
    ARMED                        the kill point was reached; SIGKILL is on its way
    DONE                         the workload ran out of rounds without reaching the point

The server then prints ``EXIT <returncode>`` (``-9`` for SIGKILL) and waits for the next command.
Diagnostics go to stderr.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import random
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

POINTS = (
    "graph_batch",
    "graph_commit",
    "between",
    "vector_batch",
    "compaction",
    "consolidation",
    "entity_merge",
    "archival",
    "anywhere",
)
COLORS = ("red", "blue", "green", "yellow", "black", "white")
THINGS = ("chair", "cup", "door", "table", "person", "box", "plant", "laptop", "bottle")
PLACES = ("door", "window", "kitchen", "sofa", "desk", "shelf")
ROUNDS = 40
HANG_SECONDS = 90.0


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillPoint:
    """Counts arrivals at one named point and kills the process at the nth."""

    def __init__(self, point: str, nth: int, delay: float) -> None:
        self.point = point
        self.nth = nth
        self.delay = delay
        self.seen = 0
        self._lock = threading.Lock()

    def reached(self, point: str) -> None:
        if point != self.point:
            return
        with self._lock:
            self.seen += 1
            if self.seen != self.nth:
                return
        say("ARMED")
        if self.delay <= 0:
            die()
        threading.Timer(self.delay, die).start()


def wrap(owner: Any, name: str, before: Callable[[], None]) -> None:
    """Call ``before`` each time ``owner.name`` is called, then the original."""
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        before()
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def install(kill: KillPoint) -> None:
    """Put the kill point into the library's write paths (this process only)."""
    from emem_graph.consolidation import entities, episodes, tiers
    from emem_graph.storage import graph, store, vectors

    # Inside the observation batch's transaction: after its statements ran, before COMMIT.
    original_create = store.MemoryStore._create_observations

    def create(tx: Any, rows: list[dict[str, Any]]) -> None:
        original_create(tx, rows)
        kill.reached("graph_batch")

    store.MemoryStore._create_observations = staticmethod(create)  # type: ignore[method-assign]

    original_write = graph.GraphDB.write

    @contextlib.contextmanager
    def write(self: Any) -> Iterator[Any]:
        with original_write(self) as tx:
            yield tx
            # The body is done; the timer (if any) runs into the COMMIT that follows.
            kill.reached("graph_commit")

    graph.GraphDB.write = write  # type: ignore[method-assign]

    wrap(store.MemoryStore, "_index", lambda: kill.reached("between"))
    for name in ("add", "upsert", "delete", "set_tier"):
        wrap(vectors.VectorStore, name, lambda: kill.reached("vector_batch"))
    wrap(vectors.VectorStore, "compact", lambda: kill.reached("compaction"))
    wrap(episodes.EpisodeConsolidator, "consolidate", lambda: kill.reached("consolidation"))
    wrap(entities.EntityResolver, "resolve", lambda: kill.reached("entity_merge"))
    original_archive = tiers.archive

    def archive(*args: Any, **kwargs: Any) -> int:
        kill.reached("archival")
        return original_archive(*args, **kwargs)

    tiers.archive = archive  # type: ignore[assignment]  (the engine calls tiers.archive)


def workload(embedder: Any, db_path: str, seed: int, point: str, nth: int, delay: float) -> None:
    """Ingest, episodes with consolidation, entity merges, archival and compaction, in rounds."""
    from emem_graph import MemoryConfig, SpatioTemporalMemory

    rng = random.Random(seed)
    kill = KillPoint(point, nth, delay)
    install(kill)
    if point == "anywhere":
        kill.reached("anywhere")
    clock = [time.time()]
    config = MemoryConfig(
        db_path=db_path,
        flush_batch_size=rng.randint(5, 15),
        flush_interval=600.0,  # batches by size (the clock jumps seconds per add)
        vector_compact_every=rng.randint(2, 6),
        vector_cleanup_after_seconds=0.0,
        consolidation_window=60.0,
        archive_after_seconds=120.0,
        entity_extract_flush_interval=2,
        maintenance_interval=None,
    )
    mem = SpatioTemporalMemory(
        config=config, embedding_provider=embedder, get_current_time=lambda: clock[0]
    )
    say("READY")
    for _ in range(ROUNDS):
        mem.start_episode(f"patrol {rng.randrange(1000)}")
        unconfirmed: list[str] = []
        cx, cy = rng.uniform(-50.0, 50.0), rng.uniform(-50.0, 50.0)
        for _ in range(rng.randint(4, 12)):
            clock[0] += rng.uniform(0.5, 5.0)
            x, y = cx + rng.uniform(-3.0, 3.0), cy + rng.uniform(-3.0, 3.0)
            roll = rng.random()
            if roll < 0.1:
                oid = mem.add_body_state(f"battery at {rng.randrange(100)} percent", "battery")
            elif roll < 0.4:
                counts = ", ".join(f"{rng.randint(1, 3)} {rng.choice(THINGS)}" for _ in range(2))
                oid = mem.add(counts, x, y, layer_name="detections")
            else:
                text = (
                    f"a {rng.choice(COLORS)} {rng.choice(THINGS)} near the "
                    f"{rng.choice(PLACES)} {rng.randrange(100000)}"
                )
                oid = mem.add(text, x, y, layer_name="camera")
            unconfirmed.append(oid)
        mem.flush()
        say("FLUSHED " + " ".join(unconfirmed))
        if rng.random() < 0.5:
            name = f"{rng.choice(COLORS)} {rng.choice(THINGS)}"
            entity = mem.add_entity(name, cx + rng.uniform(-1, 1), cy + rng.uniform(-1, 1))
            mem.flush()  # add_entity stages the sighting; flush() makes it durable
            say(f"ENTITY {entity}")
        # Outside episodes too, so that time-window consolidation has work.
        if rng.random() < 0.3:
            mem.end_episode(consolidate=True, wait=True)
            loose = [
                mem.add(f"a {rng.choice(THINGS)} on the floor {k}", cx + k * 0.1, cy)
                for k in range(rng.randint(3, 6))
            ]
            mem.flush()
            say("FLUSHED " + " ".join(loose))
            clock[0] += 90.0
            mem.consolidate_time_window()
            continue
        episode = mem.active_episode_id
        wait = rng.random() < 0.7
        mem.end_episode(consolidate=True, wait=wait)
        if wait:
            gists = mem.store.graph.query_text(
                "MATCH (g:Gist) WHERE g.episode_id = $e RETURN g.id AS id", {"e": episode}
            )
            say(f"EPISODE {episode} " + " ".join(r["id"] for r in gists))
        clock[0] += rng.uniform(10.0, 60.0)
        if rng.random() < 0.4:
            mem.maintenance()
        if rng.random() < 0.3:
            mem.store.vectors.compact()
    say("DONE")
    mem.close()


def fresh_tqdm_lock() -> None:
    """Give this fork its own tqdm lock. tqdm guards its bars with a multiprocessing lock (a
    semaphore shared by every fork of the server); an earlier workload killed while holding it
    inside the model's encode() would leave it taken for every later fork. A robot's process
    shares no such lock with anyone: this is the harness's artefact, not the memory's."""
    import tqdm
    import tqdm.auto

    for cls in {tqdm.tqdm, tqdm.auto.tqdm}:
        cls.set_lock(threading.RLock())


def serve() -> int:
    from emem_graph import SentenceTransformerEmbedder

    # This process never opened LanceDB or Kuzu (only each fork does), so nothing of theirs is
    # mid-operation at a fork; lancedb's warning about forking does not apply.
    warnings.filterwarnings("ignore", message="lancedb fork support", category=RuntimeWarning)
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    say("LOADED")
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] != "RUN":
            return 0
        db_path, seed, point, nth, delay = words[1:6]
        if point not in POINTS:
            say(f"EXIT bad point {point}")
            continue
        pid = os.fork()
        if pid == 0:
            # A workload that hangs shows where (every thread's stack on stderr) before the
            # parent gives up on it.
            faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
            fresh_tqdm_lock()
            code = 0
            try:
                workload(embedder, db_path, int(seed), point, int(nth), float(delay))
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 3
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        say(f"EXIT {os.waitstatus_to_exitcode(status)}")
    return 0


if __name__ == "__main__":
    sys.exit(serve())
