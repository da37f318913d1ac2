"""``emem-graph bench --fleet R``: R robots' patrols pushed to one fleet location, against one
embedded memory holding all of them.

Each robot patrols its own floor (the patrol workload, its own seed) in its own map frame; the
frames put the floors side by side in the fleet frame. Measured: each robot's first push
(observations per second), all robots pushing at once (threads of this process), an
incremental push of 1% more observations each, the graph replica built whole, updated after
that push and built whole again (fleet/replica_update.py), the bytes and objects at the
location, and semantic_search p50 of the fleet (before and after its table is compacted) against one
embedded memory of the same total size (same vectors, same queries, same embedder).
``--fleet-uri moto`` runs an S3-compatible server (moto) on loopback and also counts its HTTP
requests.
"""

from __future__ import annotations

import logging
import socket
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.evals.bench.workload import FLOOR, QUERIES, PatrolWorkload, patrol_workload
from emem_graph.evals.moto_s3 import atomic_conditional_puts
from emem_graph.fleet import FleetLocation, FleetMemory, Frame, push_memory
from emem_graph.fleet.location import S3Settings
from emem_graph.fleet.replica_update import replicate
from emem_graph.fleet.shared_table import SharedTable
from emem_graph.ingest.embeddings import HashingEmbedder
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.outputs import claim_directory, record_entries, remove_recorded

MOTO = "moto"
"""The --fleet-uri that starts a local S3-compatible server (moto) for the run."""
BUCKET = "fleet-bench"


