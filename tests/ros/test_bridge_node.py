"""The bridge node on real ROS 2: a BridgeNode with a real memory in this process, and a second
rclpy node (its own context, its own DDS participant) that publishes String, Float32 and
Odometry and calls every service of emem_interfaces with call_async and a timeout."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rosnodes import SKIP_REASON, RosClient, records, wait_until

rclpy = pytest.importorskip("rclpy", reason=SKIP_REASON)

from emem_graph.errors import BackendUnavailableError  # noqa: E402
from emem_graph.models import Observation  # noqa: E402
from ros_bridge.config import BridgeConfig  # noqa: E402
from ros_bridge.node import BridgeNode  # noqa: E402
from ros_bridge.services import SERVICES  # noqa: E402

pytestmark = pytest.mark.ros

SPEED = 1.0
"""m/s of the simulated robot along x (y moves at half that)."""
ODOM_HZ = 50.0
TRIGGER_HZ = 4.0
TOLERANCE_M = 0.06
"""An observation's position is the pose interpolated at its time: when the trigger fires
before a pose sample newer than the message has arrived, the message waits for the next trigger
(a starved odometry publisher on a loaded CI machine once left the nearest older sample 0.17 m
behind). Storing at trigger time instead would be off by up to SPEED / TRIGGER_HZ."""
REPUBLISH_AFTER_S = 4.0
"""How long publish_until_stored waits for a message to be stored before sending it again."""
PARKED = (3.0, -2.0)
SCENE_TEXTS = (
    "a red chair next to the kitchen door",
    "a fire extinguisher on the lab wall",
    "two people talking in the hallway",
)


def _topic(name: str) -> str:
    return f"/emem_test_{threading.get_native_id()}/{name}"


@dataclass
class Patrol:
    """What the robot did and what the bridge stored."""

    t0: float
    """Time at which the moving robot was at x = y = 0."""
    episode_id: str
    scene: list[Observation]
    temperature: list[Observation]
    parked: list[Observation]
    dropped_no_pose: int


class Odometry:
    """Publishes nav_msgs/Odometry at ODOM_HZ on a thread: moving along a line, or parked."""

    def __init__(self, client: RosClient, topic: str) -> None:
        self.client = client
        self.topic = topic
        self.t0 = client.now()
        self.parked: tuple[float, float] | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def pose_at(self, t: float) -> tuple[float, float]:
        """Where the moving robot is at time t."""
        return SPEED * (t - self.t0), 0.5 * SPEED * (t - self.t0)

    def _run(self) -> None:
        from nav_msgs.msg import Odometry as OdometryMsg

        while not self.stop.is_set():
            now = self.client.now()
            x, y = self.parked if self.parked is not None else self.pose_at(now)
            msg = OdometryMsg()
            msg.header.frame_id = "map"
            msg.header.stamp.sec = int(now)
            msg.header.stamp.nanosec = round((now - int(now)) * 1e9) % 1_000_000_000
            msg.pose.pose.position.x = x
            msg.pose.pose.position.y = y
            msg.pose.pose.orientation.z = math.sin(0.25)  # yaw 0.5 rad
            msg.pose.pose.orientation.w = math.cos(0.25)
            self.client.publish(self.topic, msg)
            self.stop.wait(1.0 / ODOM_HZ)


def bridge_config(memory_dir: Path, **overrides: Any) -> BridgeConfig:
    """The test bridge: a scene (String) and a temperature (Float32) layer, odometry."""
    fields: dict[str, Any] = {
        "node_name": f"emem_test_bridge_{threading.get_native_id()}",
        "memory_dir": str(memory_dir),
        "memory": {"flush_interval": 0.2, "maintenance_interval": None},
        "layers": [
            {"name": "scene", "topic": _topic("scene"), "type": "std_msgs/msg/String"},
            {
                "name": "temperature",
                "topic": _topic("temperature"),
                "type": "std_msgs/Float32",
                "unit": " °C",
            },
        ],
        "position": {"topic": _topic("odom"), "type": "nav_msgs/msg/Odometry", "max_age": 1.0},
        "trigger": {"rate_hz": TRIGGER_HZ},
        "services": {"query_service": True},  # Query is off by default; these tests call it
    }
    fields.update(overrides)
    return BridgeConfig.model_validate(fields)


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory, bridge_context: Any) -> Iterator[BridgeNode]:
    node = BridgeNode(bridge_config(tmp_path_factory.mktemp("memory")), context=bridge_context)
    node.start()
    try:
        yield node
    finally:
        node.close()


def srv(bridge: BridgeNode, srv_type: str) -> str:
    """The fully qualified name of one of the bridge's services."""
    return f"/{bridge.config.node_name}/{SERVICES[srv_type].service_name}"


