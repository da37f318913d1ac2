"""The robot's pose over time: pose messages → samples → the pose at any message's time."""

from __future__ import annotations

import bisect
import logging
import math
import threading
from dataclasses import dataclass, replace
from typing import Any

from emem_graph import validation
from emem_graph.errors import InvalidInputError
from ros_bridge.config import ODOMETRY, POSE_STAMPED, POSE_WITH_COVARIANCE_STAMPED
from ros_bridge.messages import frame_id, normalise_type, stamp_seconds

log = logging.getLogger(__name__)

CONFIRM_SAMPLES = 3
"""Samples that must agree on a new time before the tracker follows a clock jump, and samples
on the current clock after which the ones held apart are dropped as outliers."""

MIN_CLOCK_JUMP_S = 10.0
"""Least distance (s) from the current clock's samples at which a sample is held apart (the
larger of this and history_s), so that odometry sparser than history_s still flows."""


@dataclass(frozen=True)
class Pose:
    """A planar-yaw pose: position in metres, yaw in radians (from the full quaternion), the
    frame the pose is given in and its time in float seconds (None when the message had none)."""

    x: float
    y: float
    z: float
    yaw: float
    frame_id: str | None
    stamp: float | None


def yaw_from_quaternion(x: float, y: float, z: float, w: float) -> float:
    """Rotation about the z axis (radians, in (-pi, pi]) of the quaternion (x, y, z, w).

    Uses every component (not only z and w), so a pose pitched or rolled still gives the right
    heading; the quaternion does not need to be normalised.
    """
    return math.atan2(2.0 * (w * z + x * y), w * w + x * x - y * y - z * z)


def pose_from_message(type_name: str, msg: Any) -> Pose:
    """The pose held by an Odometry, PoseStamped or PoseWithCovarianceStamped message.

    Raises:
        InvalidInputError: another type, or a position / orientation that is not finite.
    """
    type_name = normalise_type(type_name)
    if type_name in (ODOMETRY, POSE_WITH_COVARIANCE_STAMPED):
        pose = msg.pose.pose
    elif type_name == POSE_STAMPED:
        pose = msg.pose
    else:
        raise InvalidInputError(
            f"{type_name} is not a pose type (use {ODOMETRY}, {POSE_STAMPED} "
            f"or {POSE_WITH_COVARIANCE_STAMPED})"
        )
    p, q = pose.position, pose.orientation
    values = [float(v) for v in (p.x, p.y, p.z, q.x, q.y, q.z, q.w)]
    if not all(math.isfinite(v) for v in values):
        raise InvalidInputError(f"{type_name} message with a non-finite pose: {values}")
    return Pose(
        x=values[0],
        y=values[1],
        z=values[2],
        yaw=yaw_from_quaternion(*values[3:]),
        frame_id=frame_id(msg),
        stamp=stamp_seconds(msg),
    )


def _insert(times: list[float], poses: list[Pose], pose: Pose, t: float) -> None:
    index = bisect.bisect_right(times, t)
    times.insert(index, t)
    poses.insert(index, pose)


def _angle_lerp(a: float, b: float, fraction: float) -> float:
    delta = math.atan2(math.sin(b - a), math.cos(b - a))  # shortest way round
    return math.atan2(math.sin(a + delta * fraction), math.cos(a + delta * fraction))


