"""``emem-graph ros`` as a process (topic trigger, SIGTERM flushes and closes the memory, a note
a service acknowledged survives SIGKILL right after the answer) and the service round-trip of
semantic_search on a memory of 10,000 observations."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rosnodes import SKIP_REASON, RosClient, records, wait_until

rclpy = pytest.importorskip("rclpy", reason=SKIP_REASON)

from emem_graph.evals.bench.workload import INTEROCEPTION, QUERIES, patrol_workload  # noqa: E402
from emem_graph.memory import SpatioTemporalMemory  # noqa: E402
from ros_bridge.config import BridgeConfig, load_config  # noqa: E402
from ros_bridge.node import BridgeNode  # noqa: E402

pytestmark = pytest.mark.ros

SCALE = 10_000
ROUND_TRIPS = 100


def _prefix() -> str:
    return f"/emem_cli_{threading.get_native_id()}"


# --- emem-graph ros ----------------------------------------------------------------------------


@pytest.fixture
def bridge_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, str]]:
    """``emem-graph ros --config bridge.yaml`` with a topic trigger and no position."""
    node_name = f"emem_cli_bridge_{os.getpid()}"
    config = tmp_path / "bridge.yaml"
    config.write_text(
        f"""
node_name: {node_name}
memory_dir: {tmp_path / "memory"}
memory:
  flush_interval: 0.2
trigger:
  topic: {_prefix()}/store_now
services:
  query_service: true
layers:
  - name: notes
    topic: {_prefix()}/notes
    type: std_msgs/String
""",
        encoding="utf-8",
    )
    load_config(config)  # the file is valid before the process reads it
    script = Path(sys.executable).parent / "emem-graph"
    process = subprocess.Popen(
        [str(script), "ros", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process, config, node_name
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_emem_graph_ros_serves_ingests_on_a_topic_trigger_and_closes_on_sigterm(
    bridge_process: tuple[subprocess.Popen[str], Path, str], ros_client: RosClient
) -> None:
    from std_msgs.msg import Empty, String

    process, config_path, node_name = bridge_process
    search = f"/{node_name}/semantic_search"
    ros_client.client("SemanticSearch", search, wait_s=120.0)  # the model loads first
    text = "the loading bay door is jammed"

    def stored() -> bool:
        ros_client.publish(f"{_prefix()}/notes", String(data=text))
        time.sleep(0.2)
        ros_client.publish(f"{_prefix()}/store_now", Empty())
        answer = ros_client.call("SemanticSearch", search, query="jammed door", n_results=1)
        assert answer.success, answer.error
        return [r["text"] for r in records(answer)] == [text]

    wait_until(stored, 60.0, "the note to be stored on the trigger topic", interval_s=0.5)
    rows = ros_client.call(
        "Query",
        f"/{node_name}/query",
        cypher="MATCH (o:Observation) RETURN o.text AS text, o.x AS x, o.y AS y",
    )
    assert rows.success, rows.error
    assert {"text": text, "x": 0.0, "y": 0.0} in json.loads(rows.rows_json)["rows"]  # origin

    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "SIGTERM: stopping the bridge" in err
    assert "memory flushed and closed" in err
    assert f"/{node_name}/semantic_search" in err  # the banner lists the services
    # The memory was closed cleanly: it opens again, with the note in it.
    config = load_config(config_path)
    with config.open_memory() as memory:
        assert memory.store.counts()["observations"] == 1
        # Its gist (the episode closed at SIGTERM) may rank first: the note is among the best.
        assert text in memory.semantic_search("jammed door", n_results=5)


def test_emem_graph_ros_names_a_bad_config_key(tmp_path: Path) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(
        "memory_dir: m\nlayers:\n  - {name: a, topic: /a, type: std_msgs/String, max_age: -1}\n",
        encoding="utf-8",
    )
    script = Path(sys.executable).parent / "emem-graph"
    done = subprocess.run(
        [str(script), "ros", "--config", str(config)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "layers[0].max_age" in done.stderr


@pytest.fixture
def note_bridge(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, str]]:
    """``emem-graph ros --config bridge.yaml`` with the memory's default flush settings (the
    hashing embedder: nothing to load). Each gets a node name of its own: a killed node's
    services stay discovered for a while."""
    node_name = f"emem_note_bridge_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    config = tmp_path / "bridge.yaml"
    config.write_text(
        f"""
node_name: {node_name}
memory_dir: {tmp_path / "memory"}
memory:
  embedding_provider: hashing
layers:
  - name: notes
    topic: {_prefix()}/notes
    type: std_msgs/String