def layer_observations(bridge: BridgeNode, layer: str) -> list[Observation]:
    def read(memory: Any) -> list[Observation]:
        return [o for o in memory.get_recent(1000) if o.layer_name == layer]

    return bridge.owner.call(read, timeout_s=30.0)


def publish_until_stored(
    bridge: BridgeNode, client: RosClient, layer: str, topic: str, msg: Any, text: str
) -> list[Observation]:
    """Publish msg until an observation with ``text`` is in the layer (subscriptions are best
    effort: one lost message must not fail the test); the matching observations. It waits
    seconds before publishing again: republishing after 0.75 s on a loaded CI machine stored the
    same reading twice (the first had not reached the memory yet)."""
    for _ in range(6):
        client.publish(topic, msg)
        deadline = time.monotonic() + REPUBLISH_AFTER_S
        while time.monotonic() < deadline:
            found = [o for o in layer_observations(bridge, layer) if o.text == text]
            if found:
                return found
            time.sleep(0.05)
    pytest.fail(f"{text!r} never reached layer {layer}")


@pytest.fixture(scope="module")
def patrol(bridge: BridgeNode, ros_client: RosClient) -> Iterator[Patrol]:
    from std_msgs.msg import Float32, String

    started = ros_client.call("StartEpisode", srv(bridge, "StartEpisode"), name="ros test patrol")
    assert started.success, started.error
    odom = Odometry(ros_client, _topic("odom"))
    odom.thread.start()
    try:
        assert bridge.pipeline.poses is not None
        wait_until(bridge.pipeline.poses.latest, 30.0, "the first pose at the bridge")
        for text in SCENE_TEXTS:
            publish_until_stored(
                bridge, ros_client, "scene", _topic("scene"), String(data=text), text
            )
            time.sleep(1.0)  # at least a metre between two scenes
        publish_until_stored(
            bridge,
            ros_client,
            "temperature",
            _topic("temperature"),
            Float32(data=21.5),
            "temperature: 21.5 °C",
        )
        parked_since = ros_client.now()
        odom.parked = PARKED
        # The next message must fall between parked samples at the bridge: wait until the
        # bridge has parked samples for 0.5 s (a fixed sleep failed once on a loaded machine,
        # the bridge still interpolating from the last moving sample).
        poses = bridge.pipeline.poses

        def parked_for_a_while() -> bool:
            latest = poses.latest()
            return (
                latest is not None
                and (latest.x, latest.y) == PARKED
                and (latest.stamp or 0.0) >= parked_since + 0.5
            )

        wait_until(parked_for_a_while, 30.0, "half a second of parked poses at the bridge")
        parked_text = "a charging dock by the window"
        publish_until_stored(
            bridge, ros_client, "scene", _topic("scene"), String(data=parked_text), parked_text
        )
    finally:
        odom.stop.set()
        odom.thread.join()
    # No pose for longer than position.max_age: a message now has no position and is dropped.
    time.sleep(1.5)
    before = bridge.pipeline.stats.dropped_no_pose
    lost = "a message with no pose"
    ros_client.publish(_topic("scene"), String(data=lost))
    wait_until(
        lambda: bridge.pipeline.stats.dropped_no_pose > before, 10.0, "the message to be dropped"
    )
    scene = layer_observations(bridge, "scene")
    assert not [o for o in scene if o.text == lost]
    yield Patrol(
        t0=odom.t0,
        episode_id=started.episode_id,
        scene=[o for o in scene if o.text in SCENE_TEXTS],
        temperature=layer_observations(bridge, "temperature"),
        parked=[o for o in scene if o.text == parked_text],
        dropped_no_pose=bridge.pipeline.stats.dropped_no_pose - before,
    )