class PoseTracker:
    """The recent poses of the robot, answering "where was it at time t?" (thread-safe).

    Samples are kept in stamp order on the robot's current clock. A sample further than
    ``max(history_s, MIN_CLOCK_JUMP_S)`` from every kept sample (a driver's bad stamp, or a real
    clock jump: a simulation reset, a bag whose stamps restart) is held apart rather than
    trusted: when CONFIRM_SAMPLES samples agree on the new time first, the clock jumped and the
    tracker follows it (the old samples are forgotten, ``clock_jumps`` counts it); when the
    current clock gets CONFIRM_SAMPLES samples first, the held ones were outliers and are dropped
    (``outliers`` counts them). So one bad stamp can neither evict the real samples nor be
    interpolated from, and a real jump costs no sample.

    Args:
        max_age: seconds between t and the nearest sample beyond which the pose at t is unknown.
        history_s: seconds of samples kept, counted back from the newest sample of the clock.
    """

    def __init__(self, max_age: float, history_s: float) -> None:
        if not max_age > 0 or not history_s > 0:
            raise InvalidInputError("max_age and history_s must be > 0")
        self.max_age = float(max_age)
        self.history_s = float(history_s)
        self.jump_s = max(self.history_s, MIN_CLOCK_JUMP_S)
        """Seconds from the current clock's samples beyond which a sample is held apart."""
        self.outliers = 0
        """Samples dropped because they lay far from every other sample in time."""
        self.clock_jumps = 0
        """Times the tracker followed the samples to a new clock."""
        self._times: list[float] = []
        self._poses: list[Pose] = []
        self._apart_times: list[float] = []
        self._apart_poses: list[Pose] = []
        self._since_apart = 0  # samples on the current clock since the first was held apart
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._times)

    def update(self, type_name: str, msg: Any, stamp: float | None = None) -> Pose:
        """Add the pose of ``msg`` as a sample at its header stamp, or at ``stamp`` (the receive
        time) when the message has no stamp. Samples may arrive out of order.

        Returns:
            The sample's pose (its ``stamp`` is the time it was filed under).

        Raises:
            InvalidInputError: not a pose message, a non-finite pose or one beyond the memory's
                coordinate bound, or no time at all.
        """
        pose = pose_from_message(type_name, msg)
        t = pose.stamp if pose.stamp is not None else stamp
        if t is None or not math.isfinite(t):
            raise InvalidInputError(f"{type_name} message without a stamp and no receive time")
        pose = replace(pose, stamp=float(t))
        self.add(pose)
        return pose

    def add(self, pose: Pose) -> None:
        """Add a sample; samples older than history_s before the newest one are forgotten, and a
        sample far in time from the others is held apart (see the class).

        Raises:
            InvalidInputError: no finite stamp, a coordinate or yaw that is not finite, or a
                coordinate beyond the memory's bound (validation.MAX_COORDINATE): the memory
                would refuse every observation placed with it.
        """
        if pose.stamp is None or not math.isfinite(pose.stamp):
            raise InvalidInputError(f"a pose sample needs a finite stamp, got {pose.stamp}")
        if not math.isfinite(pose.yaw):
            raise InvalidInputError(f"a pose sample needs a finite yaw, got {pose.yaw}")
        for name, value in (("x", pose.x), ("y", pose.y), ("z", pose.z)):
            validation.coordinate(f"pose {name}", value)
        with self._lock:
            dropped, jumped_from = self._file(pose, pose.stamp)
            first_drop = dropped > 0 and self.outliers == dropped
        if first_drop:  # said once; the counter tells the rest
            log.warning(
                "%d pose sample(s) dropped: their stamps lay more than %g s from every other "
                "sample (a bad stamp?); further ones are counted in outliers, not logged",
                dropped,
                self.jump_s,
            )
        if jumped_from is not None:
            log.warning(
                "pose stamps jumped from %.3f to %.3f (a clock reset or jump): the older samples "
                "are forgotten",
                jumped_from,
                pose.stamp,
            )

    def _file(self, pose: Pose, t: float) -> tuple[int, float | None]:
        """File ``pose`` under ``t`` (lock held). Returns the samples dropped as outliers and,
        when the tracker followed a clock jump, the newest stamp of the old clock."""
        dropped = 0
        if not self._times or self._near(self._times, t):
            _insert(self._times, self._poses, pose, t)
            self._prune(self._times, self._poses)
            if self._apart_times:
                self._since_apart += 1
                if self._since_apart >= CONFIRM_SAMPLES:
                    dropped = self._drop_apart()
            return dropped, None
        if self._apart_times and not self._near(self._apart_times, t):
            dropped = self._drop_apart()  # a second far-off time: the first was no clock
        if not self._apart_times:
            self._since_apart = 0
        _insert(self._apart_times, self._apart_poses, pose, t)
        self._prune(self._apart_times, self._apart_poses)
        if len(self._apart_times) < CONFIRM_SAMPLES:
            return dropped, None
        jumped_from = self._times[-1]
        self._times, self._apart_times = self._apart_times, []
        self._poses, self._apart_poses = self._apart_poses, []
        self.clock_jumps += 1
        return dropped, jumped_from

    def _near(self, times: list[float], t: float) -> bool:
        return times[0] - self.jump_s <= t <= times[-1] + self.jump_s

    def _prune(self, times: list[float], poses: list[Pose]) -> None:
        cutoff = bisect.bisect_left(times, times[-1] - self.history_s)
        if cutoff:
            del times[:cutoff]
            del poses[:cutoff]

    def _drop_apart(self) -> int:
        dropped = len(self._apart_times)
        self.outliers += dropped
        self._apart_times, self._apart_poses = [], []
        return dropped

    def latest(self) -> Pose | None:
        """The newest sample, or None before the first."""
        with self._lock:
            return self._poses[-1] if self._poses else None

    def at(self, t: float) -> Pose | None:
        """The pose at time ``t``.

        Between two samples: linear interpolation of the position and of the yaw (the short way
        round), provided the nearer sample is within max_age of t (across a longer gap the pose
        is unknown). Before the first or after the last sample: that sample when within max_age.
        Otherwise None. The returned stamp is ``t`` when interpolated, else the sample's.
        """
        with self._lock:
            if not self._times:
                return None
            index = bisect.bisect_left(self._times, t)
            if index < len(self._times) and self._times[index] == t:
                return self._poses[index]
            if index == 0 or index == len(self._times):
                nearest = self._poses[0] if index == 0 else self._poses[-1]
                assert nearest.stamp is not None
                return nearest if abs(nearest.stamp - t) <= self.max_age else None
            before, after = self._poses[index - 1], self._poses[index]
            t0, t1 = self._times[index - 1], self._times[index]
        if min(t - t0, t1 - t) > self.max_age:
            return None
        if before.frame_id != after.frame_id:
            return before if t - t0 <= t1 - t else after
        fraction = (t - t0) / (t1 - t0)
        return Pose(
            x=before.x + (after.x - before.x) * fraction,
            y=before.y + (after.y - before.y) * fraction,
            z=before.z + (after.z - before.z) * fraction,
            yaw=_angle_lerp(before.yaw, after.yaw, fraction),
            frame_id=before.frame_id,
            stamp=t,
        )
