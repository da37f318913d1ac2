"""IngestPipeline: layer messages + poses + triggers → observations in the memory.

Fed the same way by the live node, by bag replay and by tests: ``on_message`` for every message
(cheap, any thread), ``tick`` whenever the trigger fires (on the thread that owns the memory).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from emem_graph.errors import InvalidInputError
from ros_bridge.config import EMPTY, BridgeConfig, LayerConfig
from ros_bridge.converters import convert
from ros_bridge.messages import stamp_seconds
from ros_bridge.pose import Pose, PoseTracker

if TYPE_CHECKING:
    from emem_graph.memory import SpatioTemporalMemory

log = logging.getLogger(__name__)

SOURCE_TYPE = "ros"
"""source_type of the perception observations the bridge stores."""


@dataclass
class IngestStats:
    """Counters of what the pipeline did with the messages it was given."""

    messages: int = 0
    """Messages given to on_message (layers, position and trigger topics)."""
    stored: int = 0
    """Perception observations stored (memory.add)."""
    body_states: int = 0
    """Internal-state readings stored (memory.add_body_state)."""
    dropped_no_pose: int = 0
    """Layer messages with no pose within position.max_age of their time."""
    dropped_stale: int = 0
    """Layer messages older than their layer's max_age when the trigger fired."""
    dropped_empty: int = 0
    """Layer messages whose text was empty (empty string, NaN, nothing detected)."""
    dropped_error: int = 0
    """Messages that could not be used: a template that does not fit, a bad pose message,
    text the memory refuses (too long...)."""
    deduplicated: int = 0
    """Layer messages skipped because their text was unchanged and the robot had not moved."""
    superseded: int = 0
    """Layer messages replaced by a newer one on the same layer before a trigger (and, at the
    last tick, held messages that never got a pose sample after their time, when a newer message
    of their layer is there)."""
    awaited_pose: int = 0
    """Times a trigger kept a layer message for a later one because no pose sample newer than
    the message had arrived yet (so its pose is interpolated, not the last older sample)."""
    triggers: int = 0
    """Times tick() ran."""

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return asdict(self)


@dataclass
class _Pending:
    msg: Any
    stamp: float
    has_stamp: bool
    topic: str


@dataclass
class _Held:
    """A layer message a trigger took that waits for a pose sample after its time."""

    message: _Pending
    taken_at: float
    """The time of the trigger that took it: its freshness is judged then, not when stored."""


@dataclass
class _Stored:
    text: str
    x: float
    y: float