""",
        encoding="utf-8",
    )
    load_config(config)  # the file is valid before the process reads it
    script = Path(sys.executable).parent / "emem-graph"
    process = subprocess.Popen(
        [str(script), "ros", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process, config, node_name
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize("door", ["StoreSpecificMemory", "CallTool"])
def test_every_note_a_service_acknowledged_survives_a_kill_9_right_after_the_answer(
    door: str, note_bridge: tuple[subprocess.Popen[str], Path, str], ros_client: RosClient
) -> None:
    process, config_path, node_name = note_bridge
    service = f"/{node_name}/{'store_specific_memory' if door != 'CallTool' else 'call_tool'}"
    ros_client.client(door, service, wait_s=120.0)
    acknowledged: dict[str, str] = {}
    for i in range(5):
        note = f"spare key {i} is in drawer {i}"
        if door == "CallTool":
            answer = ros_client.call(
                door,
                service,
                tool_name="store_specific_memory",
                arguments_json=json.dumps({"content": note}),
            )
            assert answer.success and answer.result.startswith("Stored memory "), answer
            acknowledged[answer.result.split()[2]] = note
        else:
            answer = ros_client.call(door, service, content=note)
            assert answer.success, answer.error
            acknowledged[answer.observation_id] = note
    process.kill()  # SIGKILL as soon as the last answer is in
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    with load_config(config_path).open_memory() as memory:
        found = {note_id: memory.store.get_observation(note_id) for note_id in acknowledged}
    assert {note_id: o and o.text for note_id, o in found.items()} == acknowledged


# --- round trip at 10k observations --------------------------------------------------------------


@pytest.fixture(scope="module")
def big_bridge(tmp_path_factory: pytest.TempPathFactory, bridge_context: Any) -> Iterator[Any]:
    """A bridge over a memory of SCALE patrol observations (vectors embedded once per distinct
    text with the memory's own MiniLM, added with memory.add(..., embedding=...))."""
    config = BridgeConfig.model_validate(
        {
            "node_name": f"emem_scale_bridge_{os.getpid()}",
            "memory_dir": str(tmp_path_factory.mktemp("memory10k")),
            "memory": {"flush_batch_size": 500, "maintenance_interval": None},
            "layers": [{"name": "captions", "topic": f"{_prefix()}/c", "type": "std_msgs/String"}],
            "trigger": {"rate_hz": 1.0},
        }
    )
    memory: SpatioTemporalMemory = config.open_memory()
    work = patrol_workload(SCALE, embedder=memory.embedder)
    for i in range(SCALE):
        if work.source_types[i] == INTEROCEPTION:
            memory.add_body_state(
                work.texts[i], "battery", float(work.x[i]), float(work.y[i]), timestamp=work.t[i]
            )
        else:
            memory.add(
                work.texts[i],
                float(work.x[i]),
                float(work.y[i]),
                timestamp=float(work.t[i]),
                layer_name=work.layers[i],
                source_type=work.source_types[i],
                embedding=work.vectors[i],
            )
    memory.flush()
    memory.store.vectors.compact()
    node = BridgeNode(config, memory=memory, context=bridge_context)
    node.start()
    try:
        yield node
    finally:
        node.close()


def test_semantic_search_round_trip_at_10k_observations(
    big_bridge: BridgeNode, ros_client: RosClient, capsys: pytest.CaptureFixture[str]
) -> None:
    count = big_bridge.owner.call(
        lambda memory: memory.store.counts()["observations"], timeout_s=60.0
    )
    assert count == SCALE
    service = f"/{big_bridge.config.node_name}/semantic_search"
    for query in QUERIES[:5]:  # warm up: discovery, the model, the vector index
        assert ros_client.call("SemanticSearch", service, query=query).success
    times_ms: list[float] = []
    for i in range(ROUND_TRIPS):
        query = QUERIES[i % len(QUERIES)]
        start = time.perf_counter()
        answer = ros_client.call("SemanticSearch", service, query=query, n_results=10)
        times_ms.append((time.perf_counter() - start) * 1000.0)
        assert answer.success, answer.error
        assert len(records(answer)) == 10
    p50 = statistics.median(times_ms)
    p95 = statistics.quantiles(times_ms, n=20)[-1]
    with capsys.disabled():
        print(
            f"\n[ros] semantic_search service round trip at {count} observations: "
            f"p50 {p50:.1f} ms, p95 {p95:.1f} ms ({ROUND_TRIPS} calls)"
        )
    assert p50 < 1000.0
