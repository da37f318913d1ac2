"""IngestPipeline: triggers, freshness, pose at message time, de-duplication, body states.

Every test drives a real memory (Kuzu + LanceDB in tmp_path, all-MiniLM-L6-v2) with real rosbags
messages and a clock the test moves by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import ros_messages as rm
from sim_clock import SimClock

from emem_graph import SpatioTemporalMemory
from emem_graph.models import Observation
from ros_bridge.config import BridgeConfig
from ros_bridge.pipeline import SOURCE_TYPE, IngestPipeline

LAYERS: list[dict[str, Any]] = [
    {"name": "scene", "topic": "/scene", "type": "std_msgs/msg/String"},
    {"name": "objects", "topic": "/detections", "type": "vision_msgs/msg/Detection2DArray"},
    {
        "name": "battery",
        "topic": "/battery",
        "type": "sensor_msgs/msg/BatteryState",
        "internal_state": True,
        "max_age": 30.0,
    },
]


def bridge_config(**overrides: Any) -> BridgeConfig:
    data: dict[str, Any] = {
        "memory_dir": "unused",
        "layers": LAYERS,
        "position": {"topic": "/odom", "type": "nav_msgs/msg/Odometry", "max_age": 1.0},
        "trigger": {"rate_hz": 1.0},
    }
    data.update(overrides)
    return BridgeConfig.build(data)


@pytest.fixture
def memory(make_memory: Callable[..., SpatioTemporalMemory], clock: SimClock) -> Any:
    return make_memory(clock=clock)


def stored(memory: SpatioTemporalMemory, body_state: bool = False) -> list[Observation]:
    """Everything the memory holds, oldest first (read back from the graph)."""
    memory.flush()
    found = memory.store.observations_in_time(
        None, None, newest_first=False, limit=1000, include_body_state=True
    )
    return [o for o in found if o.is_body_state == body_state]


def drive_odometry(pipeline: IngestPipeline, start: float, end: float, speed: float) -> None:
    """The robot drives along +x at ``speed`` m/s, odometry at 10 Hz from start to end."""
    steps = round((end - start) * 10)
    for i in range(steps + 1):
        t = start + i / 10
        pipeline.on_message("/odom", rm.odometry(t, speed * (t - start), 1.0, yaw=0.3), t)


def test_subscriptions_list_each_topic_once_with_its_type() -> None:
    config = bridge_config(trigger={"topic": "/detections"})
    pipeline = IngestPipeline(memory=None, config=config)  # type: ignore[arg-type]
    assert pipeline.subscriptions() == [
        ("/scene", "std_msgs/msg/String"),
        ("/detections", "vision_msgs/msg/Detection2DArray"),
        ("/battery", "sensor_msgs/msg/BatteryState"),
        ("/odom", "nav_msgs/msg/Odometry"),
    ]
    empty_trigger = IngestPipeline(None, bridge_config(trigger={"topic": "/now"}))  # type: ignore[arg-type]
    assert empty_trigger.subscriptions()[-1] == ("/now", "std_msgs/msg/Empty")


def test_observations_land_at_the_pose_interpolated_at_message_time(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    drive_odometry(pipeline, 100.0, 101.0, speed=2.0)
    # Stamped 100.25 s (header), arriving late; no header: the receive time 100.55 s.
    pipeline.on_message("/detections", rm.detections(100.25, ("chair", 0.9)), receive_time=100.9)
    pipeline.on_message("/scene", rm.string("a kitchen with a red fridge"), receive_time=100.55)
    drive_odometry(pipeline, 101.1, 102.0, speed=2.0)  # later poses do not move them
    clock.now = 101.0
    assert pipeline.tick() == 2

    by_layer = {o.layer_name: o for o in stored(memory)}
    objects, scene = by_layer["objects"], by_layer["scene"]
    assert objects.text == "1 chair"
    assert (objects.x, objects.y) == (pytest.approx(0.5), pytest.approx(1.0))
    assert objects.timestamp == pytest.approx(100.25, abs=1e-6)
    assert scene.text == "a kitchen with a red fridge"
    assert scene.x == pytest.approx(1.1)
    assert scene.timestamp == pytest.approx(100.55)
    assert objects.source_type == scene.source_type == SOURCE_TYPE
    assert objects.metadata["frame_id"] == "map"
    assert objects.metadata["topic"] == "/detections"
    assert objects.metadata["yaw"] == pytest.approx(0.3)
    assert scene.metadata["stamp"] == "receive_time"
    assert pipeline.stats.stored == 2
    assert pipeline.stats.triggers == 1
    assert "kitchen" in memory.semantic_search("fridge in the kitchen", n_results=1)


def test_a_message_is_stored_once_not_at_every_tick(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    drive_odometry(pipeline, 10.0, 14.0, speed=1.0)
    pipeline.on_message("/scene", rm.string("hallway"), receive_time=10.0)
    for now in (10.5, 11.5, 12.5, 13.5):
        pipeline.tick(now)
    assert [o.text for o in stored(memory)] == ["hallway"]
    assert pipeline.stats.triggers == 4
    # Two messages before one tick: only the newer is stored, the older is counted.
    pipeline.on_message("/scene", rm.string("door"), receive_time=13.6)
    pipeline.on_message("/scene", rm.string("stairs"), receive_time=13.8)
    assert pipeline.tick(14.0) == 1
    assert [o.text for o in stored(memory)] == ["hallway", "stairs"]
    assert pipeline.stats.superseded == 1


def test_a_message_newer_than_every_pose_waits_for_the_next_sample(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    """Odometry lagging behind a message (a starved publisher, DDS latency): the trigger keeps
    the message until a pose sample after its time arrives, then interpolates; it does not take
    the last older sample (0.4 m off here)."""
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    drive_odometry(pipeline, 10.0, 11.0, speed=2.0)  # last sample at 11.0, x = 2.0
    pipeline.on_message("/scene", rm.string("a door"), receive_time=11.2)
    assert pipeline.tick(11.25) == 0
    assert pipeline.stats.awaited_pose == 1 and stored(memory) == []
    pipeline.on_message("/odom", rm.odometry(11.3, 2.6, 1.0, yaw=0.3), 11.3)
    assert pipeline.tick(11.5) == 1
    (door,) = stored(memory)
    assert door.x == pytest.approx(2.4) and door.timestamp == pytest.approx(11.2)
    # Odometry that never comes back: the message waits at most position.max_age past its
    # time, then takes the last sample (within max_age) as before.
    pipeline.on_message("/scene", rm.string("a window"), receive_time=11.8)
    assert pipeline.tick(12.0) == 0
    assert pipeline.tick(12.9) == 1
    assert [o.x for o in stored(memory)] == [pytest.approx(2.4), pytest.approx(2.6)]
    # The last tick (shutdown, end of a bag) never keeps anything back.
    pipeline.on_message("/scene", rm.string("a stair"), receive_time=12.0)
    assert pipeline.tick(12.05, final=True) == 1
    # A newer message on the layer while one waits supersedes it, counted once.
    pipeline.on_message("/scene", rm.string("a lamp"), receive_time=12.1)
    pipeline.tick(12.15)
    pipeline.on_message("/scene", rm.string("a rug"), receive_time=12.2)
    pipeline.tick(12.25, final=True)
    assert [o.text for o in stored(memory)][-1] == "a rug"
    assert pipeline.stats.superseded == 1


def test_stale_messages_are_dropped_and_counted(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    config = bridge_config(layers=[{**LAYERS[0], "max_age": 2.0}, LAYERS[1]])
    pipeline = IngestPipeline(memory, config, clock=clock)
    drive_odometry(pipeline, 0.5, 10.0, speed=0.5)
    pipeline.on_message("/scene", rm.string("old news"), receive_time=5.0)
    pipeline.on_message("/detections", rm.detections(4.0, ("cup", 0.9)), receive_time=9.0)
    assert pipeline.tick(7.5) == 1  # the scene is 2.5 s old (> 2.0); the detection 3.5 (< 5.0)
    assert [o.text for o in stored(memory)] == ["1 cup"]
    assert pipeline.stats.dropped_stale == 1
    # The dropped message is consumed: a later tick does not bring it back.
    pipeline.tick(8.5)
    assert pipeline.stats.dropped_stale == 1
    assert len(stored(memory)) == 1


def test_no_pose_near_the_message_time_drops_and_counts_it(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    pipeline.on_message("/scene", rm.string("before any odometry"), receive_time=1.0)
    assert pipeline.tick(1.2) == 0
    assert pipeline.stats.dropped_no_pose == 1
    drive_odometry(pipeline, 2.0, 3.0, speed=1.0)
    pipeline.on_message("/detections", rm.detections(6.0, ("cup", 0.9)), receive_time=6.0)
    assert pipeline.tick(6.2) == 0  # last pose 3 s before the message: max_age is 1 s
    assert pipeline.stats.dropped_no_pose == 2
    assert stored(memory) == []


def test_empty_text_and_bad_templates_are_dropped_and_counted(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    layers = [LAYERS[0], {**LAYERS[1], "template": "{colour} things"}]
    pipeline = IngestPipeline(memory, bridge_config(layers=layers), clock=clock)
    drive_odometry(pipeline, 1.0, 2.0, speed=1.0)
    pipeline.on_message("/scene", rm.string("   "), receive_time=1.5)
    pipeline.on_message("/detections", rm.detections(1.5, ("cup", 0.9)), receive_time=1.5)
    assert pipeline.tick(2.0) == 0
    assert pipeline.stats.dropped_empty == 1
    assert pipeline.stats.dropped_error == 1


def test_dedupe_skips_unchanged_text_until_the_robot_moves(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    config = bridge_config(trigger={"rate_hz": 1.0, "dedupe": True, "dedupe_distance": 0.5})
    pipeline = IngestPipeline(memory, config, clock=clock)
    # Standing still at (0, 1) from t=1 to t=3, then driving along +x at 1 m/s.
    for i in range(21):
        t = 1.0 + i / 10
        pipeline.on_message("/odom", rm.odometry(t, 0.0, 1.0), t)
    drive_odometry(pipeline, 3.1, 6.0, speed=1.0)
    for t, text in [(1.5, "kitchen"), (2.5, "kitchen"), (2.8, "pantry"), (3.3, "pantry")]:
        pipeline.on_message("/scene", rm.string(text), receive_time=t)
        pipeline.tick(t + 0.1)
    # Unchanged and moved 0.2 m (< 0.5): skipped. Then moved 0.8 m: stored again.
    pipeline.on_message("/scene", rm.string("pantry"), receive_time=4.0)
    pipeline.tick(4.1)
    assert [o.text for o in stored(memory)] == ["kitchen", "pantry", "pantry"]
    assert pipeline.stats.deduplicated == 2
    assert stored(memory)[-1].x == pytest.approx(0.9)


def test_dedupe_off_stores_every_fresh_message(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    layers = [{**LAYERS[0], "dedupe": False}]
    config = bridge_config(layers=layers, trigger={"rate_hz": 1.0, "dedupe": True})
    pipeline = IngestPipeline(memory, config, clock=clock)
    drive_odometry(pipeline, 1.0, 4.0, speed=0.0)
    for t in (1.5, 2.5, 3.5):
        pipeline.on_message("/scene", rm.string("kitchen"), receive_time=t)
        pipeline.tick(t + 0.1)
    assert len(stored(memory)) == 3
    assert pipeline.stats.deduplicated == 0


def test_internal_state_goes_to_body_status_not_to_search(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    drive_odometry(pipeline, 50.0, 51.0, speed=1.0)
    pipeline.on_message("/battery", rm.battery(0.84, 12.3, 2, t=50.5), receive_time=50.6)
    pipeline.on_message("/scene", rm.string("a charging dock by the wall"), receive_time=50.5)
    clock.now = 51.0
    assert pipeline.tick() == 2
    assert pipeline.stats.body_states == 1
    assert pipeline.stats.stored == 1
    (battery,) = stored(memory, body_state=True)
    assert battery.text == "battery 84% (12.3 V, discharging)"
    assert battery.layer_name == "battery"
    assert battery.x == pytest.approx(0.5)
    assert battery.timestamp == pytest.approx(50.5)
    assert "battery 84%" in memory.body_status(["battery"])
    assert "battery" not in memory.semantic_search("battery voltage discharging", n_results=5)
    assert "charging dock" in memory.semantic_search("battery voltage discharging", n_results=5)


def test_body_state_without_a_pose_is_still_stored(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    pipeline.on_message("/battery", rm.battery(0.5, 11.0, 1, t=5.0))
    assert pipeline.tick(6.0) == 1
    (battery,) = stored(memory, body_state=True)
    assert (battery.x, battery.y) == (0.0, 0.0)


def test_rate_trigger_is_due_once_per_period(memory: SpatioTemporalMemory) -> None:
    pipeline = IngestPipeline(memory, bridge_config(trigger={"rate_hz": 2.0}))
    assert pipeline.due(10.0)
    pipeline.tick(10.0)
    assert not pipeline.due(10.4)
    assert pipeline.due(10.5)
    assert not pipeline.on_message("/scene", rm.string("x"), receive_time=10.6)


def test_topic_trigger_reports_its_topic_and_is_never_due(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    config = bridge_config(trigger={"topic": "/detections"})
    pipeline = IngestPipeline(memory, config, clock=clock)
    drive_odometry(pipeline, 1.0, 2.0, speed=1.0)
    assert not pipeline.due(100.0)
    assert not pipeline.on_message("/scene", rm.string("a sofa"), receive_time=1.2)
    assert pipeline.on_message("/detections", rm.detections(1.5, ("sofa", 0.8)), 1.5)
    assert pipeline.tick(1.6) == 2
    assert sorted(o.text for o in stored(memory)) == ["1 sofa", "a sofa"]


def test_without_a_position_topic_observations_are_at_the_origin(
    memory: SpatioTemporalMemory,
) -> None:
    config = BridgeConfig.build({"memory_dir": "unused", "layers": LAYERS[:1]})
    pipeline = IngestPipeline(memory, config)
    pipeline.on_message("/scene", rm.string("a stationary camera view"), receive_time=3.0)
    assert pipeline.tick(3.5) == 1
    (observation,) = stored(memory)
    assert (observation.x, observation.y, observation.z) == (0.0, 0.0, 0.0)
    assert "frame_id" not in observation.metadata


def test_stats_count_every_message_and_read_as_a_dict(
    memory: SpatioTemporalMemory, clock: SimClock
) -> None:
    pipeline = IngestPipeline(memory, bridge_config(), clock=clock)
    drive_odometry(pipeline, 1.0, 2.0, speed=1.0)  # 11 messages
    pipeline.on_message("/scene", rm.string("a"), receive_time=1.5)
    pipeline.on_message("/odom", rm.odometry(2.1, float("nan"), 0.0), 2.1)  # a bad pose
    pipeline.on_message("/unknown", rm.string("ignored"), receive_time=1.5)
    pipeline.tick(2.0)
    counts = pipeline.stats.as_dict()
    assert counts["messages"] == 14
    assert counts["stored"] == 1
    assert counts["dropped_error"] == 1
    assert set(counts) >= {
        "messages",
        "stored",
        "body_states",
        "dropped_no_pose",
        "dropped_stale",
        "dropped_empty",
        "deduplicated",
        "triggers",
    }