class IngestPipeline:
    """Turns the bridge's topics into observations.

    Args:
        memory: the SpatioTemporalMemory written by tick().
        config: the bridge configuration (layers, position, trigger).
        clock: float seconds for receive times and for tick()/due() without ``now``
            (default time.time; the node passes ROS time, bag replay bag time).
    """

    def __init__(
        self,
        memory: SpatioTemporalMemory,
        config: BridgeConfig,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.memory = memory
        self.config = config
        self.clock: Callable[[], float] = clock or time.time
        self.stats = IngestStats()
        position = config.position
        self.poses: PoseTracker | None = (
            PoseTracker(position.max_age, position.history_s) if position is not None else None
        )
        self._layers_by_topic: dict[str, list[LayerConfig]] = {}
        for layer in config.layers:
            self._layers_by_topic.setdefault(layer.topic, []).append(layer)
        self._pending: dict[str, _Pending] = {}
        self._held: dict[str, list[_Held]] = {}  # touched by tick() only (the memory's thread)
        self._last_stored: dict[str, _Stored] = {}
        self._last_tick: float | None = None
        self._lock = threading.Lock()

    # --- wiring --------------------------------------------------------------------------------

    def subscriptions(self) -> list[tuple[str, str]]:
        """(topic, type name) of every topic to subscribe to: each layer's, the position's and
        the trigger's, each topic once, in that order."""
        topics: dict[str, str] = {}
        for layer in self.config.layers:
            topics.setdefault(layer.topic, layer.type)
        if self.config.position is not None:
            topics.setdefault(self.config.position.topic, self.config.position.type)
        trigger = self.config.trigger
        if trigger.topic is not None:
            topics.setdefault(trigger.topic, trigger.type or EMPTY)
        return list(topics.items())

    # --- any thread ----------------------------------------------------------------------------

    def on_message(self, topic: str, msg: Any, receive_time: float | None = None) -> bool:
        """Take one message (never touches the memory; safe from any thread).

        A position message becomes a pose sample; a layer message replaces its layer's pending
        message. Timestamps are the header stamp, else ``receive_time`` (default: the clock).

        Returns:
            True when ``topic`` is the trigger topic (the caller then runs tick()).
        """
        received = self.clock() if receive_time is None else float(receive_time)
        stamp = stamp_seconds(msg)
        with self._lock:
            self.stats.messages += 1
        position = self.config.position
        if position is not None and topic == position.topic and self.poses is not None:
            try:
                self.poses.update(position.type, msg, received)
            except (InvalidInputError, AttributeError) as exc:
                with self._lock:
                    self.stats.dropped_error += 1
                log.warning("pose message on %s ignored: %s", topic, exc)
        layers = self._layers_by_topic.get(topic)
        if layers:
            pending = _Pending(
                msg=msg,
                stamp=stamp if stamp is not None else received,
                has_stamp=stamp is not None,
                topic=topic,
            )
            with self._lock:
                for layer in layers:
                    if layer.name in self._pending:
                        self.stats.superseded += 1
                    self._pending[layer.name] = pending
        return topic == self.config.trigger.topic

    def due(self, now: float | None = None) -> bool:
        """Whether the rate trigger should fire at ``now`` (always False for a topic trigger)."""
        rate = self.config.trigger.rate_hz
        if rate is None:
            return False
        now = self.clock() if now is None else now
        with self._lock:
            last = self._last_tick
        return last is None or now - last >= 1.0 / rate - 1e-9

    # --- the memory's thread -------------------------------------------------------------------

    def tick(self, now: float | None = None, final: bool = False) -> int:
        """Store every layer's pending message once (the trigger fired at ``now``).

        Each trigger takes at most one message per layer, the newest since the previous
        trigger, and uses it at most once: stored, or dropped as stale (older than its layer's
        max_age at ``now``), empty, without a pose at its time, or unchanged since the layer's
        last observation while the robot stood still. Must run on the thread that owns the
        memory.

        One exception keeps positions right when odometry lags: a message newer than the newest
        pose sample (which is itself within position.max_age of it) is held, so that its pose is
        interpolated between the samples either side of its time instead of taken from the older
        one. A later trigger stores it as soon as a sample at or after its time has arrived,
        before that trigger's own message, in the place of the trigger that took it (so a layer
        never stores more messages than triggers fired). It waits at most position.max_age past
        its time and past the trigger that took it (then the older sample is used), and not at
        all when ``final`` (the last tick: shutdown, end of a bag). A newer message never
        replaces it, except at the last tick, when it has no sample after its time and a newer
        message of its layer is there.

        Returns:
            How many observations (perception and body state) were stored.
        """
        now = self.clock() if now is None else float(now)
        with self._lock:
            self.stats.triggers += 1
            self._last_tick = now
            pending, self._pending = self._pending, {}
        stored = 0
        for layer in self.config.layers:
            item = pending.get(layer.name)
            waiting: list[_Held] = []
            for held in self._held.pop(layer.name, []):
                if not final and self._still_waits(held, now):
                    waiting.append(held)
                elif final and item is not None and not self._pose_known(held.message):
                    # No sample after it will come: the newer message takes its place.
                    self._count("superseded")
                elif self._store(layer, held.message, held.taken_at):
                    stored += 1
            if item is not None:
                fresh = now - item.stamp <= layer.max_age  # a stale one is dropped at once
                if not final and fresh and self._awaits_pose(item, now):
                    waiting.append(_Held(item, taken_at=now))
                elif self._store(layer, item, now):
                    stored += 1
            if waiting:
                self._held[layer.name] = waiting
                self._count("awaited_pose", len(waiting))
        return stored

    def store_held(self) -> int:
        """Store the messages still held for a pose sample after their time, each with the pose
        known now: the end of a bag or shutdown under a topic trigger, where no last tick runs
        (it would store the messages no trigger took). Must run on the memory's thread.

        Returns:
            How many observations were stored.
        """
        stored = 0
        for layer in self.config.layers:
            for held in self._held.pop(layer.name, []):
                stored += bool(self._store(layer, held.message, held.taken_at))
        return stored

    def _awaits_pose(self, item: _Pending, now: float) -> bool:
        position = self.config.position
        if self.poses is None or position is None:
            return False
        latest = self.poses.latest()
        if latest is None or latest.stamp is None:
            return False
        gap = item.stamp - latest.stamp
        return 0.0 < gap <= position.max_age and now - item.stamp <= position.max_age

    def _still_waits(self, held: _Held, now: float) -> bool:
        # Bounded on the trigger's clock too: with header stamps far ahead of it, a message
        # would otherwise wait (and held ones pile up) until the clock caught up.
        position = self.config.position
        return (
            position is not None
            and now - held.taken_at <= position.max_age
            and self._awaits_pose(held.message, now)
        )

    def _pose_known(self, item: _Pending) -> bool:
        """Whether a pose sample at or after the message's time has arrived."""
        latest = self.poses.latest() if self.poses is not None else None
        return latest is not None and latest.stamp is not None and latest.stamp >= item.stamp

    def _store(self, layer: LayerConfig, item: _Pending, taken_at: float) -> bool:
        # Freshness is judged at the trigger that took the message, even when stored later.
        if taken_at - item.stamp > layer.max_age:
            self._count("dropped_stale")
            return False
        try:
            text = convert(layer, item.msg)
        except InvalidInputError as exc:
            self._count("dropped_error")
            log.warning("layer %s: %s", layer.name, exc)
            return False
        if text is None:
            self._count("dropped_empty")
            return False
        pose = self._pose_at(layer, item.stamp)
        if pose is None:
            self._count("dropped_no_pose")
            return False
        if self._unchanged(layer, text, pose):
            self._count("deduplicated")
            return False
        metadata: dict[str, Any] = {"topic": item.topic, "ros_type": layer.type}
        if pose.frame_id:
            metadata["frame_id"] = pose.frame_id
        if self.poses is not None and pose.stamp is not None:
            metadata["yaw"] = round(pose.yaw, 6)
        if not item.has_stamp:
            metadata["stamp"] = "receive_time"
        try:
            if layer.internal_state:
                self.memory.add_body_state(
                    text,
                    layer.name,
                    pose.x,
                    pose.y,
                    pose.z,
                    timestamp=item.stamp,
                    metadata=metadata,
                )
            else:
                self.memory.add(
                    text,
                    pose.x,
                    pose.y,
                    pose.z,
                    timestamp=item.stamp,
                    layer_name=layer.name,
                    source_type=SOURCE_TYPE,
                    metadata=metadata,
                )
        except InvalidInputError as exc:
            self._count("dropped_error")
            log.warning("layer %s: the memory refused the observation: %s", layer.name, exc)
            return False
        self._last_stored[layer.name] = _Stored(text, pose.x, pose.y)
        self._count("body_states" if layer.internal_state else "stored")
        return True

    def _pose_at(self, layer: LayerConfig, t: float) -> Pose | None:
        if self.poses is None:  # no localisation configured: everything at the origin
            return Pose(0.0, 0.0, 0.0, 0.0, None, None)
        pose = self.poses.at(t)
        if pose is None and layer.internal_state:
            # A body state needs no place: store it at the latest pose, or the origin.
            return self.poses.latest() or Pose(0.0, 0.0, 0.0, 0.0, None, None)
        return pose

    def _unchanged(self, layer: LayerConfig, text: str, pose: Pose) -> bool:
        trigger = self.config.trigger
        dedupe = trigger.dedupe if layer.dedupe is None else layer.dedupe
        last = self._last_stored.get(layer.name)
        if not dedupe or last is None or last.text != text:
            return False
        return math.hypot(pose.x - last.x, pose.y - last.y) <= trigger.dedupe_distance

    def _count(self, counter: str, n: int = 1) -> None:
        with self._lock:
            setattr(self.stats, counter, getattr(self.stats, counter) + n)
