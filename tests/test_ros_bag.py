"""Bag replay end to end: patrol bags written with rosbags (ROS 2 sqlite3 and MCAP, ROS 1),
replayed through the bridge's pipeline into a real memory (MiniLM), then asked."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from rosbags.highlevel import AnyReader

from emem_graph import SentenceTransformerEmbedder
from emem_graph.cli import main
from emem_graph.errors import InvalidInputError
from emem_graph.evals.demo import run_demo
from emem_graph.evals.house import START_TIME
from emem_graph.evals.patrol_bag import (
    BATTERY_TOPIC,
    CAPTION_TOPIC,
    DETECTIONS_TOPIC,
    ODOM_TOPIC,
    TEMPERATURE_TOPIC,
    PatrolBagInfo,
    patrol_config,
    write_patrol_bag,
)
from ros_bridge.bag import BagError, ReplaySummary, read_rate, replay_bag
from ros_bridge.config import BridgeConfig

BAG_KINDS = {
    "sqlite3": {"storage": "sqlite3", "ros_version": 2, "name": "patrol"},
    "mcap": {"storage": "mcap", "ros_version": 2, "name": "patrol"},
    "rosbag1": {"storage": "sqlite3", "ros_version": 1, "name": "patrol.bag"},
}
DURATION_S = 120.0
LAYER_TOPICS = (CAPTION_TOPIC, DETECTIONS_TOPIC, TEMPERATURE_TOPIC, BATTERY_TOPIC)


def _write(directory: Path, kind: str, **options: Any) -> PatrolBagInfo:
    spec = BAG_KINDS[kind]
    return write_patrol_bag(
        directory / str(spec["name"]),
        storage=spec["storage"],  # type: ignore[arg-type]
        ros_version=int(spec["ros_version"]),
        duration_s=options.pop("duration_s", DURATION_S),
        **options,
    )


@pytest.fixture(scope="module", params=list(BAG_KINDS))
def replayed(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    minilm: SentenceTransformerEmbedder,
) -> Any:
    """A patrol bag of each kind replayed into its own memory (opened by replay_bag, closed at
    its end), and the memory reopened for the questions."""
    kind = request.param
    directory = tmp_path_factory.mktemp(kind)
    info = _write(directory, kind)
    config = patrol_config(directory / "memory")
    summary = replay_bag(info.path, config, progress=False, embedding_provider=minilm)
    memory = config.open_memory(embedding_provider=minilm)
    yield info, summary, memory
    memory.close()


def test_patrol_bag_holds_what_its_ground_truth_says(tmp_path: Path) -> None:
    for kind in BAG_KINDS:
        info = _write(tmp_path / kind, kind, duration_s=20.0)
        with AnyReader([info.path]) as reader:
            counts = {c.topic: c.msgcount for c in reader.connections}
            types = {c.topic: c.msgtype for c in reader.connections}
            first = next(m for m in reader.messages() if m[0].topic == DETECTIONS_TOPIC)
            detections = reader.deserialize(first[2], first[0].msgtype)
        assert counts == info.counts
        assert types == info.topics
        assert counts[ODOM_TOPIC] == 401  # 20 Hz over 20 s, both ends
        assert detections.detections[0].results[0].hypothesis.class_id  # type: ignore[attr-defined]
        assert info.storage == ("rosbag1" if kind == "rosbag1" else kind)


def test_replay_reads_every_configured_message_in_time_order(replayed: Any) -> None:
    info, summary, _ = replayed
    assert isinstance(summary, ReplaySummary)
    assert summary.topics == info.counts
    assert summary.messages == info.messages == summary.stats.messages
    assert summary.start == pytest.approx(info.start)
    assert summary.end == pytest.approx(info.end)
    assert summary.missing_topics == []
    assert summary.undecodable == 0
    assert summary.elapsed_s > 0 and summary.messages_per_s > 0
    assert summary.observations_per_s == pytest.approx(summary.observations / summary.elapsed_s)
    # A rate trigger at 1 Hz over 120 s of bag time (plus the closing one).
    assert 120 <= summary.stats.triggers <= 122


def test_every_layer_message_is_stored_or_counted_as_dropped(replayed: Any) -> None:
    info, summary, _ = replayed
    s = summary.stats
    layer_messages = sum(info.counts[topic] for topic in LAYER_TOPICS)
    accounted = (
        s.stored + s.body_states + s.dropped_no_pose + s.dropped_stale + s.dropped_empty
        + s.dropped_error + s.deduplicated + s.superseded
    )  # fmt: skip
    assert accounted == layer_messages
    assert s.dropped_no_pose == 0 and s.dropped_error == 0
    # Captions (every 2 s) are never superseded at 1 Hz: each non-empty one is stored once.
    assert s.dropped_empty >= info.empty_captions > 0
    assert s.body_states == info.counts[BATTERY_TOPIC] + info.counts[TEMPERATURE_TOPIC]


def test_captions_are_stored_where_the_robot_was_at_their_time(replayed: Any) -> None:
    info, _, memory = replayed
    stored = memory.store.observations_in_time(None, None, layer="captions", limit=10_000)
    expected = {round(c.t, 3): c for c in info.captions if c.text}
    assert len(stored) == len(expected)
    for observation in stored:
        truth = expected[round(observation.timestamp, 3)]
        assert observation.text == truth.text
        assert observation.x == pytest.approx(truth.robot_x, abs=0.01)
        assert observation.y == pytest.approx(truth.robot_y, abs=0.01)
        assert observation.metadata["topic"] == CAPTION_TOPIC
        assert observation.metadata["frame_id"] == "map"


def test_detections_take_the_pose_at_their_header_stamp_not_their_arrival(replayed: Any) -> None:
    info, _, memory = replayed
    stored = memory.store.observations_in_time(None, None, layer="detections", limit=10_000)
    assert stored
    for observation in stored:
        x, y, _ = info.pose_at(observation.timestamp)
        assert (observation.x, observation.y) == pytest.approx((x, y), abs=0.01)
        # Stamped at capture (a quarter past each half second), received 0.15 s later.
        assert (observation.timestamp - START_TIME) % 0.5 == pytest.approx(0.25, abs=1e-3)
        assert "cat" not in observation.text  # the low-score false positive is below 0.5


def test_semantic_search_finds_captions_in_the_right_room(replayed: Any) -> None:
    info, _, memory = replayed
    answer = memory.semantic_search("a grey sofa with a blanket", n_results=3, layer="captions")
    first = answer.splitlines()[0]
    assert "grey sofa with a blanket" in first
    x, y = (float(v) for v in first.split("(")[1].split(")")[0].split(","))
    sofa = next(t for t in info.things if t.name == "sofa")
    assert math.dist((x, y), (sofa.x, sofa.y)) <= 3.6  # seen from within the view radius
    assert math.dist((x, y), info.rooms["living room"]) < math.dist((x, y), info.rooms["kitchen"])


def test_body_status_shows_the_last_battery_and_temperature(replayed: Any) -> None:
    info, _, memory = replayed
    status = memory.body_status()
    assert f"battery {info.last_battery_percent:.0f}%" in status
    assert "discharging" in status
    assert f"temperature: {info.last_temperature:.2f}" in status


def test_spatial_query_at_a_room_returns_its_observations(replayed: Any) -> None:
    info, _, memory = replayed
    x, y = info.rooms["office"]
    answer = memory.spatial_query(x, y, radius=1.5, n_results=50, layer="captions")
    office = {t.caption for t in info.things if math.dist((t.x, t.y), (x, y)) <= 1.5 + 3.5}
    lines = answer.splitlines()
    assert lines
    assert all(any(caption in line for caption in office) for line in lines)


def test_replay_with_a_topic_trigger_stores_on_each_trigger_message(
    tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    info = _write(tmp_path, "mcap", duration_s=30.0)
    data = patrol_config(tmp_path / "memory").model_dump()
    data["trigger"] = {"topic": CAPTION_TOPIC}
    config = BridgeConfig.build(data)
    summary = replay_bag(info.path, config, progress=False, embedding_provider=minilm)
    assert summary.stats.triggers == info.counts[CAPTION_TOPIC]
    assert summary.stats.stored >= sum(1 for c in info.captions if c.text)


def test_a_bag_without_odometry_drops_every_perception_message_for_no_pose(
    tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    info = _write(tmp_path, "sqlite3", duration_s=30.0, odometry=False)
    config = patrol_config(tmp_path / "memory")
    with pytest.raises(BagError, match=r"no topic /odom.*--allow-missing"):
        replay_bag(info.path, config, progress=False, embedding_provider=minilm)
    summary = replay_bag(
        info.path, config, progress=False, allow_missing=True, embedding_provider=minilm
    )
    s = summary.stats
    assert summary.missing_topics == [ODOM_TOPIC]
    assert s.stored == 0
    perception = info.counts[CAPTION_TOPIC] + info.counts[DETECTIONS_TOPIC]
    assert s.dropped_no_pose + s.dropped_empty + s.superseded == perception
    assert s.dropped_no_pose > 0
    assert s.body_states == info.counts[BATTERY_TOPIC] + info.counts[TEMPERATURE_TOPIC]
    assert "no pose" in summary.describe() and "/odom" in summary.describe()


def test_bad_bags_and_topics_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    config = patrol_config(tmp_path / "memory")
    with pytest.raises(BagError, match="no bag at"):
        replay_bag(tmp_path / "nowhere", config, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match="not a readable ROS bag"):
        replay_bag(tmp_path / "empty", config, progress=False)
    info = _write(tmp_path, "sqlite3", duration_s=5.0)
    data = config.model_dump()
    data["position"]["type"] = "geometry_msgs/msg/PoseStamped"
    with pytest.raises(BagError, match=r"/odom was recorded as nav_msgs/msg/Odometry.*PoseStamped"):
        replay_bag(info.path, BridgeConfig.build(data), progress=False)
    data = config.model_dump()
    for layer in data["layers"]:
        layer["topic"] = f"/other{layer['topic']}"
    data["position"]["topic"] = "/other/odom"
    with pytest.raises(BagError, match=r"none of the configured topics.*it has: /camera/caption"):
        replay_bag(info.path, BridgeConfig.build(data), progress=False, allow_missing=True)
    assert not (tmp_path / "memory").exists()  # refused before any memory was opened
    with pytest.raises(BagError, match="no bag at"):
        read_rate(tmp_path / "nowhere")


def test_writer_refuses_an_existing_path_and_a_ros1_name_without_bag(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="exists already"):
        write_patrol_bag(tmp_path, duration_s=1.0)
    with pytest.raises(InvalidInputError, match=r"must end in \.bag"):
        write_patrol_bag(tmp_path / "run1", ros_version=1, duration_s=1.0)


def test_read_rate_reads_the_same_topics(tmp_path: Path) -> None:
    info = _write(tmp_path, "mcap", duration_s=10.0)
    config = patrol_config(tmp_path / "memory")
    assert read_rate(info.path, config) > 0
    assert read_rate(info.path, [CAPTION_TOPIC]) > 0
    assert read_rate(info.path, ["/not/there"]) == 0.0


def test_cli_make_bag_then_ingest_bag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag = tmp_path / "run.bag"
    config = tmp_path / "bridge.yaml"
    memory = tmp_path / "memory"
    argv = ["make-bag", str(bag), "--storage", "rosbag1", "--duration", "20"]
    assert main([*argv, "--config", str(config), "--memory", str(memory)]) == 0
    out = capsys.readouterr().out
    assert "Wrote" in out and f"ingest-bag {bag} --config {config}" in out
    assert main(["-q", "ingest-bag", str(bag), "--config", str(config), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["messages"] == 401 + 10 + 40 + 4 + 20
    assert figures["observations"] > 0 and figures["storage"] == "rosbag1"
    assert figures["memory_dir"] == str(memory)
    other = tmp_path / "other-memory"
    argv = ["-q", "ingest-bag", str(bag), "--config", str(config), "--memory", str(other)]
    assert main([*argv, "--read-rate", "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    assert f"into {other}" in out and "rosbags alone reads" in out
    assert main(["-q", "ingest-bag", str(tmp_path / "missing"), "--config", str(config)]) == 2
    assert "no bag at" in capsys.readouterr().err
    assert main(["make-bag", str(tmp_path / "again"), "--config", str(config)]) == 2
    assert "exists already" in capsys.readouterr().err


def test_demo_replays_the_patrol_from_a_bag(
    tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    lines: list[str] = []
    run_demo(
        tmp_path / "demo", embedder=minilm, rounds=1, echo=lines.append, progress=False,
        from_bag=True,
    )  # fmt: skip
    text = "\n".join(lines)
    assert "Replayed" in text and "no pose" in text
    assert ">>> body_status()" in text and "[battery] battery" in text
    assert "coffee machine" in text
    shutil.rmtree(tmp_path / "demo")


def test_replay_reads_exactly_the_topics_the_pipeline_subscribes_to(tmp_path: Path) -> None:
    from ros_bridge.bag import _subscriptions
    from ros_bridge.pipeline import IngestPipeline

    rate = patrol_config(tmp_path / "memory")
    data = rate.model_dump()
    data["trigger"] = {"topic": "/tick"}
    for config in (rate, BridgeConfig.build(data)):
        pipeline = IngestPipeline(None, config)  # type: ignore[arg-type]  # never touched here
        assert _subscriptions(config) == pipeline.subscriptions()