def run_fleet_bench(
    robots: int,
    n: int,
    out: Path,
    *,
    uri: str | None = None,
    queries: int = 20,
    keep: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The fleet benchmark (module docstring): ``robots`` robots of ``n`` observations each.

    Returns:
        The figures, by name (times in seconds unless the name says ms).
    """
    # Bench removes only what it made, in a directory it created (outputs.py).
    claim_directory(out, "bench", replace=True)
    record_entries(
        out,
        "bench",
        [*(f"robot-{i}" for i in range(robots)), "one-memory", "replica", "replica-whole", "fleet"],
    )
    embedder = HashingEmbedder(384)
    figures: dict[str, Any] = {"robots": robots, "observations_per_robot": n}
    with _location(uri, out) as (location, requests):
        work = [patrol_workload(n, embedder=embedder, seed=i) for i in range(robots + 1)]
        frames = [Frame(i * (FLOOR[0] + 10.0), 0.0, 0.0) for i in range(robots)]
        directories = [out / f"robot-{i}" for i in range(robots)]
        for directory, patrol in zip(directories, work, strict=False):
            _write(directory, [(patrol, Frame())], embedder, progress)
        one = out / "one-memory"
        # Only its semantic_search is timed: no entities (at 10 x 100k, extracting them took
        # longer than the rest of the run, and close waits for it).
        _write(one, list(zip(work, frames, strict=False)), embedder, progress, extract=False)

        started = time.monotonic()
        first = push_memory(directories[0], location, "robot-0", frame=frames[0])
        figures["first_push_s"] = time.monotonic() - started
        figures["first_push_obs_per_s"] = n / figures["first_push_s"]
        before = requests()
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=robots) as pool:
            list(
                pool.map(
                    lambda i: push_memory(directories[i], location, f"robot-{i}", frame=frames[i]),
                    range(1, robots),
                )
            )
        if robots > 1:
            figures["concurrent_push_s"] = time.monotonic() - started
            figures["concurrent_push_obs_per_s"] = (robots - 1) * n / figures["concurrent_push_s"]
        figures["requests_per_push"] = (requests() - before) / max(1, robots - 1) or None
        started = time.monotonic()
        replica = replicate(location, out / "replica")
        figures["replica_build_s"] = time.monotonic() - started
        figures["replica_rows"] = sum(replica.nodes.values()) + sum(replica.edges.values())
        extra = max(1, n // 100)
        _write(directories[0], [(work[robots].head(extra), Frame())], embedder, False, at=1e6)
        started = time.monotonic()
        incremental = push_memory(directories[0], location, "robot-0")
        figures["incremental_push_s"] = time.monotonic() - started
        figures["incremental_rows"] = incremental.changed.get("Observation", 0)
        figures["first_push_rows"] = first.changed.get("Observation", 0)
        started = time.monotonic()
        update = replicate(location, out / "replica")
        figures["replica_update_s"] = time.monotonic() - started
        figures["replica_update_how"] = update.how
        figures["replica_update_rows_written"] = sum(update.written.values())
        started = time.monotonic()
        replicate(location, out / "replica-whole")
        figures["replica_rebuild_s"] = time.monotonic() - started
        figures["objects"], figures["bytes"] = location.usage()
        figures["bytes_per_observation"] = figures["bytes"] / (robots * n + extra)

        fleet = FleetMemory(location, embedding_provider=embedder)
        asked = [QUERIES[i % len(QUERIES)] for i in range(queries)]
        fleet.semantic_search(asked[0])  # opens the table, reads the manifests
        before = requests()
        figures["fleet_semantic_search_p50_ms"] = _p50(fleet.semantic_search, asked)
        figures["requests_per_fleet_search"] = (requests() - before) / queries or None
        table = SharedTable(location)
        figures["fragments"], figures["fragments_compacted"] = table.compact()
        fleet.refresh()
        fleet.semantic_search(asked[0])
        before = requests()
        figures["compacted_fleet_semantic_search_p50_ms"] = _p50(fleet.semantic_search, asked)
        figures["requests_per_compacted_fleet_search"] = (requests() - before) / queries or None
        with SpatioTemporalMemory(
            db_path=str(one), embedding_provider=embedder, read_only=True
        ) as memory:
            memory.semantic_search(asked[0])
            figures["one_memory_semantic_search_p50_ms"] = _p50(memory.semantic_search, asked)
    if not keep:
        remove_recorded(out, "bench")
    return figures


def describe(figures: dict[str, Any]) -> str:
    """The figures as lines."""
    return "".join(
        f"{name:38} {value:,.3f}\n" if isinstance(value, float) else f"{name:38} {value}\n"
        for name, value in figures.items()
    )


def _p50(ask: Any, queries: list[str]) -> float:
    times = []
    for query in queries:
        started = time.perf_counter()
        ask(query)
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def _write(
    directory: Path,
    patrols: list[tuple[PatrolWorkload, Frame]],
    embedder: HashingEmbedder,
    progress: bool,
    at: float = 0.0,
    extract: bool = True,
) -> None:
    """Add the patrols (moved by their frames, times shifted by ``at``) to the memory (with
    entity extraction unless ``extract`` is False)."""
    memory = SpatioTemporalMemory(
        config=MemoryConfig(
            db_path=str(directory),
            flush_batch_size=1000,
            maintenance_interval=None,
            entity_extraction=extract,
        ),
        embedding_provider=embedder,
        get_current_time=lambda: 2e9,
    )
    try:
        for patrol, frame in patrols:
            x, y = frame.apply(patrol.x, patrol.y)
            for i in tqdm(range(len(patrol)), desc=directory.name, disable=not progress):
                memory.add(
                    patrol.texts[i],
                    float(x[i]),
                    float(y[i]),
                    timestamp=float(patrol.t[i]) + at,
                    layer_name=patrol.layers[i],
                    source_type=patrol.source_types[i],
                    embedding=patrol.vectors[i],
                )
    finally:
        memory.close()


@contextmanager
def _location(uri: str | None, out: Path) -> Iterator[tuple[FleetLocation, Any]]:
    """The fleet location and a count of its requests (None where it cannot be counted)."""
    if uri != MOTO:
        yield FleetLocation(uri or str(out / "fleet")), lambda: 0
        return
    with atomic_conditional_puts(), _moto() as found:  # S3's guarantee, which moto lacks
        yield found


@contextmanager
def _moto() -> Iterator[tuple[FleetLocation, Any]]:
    """A moto S3 server on loopback with the bucket: the location and a count of requests."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    counted = [0]

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            counted[0] += 1

    werkzeug = logging.getLogger("werkzeug")
    handler = Count()
    werkzeug.addHandler(handler)
    werkzeug.propagate = False
    werkzeug.setLevel(logging.INFO)
    endpoint = f"http://127.0.0.1:{port}"
    settings = S3Settings(
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id="bench",
        secret_access_key="bench",
        allow_http=True,
    )
    try:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        ).create_bucket(Bucket=BUCKET)
        yield FleetLocation(f"s3://{BUCKET}/fleet", settings), lambda: counted[0]
    finally:
        werkzeug.removeHandler(handler)
        server.stop()
