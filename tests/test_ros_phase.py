"""The rate trigger in phase with a layer: a message a trigger holds for its pose is stored by a
later trigger once a pose sample after its time has arrived, not replaced by the next message.

A trigger that fires on a caption's arrival (bag replay locks onto whichever message opens each
period; a live timer can line up the same way) finds odometry older than the caption and holds
it. The next caption used to replace the held one before any trigger stored it: a healthy bag
kept 1 caption in 20. Bags here are written with rosbags and replayed through replay_bag; the
pipeline tests drive IngestPipeline by hand. Memories use the hashing embedder (no model).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import ros_messages as rm
from test_ros_hostile import ODOM, STRING, T0, Message, write_bag

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.models import Observation
from ros_bridge.bag import ReplaySummary, replay_bag
from ros_bridge.config import BridgeConfig, TriggerConfig
from ros_bridge.pipeline import IngestPipeline

SPEED = 0.2
"""m/s along +x of the robot in every test: odometry x = SPEED * (stamp - T0)."""


def bridge_config(rate_hz: float = 1.0, layer_max_age: float = 5.0) -> BridgeConfig:
    return BridgeConfig.build(
        {
            "memory_dir": "unused",
            "position": {"topic": "/odom", "type": ODOM, "max_age": 1.0, "history_s": 30.0},
            "trigger": {"rate_hz": rate_hz},
            "layers": [
                {"name": "scene", "topic": "/scene", "type": STRING, "max_age": layer_max_age}
            ],
        }
    )


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[SpatioTemporalMemory]:
    opened = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(tmp_path / "memory")),
        embedding_provider=HashingEmbedder(384),
    )
    yield opened
    opened.close()


def captions(memory: SpatioTemporalMemory) -> list[Observation]:
    """The scene observations the memory holds, oldest first."""
    memory.flush()
    return memory.store.observations_in_time(
        None, None, layer="scene", newest_first=False, limit=10_000
    )


def odometry(t: float) -> Message:
    return ("/odom", ODOM, t, rm.odometry(t, SPEED * (t - T0), 0.0))


def caption(t: float) -> Message:
    return ("/scene", STRING, t, rm.string(f"the view at {t - T0:.2f} s"))


def replay(tmp_path: Path, memory: SpatioTemporalMemory, messages: list[Message]) -> ReplaySummary:
    bag = write_bag(tmp_path / "bag", sorted(messages, key=lambda m: m[2]))
    return replay_bag(bag, bridge_config(), memory, progress=False)


def assert_interpolated(stored: list[Observation]) -> None:
    """Every observation is where the robot was at its time: interpolated between the samples
    either side, not the last sample before it (0.1 m off here)."""
    for observation in stored:
        assert observation.x == pytest.approx(SPEED * (observation.timestamp - T0), abs=1e-6)


def assert_each_caption_counted_once(summary: ReplaySummary, sent: int) -> None:
    s = summary.stats
    accounted = (
        s.stored + s.dropped_no_pose + s.dropped_stale + s.dropped_empty + s.dropped_error
        + s.deduplicated + s.superseded
    )  # fmt: skip
    assert accounted == sent
    assert s.stored <= s.triggers  # the rate bound: one message per layer per trigger


# --- bags ----------------------------------------------------------------------------------


def test_captions_10_ms_before_their_odometry_are_all_stored_once_odometry_runs(
    tmp_path: Path, memory: SpatioTemporalMemory
) -> None:
    """A bag of odometry at 2 Hz, a caption each second 10 ms before a sample. The
    very first caption comes before any odometry (no pose: dropped, as documented); each of
    the 20 after it is held by the trigger it opens and stored by the next one."""
    sent = [caption(T0 + k + 0.01) for k in range(21)]
    poses = [odometry(T0 + i * 0.5 + 0.02) for i in range(42)]
    summary = replay(tmp_path, memory, sent + poses)
    s = summary.stats
    assert s.stored == 20 and s.dropped_no_pose == 1 and s.superseded == 0
    assert s.awaited_pose == 20  # the trigger did lock onto the captions
    stored = captions(memory)
    assert [o.timestamp for o in stored] == [pytest.approx(T0 + k + 0.01) for k in range(1, 21)]
    assert_interpolated(stored)
    assert_each_caption_counted_once(summary, len(sent))


def test_captions_10_ms_after_their_odometry_survive_a_lost_odometry_sample(
    tmp_path: Path, memory: SpatioTemporalMemory
) -> None:
    """Odometry opens each period until one sample is lost (at 5.0 s): from then on the
    trigger fires on the captions, each a little newer than the newest sample, and holds it.

    Only the caption of 4.01 s is superseded, by the rate: replay fires the trigger due at 5.0 s
    on the next message (the caption of 5.01 s), so both captions fall between two triggers."""
    sent = [caption(T0 + k + 0.01) for k in range(20)]
    poses = [odometry(T0 + i * 0.5) for i in range(42) if i != 10]
    summary = replay(tmp_path, memory, sent + poses)
    s = summary.stats
    assert s.stored == 19 and s.superseded == 1 and s.dropped_no_pose == 0
    assert s.awaited_pose == 15  # every caption from the lost sample on was held
    stored = captions(memory)
    expected = [t for _, _, t, _ in sent if round(t - T0, 2) != 4.01]
    assert [o.timestamp for o in stored] == [pytest.approx(t) for t in expected]
    assert_interpolated(stored)
    assert_each_caption_counted_once(summary, len(sent))


def test_odometry_slower_than_captions_stores_one_caption_per_trigger(
    tmp_path: Path, memory: SpatioTemporalMemory
) -> None:
    """Captions at 5 Hz, odometry at 1 Hz half a second out of phase, the trigger at 1 Hz:
    every trigger's caption is stored (the newest at that trigger, interpolated), the rest are
    superseded as the rate allows, and never two captions of one trigger period."""
    sent = [caption(T0 + j * 0.2 + 0.01) for j in range(100)]
    poses = [odometry(T0 + m + 0.5) for m in range(21)]
    summary = replay(tmp_path, memory, sent + poses)
    s = summary.stats
    # Triggers on 20 captions (the first before any odometry: no pose), on the last odometry
    # sample (20.5 s, taking the caption of 19.81 s) and the closing one with nothing left.
    assert s.triggers == 22 and s.dropped_no_pose == 1
    assert s.stored == 20 and s.superseded == 100 - 21
    stored = captions(memory)
    expected = [T0 + k + 0.01 for k in range(1, 20)] + [T0 + 19.81]
    assert [o.timestamp for o in stored] == [pytest.approx(t) for t in expected]
    assert_interpolated(stored)
    assert_each_caption_counted_once(summary, len(sent))


# --- the pipeline, as the live node drives it ------------------------------------------------


def test_a_timer_in_phase_with_the_captions_stores_every_caption(
    memory: SpatioTemporalMemory,
) -> None:
    """The live node's timer firing just after each caption arrives, odometry 10 ms later:
    each trigger holds its caption and stores the previous one (now between two samples)."""
    pipeline = IngestPipeline(memory, bridge_config())
    pipeline.on_message("/odom", rm.odometry(T0 - 0.48, SPEED * -0.48, 0.0), T0 - 0.48)
    results = []
    for k in range(10):
        t = T0 + k + 0.01
        pipeline.on_message("/scene", rm.string(f"view {k}"), receive_time=t)
        results.append(pipeline.tick(t))
        for pose_t in (t + 0.01, t + 0.51):
            pipeline.on_message("/odom", rm.odometry(pose_t, SPEED * (pose_t - T0), 0.0), pose_t)
    assert results == [0] + [1] * 9
    assert pipeline.tick(T0 + 10.01, final=True) == 1
    stored = captions(memory)
    assert [o.text for o in stored] == [f"view {k}" for k in range(10)]
    assert_interpolated(stored)
    assert pipeline.stats.superseded == 0 and pipeline.stats.awaited_pose == 10


def test_a_trigger_as_fast_as_the_captions_keeps_several_held_until_odometry_comes(
    memory: SpatioTemporalMemory,
) -> None:
    """Trigger and captions at 2 Hz, odometry at 1 Hz: a caption is still held when the next
    one is taken; both wait, and the next sample places both."""
    pipeline = IngestPipeline(memory, bridge_config(rate_hz=2.0))
    pipeline.on_message("/odom", rm.odometry(T0 + 0.02, SPEED * 0.02, 0.0), T0 + 0.02)
    for j in range(1, 13):
        t = T0 + j * 0.5 + 0.01
        pipeline.on_message("/scene", rm.string(f"view {j}"), receive_time=t)
        assert pipeline.due(t)
        pipeline.tick(t)
        if j % 2 == 1:  # the sample 10 ms after every second caption
            pose_t = t + 0.51
            pipeline.on_message("/odom", rm.odometry(pose_t, SPEED * (pose_t - T0), 0.0), pose_t)
    pipeline.tick(T0 + 6.6, final=True)
    stored = captions(memory)
    assert [o.text for o in stored] == [f"view {j}" for j in range(1, 13)]
    assert_interpolated(stored)
    assert pipeline.stats.superseded == 0
    assert pipeline.stats.stored <= pipeline.stats.triggers


def test_a_held_message_is_judged_fresh_at_the_trigger_that_took_it(
    memory: SpatioTemporalMemory,
) -> None:
    """A layer max_age (0.5 s) shorter than the trigger period (1 s): the held caption is
    stored by the next trigger, not dropped as stale for the time it waited."""
    pipeline = IngestPipeline(memory, bridge_config(layer_max_age=0.5))
    pipeline.on_message("/odom", rm.odometry(T0 + 0.5, SPEED * 0.5, 0.0), T0 + 0.5)
    pipeline.on_message("/scene", rm.string("a door"), receive_time=T0 + 1.0)
    assert pipeline.tick(T0 + 1.0) == 0
    pipeline.on_message("/odom", rm.odometry(T0 + 1.5, SPEED * 1.5, 0.0), T0 + 1.5)
    assert pipeline.tick(T0 + 2.0) == 1
    (door,) = captions(memory)
    assert door.x == pytest.approx(SPEED * 1.0)
    assert pipeline.stats.dropped_stale == 0
    # A message already stale when a trigger takes it is still dropped.
    pipeline.on_message("/scene", rm.string("old news"), receive_time=T0 + 2.2)
    assert pipeline.tick(T0 + 3.0) == 0 and pipeline.stats.dropped_stale == 1


def test_a_held_message_waits_at_most_max_age_of_trigger_time(
    memory: SpatioTemporalMemory,
) -> None:
    """Header stamps far ahead of the trigger's clock (a robot on another clock) and odometry
    that stops: the held message waits position.max_age of trigger time, then takes the older
    sample, instead of waiting (and piling up) until the clock catches up with its stamp."""
    ahead = T0 + 100.0
    config = bridge_config().model_dump()
    config["layers"] = [
        {"name": "objects", "topic": "/detections", "type": "vision_msgs/msg/Detection2DArray"}
    ]
    pipeline = IngestPipeline(memory, BridgeConfig.build(config))
    pipeline.on_message("/odom", rm.odometry(ahead, 3.0, 0.0), receive_time=T0)
    pipeline.on_message("/detections", rm.detections(ahead + 0.3, ("chair", 0.9)), T0)
    assert pipeline.tick(T0) == 0
    assert pipeline.tick(T0 + 0.5) == 0
    assert pipeline.tick(T0 + 1.1) == 1
    assert pipeline.stats.awaited_pose == 2
    memory.flush()
    (chair,) = memory.store.observations_in_time(None, None, layer="objects", limit=10)
    assert chair.x == pytest.approx(3.0) and chair.timestamp == pytest.approx(ahead + 0.3)


def test_a_topic_trigger_stores_the_message_it_held_when_the_bag_ends(
    tmp_path: Path, memory: SpatioTemporalMemory
) -> None:
    """A topic trigger (each caption triggers) takes the last caption, newer than the last
    odometry sample, and holds it for a later sample; the bag ends first: it is stored with
    the pose known then (before, no last tick ran and it was lost)."""
    config = bridge_config().model_copy(
        update={"trigger": TriggerConfig(rate_hz=None, topic="/scene", type=STRING)}
    )
    messages = [odometry(T0 + k) for k in range(4)] + [caption(T0 + k + 0.5) for k in range(4)]
    bag = write_bag(tmp_path / "bag", sorted(messages, key=lambda m: m[2]))
    summary = replay_bag(bag, config, memory, progress=False)
    assert [o.text for o in captions(memory)] == [f"the view at {k + 0.5:.2f} s" for k in range(4)]
    assert summary.stats.awaited_pose >= 1