# --- ingest ----------------------------------------------------------------------------------


def test_observations_land_at_the_pose_interpolated_at_their_time(patrol: Patrol) -> None:
    moving = patrol.scene + patrol.temperature
    assert {o.text for o in patrol.scene} == set(SCENE_TEXTS)
    assert {o.text for o in patrol.temperature} == {"temperature: 21.5 °C"}
    for obs in moving:
        expected_x, expected_y = (
            SPEED * (obs.timestamp - patrol.t0),
            0.5 * SPEED * (obs.timestamp - patrol.t0),
        )
        assert abs(obs.x - expected_x) <= TOLERANCE_M, (obs.text, obs.x, expected_x)
        assert abs(obs.y - expected_y) <= TOLERANCE_M, (obs.text, obs.y, expected_y)
        assert obs.metadata["frame_id"] == "map"
        assert obs.metadata["yaw"] == pytest.approx(0.5, abs=1e-6)
        assert obs.episode_id == patrol.episode_id
        assert obs.source_type == "ros"
    # The robot moved between the messages: distinct places, and times with sub-second parts.
    assert len({round(o.x, 1) for o in moving}) == len(moving)
    assert any(o.timestamp != int(o.timestamp) for o in moving)


def test_a_parked_robot_stores_at_its_pose_and_a_message_without_pose_is_dropped(
    patrol: Patrol,
) -> None:
    assert patrol.parked
    for obs in patrol.parked:
        assert (obs.x, obs.y) == pytest.approx(PARKED, abs=1e-9)
    assert patrol.dropped_no_pose == 1


def test_each_message_is_stored_once_per_trigger(bridge: BridgeNode, patrol: Patrol) -> None:
    stats = bridge.pipeline.stats
    assert stats.triggers >= 1
    assert stats.stored == len(layer_observations(bridge, "scene")) + len(
        layer_observations(bridge, "temperature")
    )
    # Idle triggers since then stored nothing new: a message is never re-stored.
    stored = stats.stored
    time.sleep(3.0 / TRIGGER_HZ)
    assert bridge.pipeline.stats.stored == stored


# --- services --------------------------------------------------------------------------------


def test_every_service_is_advertised(bridge: BridgeNode, ros_client: RosClient) -> None:
    def advertised() -> set[str]:
        return {name for name, _ in ros_client.node.get_service_names_and_types()}

    expected = {srv(bridge, name) for name in SERVICES}
    wait_until(lambda: expected <= advertised(), 30.0, "the services to be discovered")
    assert sorted(bridge.service_names()) == sorted(expected)


