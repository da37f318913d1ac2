"""Concurrency: writers, readers of every tool, a maintenance thread and the consolidation worker
share one memory (real Kuzu, LanceDB and MiniLM) for a fixed time.

Writers add observations, body state, entities and run episodes (their ends queue consolidation
on the background worker); readers call every tool through dispatch_tool_call with valid random
arguments; a maintenance thread runs time-window consolidation, archival, entity extraction and
LanceDB compaction. Time runs fast (an injected clock), so observations age, get consolidated and
archived during the soak. A watchdog (faulthandler) prints every thread's stack and ends the run
if anything hangs. Afterwards: no thread raised, no tool answered an error, nothing was logged at
ERROR, and every acknowledged observation and entity is stored (lost writes = 0) with the vector
store consistent.

The same runs once more through the ROS bridge's dispatcher (ros_bridge.services: MemoryOwner and
ServiceDispatcher), the way a multi-threaded ROS executor calls it.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import random
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from emem_graph import MemoryConfig, SpatioTemporalMemory
from emem_graph.retrieval.schemas import TOOL_SCHEMAS

JOIN_TIMEOUT = 120.0
WORDS = ("red chair", "blue cup", "open door", "person", "green plant", "laptop", "box")
PLACES = ("kitchen", "corridor", "desk", "window", "sofa")


class FastClock:
    """Wall time sped up: one real second is ``speed`` memory seconds."""

    def __init__(self, speed: float) -> None:
        self.start = time.time()
        self.origin = time.monotonic()
        self.speed = speed

    def __call__(self) -> float:
        return self.start + (time.monotonic() - self.origin) * self.speed


class Soak:
    """Threads, what they acknowledged, and what went wrong."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.ops: Counter[str] = Counter()
        self.observations: list[str] = []
        self.entities: list[str] = []
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self, name: str, body: Callable[[random.Random], None]) -> None:
        rng = random.Random(f"{self.seed}-{name}")

        def loop() -> None:
            try:
                while not self.stop.is_set():
                    body(rng)
                    with self.lock:
                        self.ops[name.rstrip("0123456789")] += 1
            except BaseException:
                with self.lock:
                    self.errors.append(f"{name}:\n{traceback.format_exc()}")

        thread = threading.Thread(target=loop, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def acknowledged(self, oid: str, *, entity: bool = False) -> None:
        assert isinstance(oid, str) and oid
        with self.lock:
            (self.entities if entity else self.observations).append(oid)

    def finish(self, seconds: float) -> None:
        time.sleep(seconds)
        self.stop.set()
        for thread in self.threads:
            thread.join(JOIN_TIMEOUT)
        stuck = [t.name for t in self.threads if t.is_alive()]
        if stuck:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            pytest.fail(f"deadlock: threads {stuck} did not finish within {JOIN_TIMEOUT} s")


def text(rng: random.Random) -> str:
    return f"a {rng.choice(WORDS)} near the {rng.choice(PLACES)} {rng.randrange(10_000)}"


def tool_arguments(rng: random.Random, tool: str) -> dict[str, Any]:
    """Valid random arguments for ``tool``."""
    x, y = rng.uniform(-30, 30), rng.uniform(-30, 30)
    return {
        "semantic_search": {"query": rng.choice(WORDS), "n_results": rng.randint(1, 10)},
        "spatial_query": {"x": x, "y": y, "radius": rng.uniform(1, 20)},
        "temporal_query": {"last_n_minutes": rng.uniform(1, 600), "order": "newest"},
        "episode_summary": {"last_n": rng.randint(1, 3)},
        "get_current_context": {"radius": rng.uniform(1, 10)},
        "search_gists": {"query": rng.choice(WORDS)},
        "entity_query": {"name": rng.choice(WORDS).split()[-1]},
        "locate": {"concept": rng.choice(WORDS)},
        "recall": {"query": rng.choice(WORDS), "n_results": 5},
        "body_status": {},
        # the capabilities' tools (spatial, areas, profile), under the same load
        "route_query": {"target": rng.choice(WORDS), "goal": f"{x:.1f}, {y:.1f}"},
        "directional_query": {
            "target": rng.choice(WORDS),
            "anchor": rng.choice(PLACES),
            "direction": rng.choice(["north", "east", "southwest"]),
        },
        "navigate_to": {"concept": rng.choice(WORDS)},
        "describe_area": rng.choice([{}, {"concept": rng.choice(WORDS)}]),
        "global_search": {"query": rng.choice(WORDS), "n_results": 2},
        "user_profile": {"query": f"bring me my {rng.choice(WORDS)}"},
    }[tool]


def build(path: Path, minilm: Any, clock: FastClock) -> SpatioTemporalMemory:
    config = MemoryConfig(
        db_path=str(path),
        flush_batch_size=8,
        flush_interval=1.0,
        consolidation_window=30.0,
        archive_after_seconds=120.0,
        maintenance_interval=60.0,
        entity_extract_time_interval=20.0,
        vector_compact_every=10,
        vector_cleanup_after_seconds=0.0,
    )
    return SpatioTemporalMemory(config=config, embedding_provider=minilm, get_current_time=clock)


def start_writers(soak: Soak, mem: Any, add: Callable[..., str], episodes: Any) -> None:
    """Three writer threads; ``add(kind, **fields)`` adds and returns the id, ``episodes``
    starts and ends episodes (facade or ROS services)."""

    def perception(rng: random.Random) -> None:
        x, y = rng.uniform(-30, 30), rng.uniform(-30, 30)
        if rng.random() < 0.3:
            detections = f"{rng.randint(1, 3)} chair, {rng.randint(1, 2)} person"
            soak.acknowledged(add("observation", text=detections, x=x, y=y, layer="detections"))
        else:
            soak.acknowledged(add("observation", text=text(rng), x=x, y=y, layer="camera"))
        time.sleep(rng.uniform(0.0, 0.01))

    def body_and_entities(rng: random.Random) -> None:
        if rng.random() < 0.2:
            name = rng.choice(WORDS)
            soak.acknowledged(add("entity", text=name, x=rng.uniform(-30, 30), y=0.0), entity=True)
        else:
            soak.acknowledged(add("body", text=f"battery {rng.randrange(100)} percent"))
        time.sleep(rng.uniform(0.0, 0.02))

    def episode_runner(rng: random.Random) -> None:
        episodes.start(f"patrol {rng.randrange(100)}")
        time.sleep(rng.uniform(0.1, 0.8))
        episodes.end()

    soak.start("writer-perception0", perception)
    soak.start("writer-perception1", perception)
    soak.start("writer-body-entities", body_and_entities)
    soak.start("writer-episodes", episode_runner)


def start_maintenance(soak: Soak, mem: SpatioTemporalMemory) -> None:
    def maintain(rng: random.Random) -> None:
        roll = rng.random()
        if roll < 0.3:
            mem.consolidate_time_window()
        elif roll < 0.6:
            mem.maintenance()
        elif roll < 0.8:
            mem.extract_entities()
        else:
            mem._store.vectors.compact()
        time.sleep(rng.uniform(0.1, 0.5))

    soak.start("maintenance", maintain)


def check_nothing_lost(mem: SpatioTemporalMemory, soak: Soak) -> dict[str, int]:
    mem.flush()
    store = mem._store

    def snapshot() -> tuple[dict[str, str], set[str], int, set[str], set[str]]:
        rows = store.graph.query_text("MATCH (o:Observation) RETURN o.id AS id, o.tier AS tier")
        return (
            {r["id"]: r["tier"] for r in rows},
            {r["id"] for r in store.graph.query_text("MATCH (e:Entity) RETURN e.id AS id")},
            store.counts()["pending_vectors"],
            set(store.vectors.all_ids()),
            {r["id"] for r in store.graph.query_text("MATCH (g:Gist) RETURN g.id AS id")},
        )

    # Read on the consolidation worker, after the jobs queued before it: the memory's own
    # scheduled maintenance (every 60 clock seconds, 3 s on the fast clock) runs on that thread
    # too, so it cannot archive between the read of the tiers and the read of the vectors (a
    # node read as long_term whose vector the archive then deleted: not a loss).
    tier, entities, pending, vector_ids, gists = mem.consolidation.worker.submit(
        "check", snapshot
    ).result(timeout=300)
    lost = [i for i in soak.observations if i not in tier]
    assert not lost, f"{len(lost)} acknowledged observations lost"
    lost_entities = [i for i in soak.entities if i not in entities]
    assert not lost_entities, f"{len(lost_entities)} acknowledged entities lost"
    assert pending == 0
    should = {i for i, t in tier.items() if t != "archived"} | gists | entities
    assert vector_ids == should, (
        f"{len(vector_ids - should)} vectors without a node, "
        f"{len(should - vector_ids)} nodes without a vector"
    )
    assert store.active_episode_ids() in ([], [mem.active_episode_id])
    return Counter(tier.values())


def figures(soak: Soak, tiers: dict[str, int], seconds: float) -> str:
    ops = ", ".join(f"{name} {n}" for name, n in sorted(soak.ops.items()))
    return (
        f"{sum(soak.ops.values())} operations in {seconds:.0f} s ({ops}); "
        f"{len(soak.observations)} observations and {len(soak.entities)} entity sightings "
        f"acknowledged, lost writes 0; tiers {dict(tiers)}; 0 exceptions, 0 deadlocks"
    )


@pytest.mark.slow
def test_writers_readers_maintenance_and_consolidation_together(
    tmp_path: Path, minilm, scale, summary, caplog
) -> None:
    caplog.set_level(logging.ERROR)
    seed = random.SystemRandom().randrange(2**32)
    print(f"concurrency seed={seed}")
    clock = FastClock(speed=20.0)
    mem = build(tmp_path / "mem", minilm, clock)
    soak = Soak(seed)
    faulthandler.dump_traceback_later(scale.soak_seconds + 2 * JOIN_TIMEOUT, exit=True)
    try:

        def add(kind: str, text: str, x: float = 0.0, y: float = 0.0, layer: str = "") -> str:
            if kind == "entity":
                return mem.add_entity(text, x, y)
            if kind == "body":
                return mem.add_body_state(text, "battery")
            return mem.add(text, x, y, layer_name=layer)

        class Episodes:
            def start(self, name: str) -> None:
                mem.start_episode(name)

            def end(self) -> None:
                mem.end_episode(wait=False)

        start_writers(soak, mem, add, Episodes())

        def reader(rng: random.Random) -> None:
            tool = rng.choice(list(TOOL_SCHEMAS))
            answer = mem.dispatch_tool_call(tool, tool_arguments(rng, tool))
            assert isinstance(answer, str)
            assert not answer.startswith("Error:"), f"{tool}: {answer}"

        for k in range(3):
            soak.start(f"reader{k}", reader)
        start_maintenance(soak, mem)
        soak.finish(scale.soak_seconds)
        assert not soak.errors, "\n".join(soak.errors[:3])
        tiers = check_nothing_lost(mem, soak)
        assert mem.consolidation.worker.failures == 0
    finally:
        faulthandler.cancel_dump_traceback_later()
        mem.close()
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not logged, f"errors logged during the soak: {logged[:3]}"
    assert soak.ops["reader"] > 0 and soak.ops["maintenance"] > 0
    line = f"concurrency, facade ({scale.label()}): " + figures(soak, tiers, scale.soak_seconds)
    print(line)
    summary.append(line)


@pytest.mark.slow
def test_the_same_through_the_ros_service_dispatcher(
    tmp_path: Path, minilm, scale, summary, caplog
) -> None:
    services = pytest.importorskip("ros_bridge.services")
    srv_files = pytest.importorskip("ros_bridge.srv_files")
    caplog.set_level(logging.ERROR)
    seed = random.SystemRandom().randrange(2**32)
    print(f"concurrency (ROS dispatcher) seed={seed}")
    clock = FastClock(speed=20.0)
    mem = build(tmp_path / "mem", minilm, clock)
    owner = services.MemoryOwner(mem)
    # Query is off by default (a Cypher port on the DDS domain); the soak exercises it too.
    settings = services.DefaultServiceSettings(query_service=True)
    dispatcher = services.ServiceDispatcher(owner, settings)
    soak = Soak(seed)
    seconds = max(10.0, scale.soak_seconds / 2)
    faulthandler.dump_traceback_later(seconds + 2 * JOIN_TIMEOUT, exit=True)

    def call(srv: str, **fields: Any) -> dict[str, Any]:
        response = dispatcher.handle(srv, srv_files.default_request(srv, **fields))
        assert response["success"], f"{srv}: {response['error']}"
        return response

    try:

        def add(kind: str, text: str, x: float = 0.0, y: float = 0.0, layer: str = "") -> str:
            # Notes through the service; body state and entities have no service, so they go
            # through the owner like every other call that touches the memory.
            if kind == "entity":
                return owner.call(lambda memory: memory.add_entity(text, x, y))
            if kind == "body":
                return owner.call(lambda memory: memory.add_body_state(text, "battery"))
            response = call(
                "StoreSpecificMemory", content=text, layer_name=layer, use_position=True, x=x, y=y
            )
            return response["observation_id"]

        class Episodes:
            def start(self, name: str) -> None:
                call("StartEpisode", name=name)

            def end(self) -> None:
                call("EndEpisode")

        start_writers(soak, mem, add, Episodes())

        def reader(rng: random.Random) -> None:
            tool = rng.choice(list(TOOL_SCHEMAS))
            arguments = json.dumps(tool_arguments(rng, tool))
            call("CallTool", tool_name=tool, arguments_json=arguments)
            if rng.random() < 0.2:
                call("Query", cypher="MATCH (o:Observation) RETURN count(o) AS n")

        for k in range(3):
            soak.start(f"reader{k}", reader)

        def maintain(rng: random.Random) -> None:
            action = rng.choice(["consolidate_time_window", "maintenance", "extract_entities"])
            owner.call(lambda memory: getattr(memory, action)())
            time.sleep(rng.uniform(0.1, 0.5))

        soak.start("maintenance", maintain)
        soak.finish(seconds)
        assert not soak.errors, "\n".join(soak.errors[:3])
        tiers = owner.call(check_nothing_lost, soak)
    finally:
        faulthandler.cancel_dump_traceback_later()
        owner.close()
        mem.close()
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not logged, f"errors logged during the soak: {logged[:3]}"
    line = f"concurrency, ROS ServiceDispatcher ({scale.label()}): " + figures(soak, tiers, seconds)
    print(line)
    summary.append(line)