def test_tool_services_answer_from_the_memory(
    bridge: BridgeNode, ros_client: RosClient, patrol: Patrol
) -> None:
    chair = next(o for o in patrol.scene if "red chair" in o.text)

    def call(srv_type: str, **fields: Any) -> Any:
        response = ros_client.call(srv_type, srv(bridge, srv_type), **fields)
        assert response.success, (srv_type, response.error)
        assert response.error == ""
        assert response.result and not response.result.startswith("Error")
        return response

    found = call("SemanticSearch", query="red chair by the kitchen", n_results=2)
    assert records(found)[0]["text"] == chair.text
    assert chair.text in found.result
    near = call(
        "SemanticSearch",
        query="fire extinguisher",
        use_near=True,
        near_x=chair.x,
        near_y=chair.y,
        spatial_radius=0.5,
    )
    assert [r["text"] for r in records(near)] == [chair.text]  # the area filter applied
    spatial = call("SpatialQuery", x=PARKED[0], y=PARKED[1], radius=0.5)
    assert {r["text"] for r in records(spatial)} == {o.text for o in patrol.parked}
    recent = call("TemporalQuery", last_n_minutes=10.0, layer="temperature")
    assert [r["text"] for r in records(recent)] == ["temperature: 21.5 °C"]
    located = call("Locate", concept="fire extinguisher")
    location = json.loads(located.result_json)["location"]
    extinguisher = next(o for o in patrol.scene if "extinguisher" in o.text)
    assert math.hypot(location["x"] - extinguisher.x, location["y"] - extinguisher.y) < 1.0
    call("Recall", query="people talking")
    context = call("GetCurrentContext", radius=3.0)
    assert "charging dock" in context.result  # the robot is parked by it
    call("EntityQuery", name="chair")
    call("BodyStatus", layers=[])
    via_call_tool = call(
        "CallTool",
        tool_name="semantic_search",
        arguments_json=json.dumps({"query": "red chair by the kitchen", "n_results": 1}),
    )
    assert [r["text"] for r in records(via_call_tool)] == [chair.text]

    listed = ros_client.call("ListTools", srv(bridge, "ListTools"))
    assert {"semantic_search", "locate", "store_specific_memory"} <= set(listed.names)
    schemas = json.loads(listed.schemas_json)
    assert [s["function"]["name"] for s in schemas] == list(listed.names)

    note = ros_client.call(
        "StoreSpecificMemory",
        srv(bridge, "StoreSpecificMemory"),
        content="the spare battery is behind the blue door",
        use_position=True,
        x=10.0,
        y=12.0,
        z=0.0,
    )
    assert note.success, note.error
    assert note.observation_id
    at_note = call("SpatialQuery", x=10.0, y=12.0, radius=0.5)
    assert [r["id"] for r in records(at_note)] == [note.observation_id]

    rows = ros_client.call(
        "Query",
        srv(bridge, "Query"),
        cypher="MATCH (o:Observation) WHERE o.layer = $layer RETURN o.text AS text ORDER BY text",
        params_json=json.dumps({"layer": "temperature"}),
    )
    assert rows.success, rows.error
    assert "temperature: 21.5 °C" in rows.rows_json


def test_episode_services_consolidate_the_patrol(
    bridge: BridgeNode, ros_client: RosClient, patrol: Patrol
) -> None:
    ended = ros_client.call("EndEpisode", srv(bridge, "EndEpisode"), wait_for_consolidation=True)
    assert ended.success, ended.error
    assert ended.episode_id == patrol.episode_id
    assert ended.summary
    summary = ros_client.call(
        "EpisodeSummary", srv(bridge, "EpisodeSummary"), episode_id=patrol.episode_id
    )
    assert summary.success, summary.error
    assert "ros test patrol" in summary.result
    gists = ros_client.call("SearchGists", srv(bridge, "SearchGists"), query="red chair")
    assert gists.success, gists.error
    assert records(gists), gists.result
    # In the background (the default): answers at once with the id, no summary yet.
    again = ros_client.call("StartEpisode", srv(bridge, "StartEpisode"), name="second round")
    assert again.success, again.error
    ended = ros_client.call("EndEpisode", srv(bridge, "EndEpisode"))
    assert (ended.success, ended.episode_id, ended.summary) == (True, again.episode_id, "")


def test_bad_requests_fail_cleanly_and_the_node_keeps_serving(
    bridge: BridgeNode, ros_client: RosClient, patrol: Patrol
) -> None:
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("SemanticSearch", {"query": ""}, "query"),
        ("SpatialQuery", {"x": 0.0, "y": 0.0, "radius": -1.0}, "radius"),
        ("TemporalQuery", {"time_after": "not a time"}, "time_after"),
        ("CallTool", {"tool_name": "no_such_tool"}, "no_such_tool"),
        ("CallTool", {"tool_name": "semantic_search", "arguments_json": "{oops"}, "JSON"),
        ("StartEpisode", {"name": ""}, "name"),
        ("Query", {"cypher": "MATCH (o:Observation) DELETE o"}, "read"),
        ("Query", {"cypher": "THIS IS NOT CYPHER"}, ""),
    ]
    for srv_type, fields, word in bad:
        response = ros_client.call(srv_type, srv(bridge, srv_type), **fields)
        assert response.success is False, (srv_type, fields)
        assert response.error, (srv_type, fields)
        assert word.lower() in response.error.lower(), (srv_type, response.error)
    nothing_to_end = ros_client.call("EndEpisode", srv(bridge, "EndEpisode"))
    assert nothing_to_end.success is False and "no active episode" in nothing_to_end.error
    rows = ros_client.call(
        "Query", srv(bridge, "Query"), cypher="MATCH (o:Observation) RETURN count(o) AS n"
    )
    assert rows.success, rows.error
    # The memory is intact after the refused DELETE.
    assert json.loads(rows.rows_json)["rows"][0]["n"] >= len(patrol.scene)
    still = ros_client.call("SemanticSearch", srv(bridge, "SemanticSearch"), query="red chair")
    assert still.success and records(still)


def test_a_layer_of_a_missing_message_package_is_named(tmp_path: Path, bridge_context: Any) -> None:
    config = bridge_config(
        tmp_path / "memory",
        node_name="emem_test_missing_type",
        memory={"embedding_provider": "hashing"},
        layers=[
            {
                "name": "objects",
                "topic": "/detections",
                "type": "vision_msgs/msg/Detection2DArray",
            }
        ],
    )
    with pytest.raises(BackendUnavailableError, match=r"layer 'objects'.*vision_msgs"):
        BridgeNode(config, context=bridge_context)


def test_cypher_ros_asks_the_live_memory_through_the_query_service(
    bridge: BridgeNode, patrol: Patrol, capsys: pytest.CaptureFixture[str]
) -> None:
    # The bridge holds the memory read-write: `emem-graph cypher --ros` is the way in.
    from emem_graph.cli import main

    node = bridge.config.node_name
    count = "MATCH (o:Observation) RETURN count(o) AS n"
    assert main(["cypher", "--ros", "--node", node, count, "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert row["n"] >= len(patrol.scene) + len(patrol.temperature) + len(patrol.parked)

    texts = "MATCH (o:Observation) WHERE o.layer = $layer RETURN o.text AS text"
    assert main(["cypher", "--ros", "--node", node, texts, "--param", "layer=scene"]) == 0
    out = capsys.readouterr().out
    assert all(text in out for text in SCENE_TEXTS)

    before = bridge.owner.call(lambda memory: memory.store.counts(), timeout_s=30.0)
    assert main(["cypher", "--ros", "--node", node, "MATCH (o:Observation) DETACH DELETE o"]) == 2
    assert "read" in capsys.readouterr().err
    after = bridge.owner.call(lambda memory: memory.store.counts(), timeout_s=30.0)
    assert after["observations"] == before["observations"] > 0

    assert main(["cypher", "--ros", "--node", "no_such_bridge", count, "--timeout", "1"]) == 2
    assert "no bridge answers at /no_such_bridge/query" in capsys.readouterr().err


def test_closing_stores_what_arrived_since_the_last_tick(
    tmp_path: Path, bridge_context: Any, ros_client: RosClient
) -> None:
    # A slow rate trigger (one tick per 100 s) and a message just before shutdown: closing
    # ticks once more, so the message is in the memory that reopens.
    from std_msgs.msg import String

    from emem_graph import SpatioTemporalMemory

    config = bridge_config(
        tmp_path / "memory",
        node_name="emem_test_last_tick",
        trigger={"rate_hz": 0.01},
        position=None,
        memory={"embedding_provider": "hashing", "maintenance_interval": None},
    )
    node = BridgeNode(config, context=bridge_context)
    node.start()
    try:
        wait_until(
            lambda: ros_client.node.count_subscribers(_topic("scene")) > 0, 30.0, "subscriber"
        )
        text = "a parcel left at the front door"
        for _ in range(20):  # best effort: until the bridge has the message in its slot
            ros_client.publish(_topic("scene"), String(data=text))
            if node.pipeline.stats.messages:
                break
            time.sleep(0.1)
        assert node.pipeline.stats.messages, "the bridge never received the message"
        assert node.pipeline.stats.stored == 0  # no tick yet
    finally:
        node.close()
    with SpatioTemporalMemory(
        str(tmp_path / "memory"), config={"embedding_provider": "hashing"}
    ) as memory:
        assert text in memory.spatial_query(0.0, 0.0, radius=1.0)
