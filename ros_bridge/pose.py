"""The robot's pose over time: pose messages → samples → the pose at any message's time."""

from __future__ import annotations

import bisect
import math
import threading
from dataclasses import dataclass, replace
from typing import Any

from emem_graph.errors import InvalidInputError
from ros_bridge.config import ODOMETRY, POSE_STAMPED, POSE_WITH_COVARIANCE_STAMPED
from ros_bridge.messages import frame_id, normalise_type, stamp_seconds


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


def _angle_lerp(a: float, b: float, fraction: float) -> float:
    delta = math.atan2(math.sin(b - a), math.cos(b - a))  # shortest way round
    return math.atan2(math.sin(a + delta * fraction), math.cos(a + delta * fraction))


class PoseTracker:
    """The recent poses of the robot, answering "where was it at time t?" (thread-safe).

    Args:
        max_age: seconds between t and the nearest sample beyond which the pose at t is unknown.
        history_s: seconds of samples kept, counted back from the newest sample.
    """

    def __init__(self, max_age: float, history_s: float) -> None:
        if not max_age > 0 or not history_s > 0:
            raise InvalidInputError("max_age and history_s must be > 0")
        self.max_age = float(max_age)
        self.history_s = float(history_s)
        self._times: list[float] = []
        self._poses: list[Pose] = []
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
            InvalidInputError: not a pose message, a non-finite pose, or no time at all.
        """
        pose = pose_from_message(type_name, msg)
        t = pose.stamp if pose.stamp is not None else stamp
        if t is None or not math.isfinite(t):
            raise InvalidInputError(f"{type_name} message without a stamp and no receive time")
        pose = replace(pose, stamp=float(t))
        self.add(pose)
        return pose

    def add(self, pose: Pose) -> None:
        """Add a sample (``pose.stamp`` must be set); samples older than history_s before the
        newest one are forgotten."""
        if pose.stamp is None:
            raise InvalidInputError("a pose sample needs a stamp")
        with self._lock:
            index = bisect.bisect_right(self._times, pose.stamp)
            self._times.insert(index, pose.stamp)
            self._poses.insert(index, pose)
            cutoff = bisect.bisect_left(self._times, self._times[-1] - self.history_s)
            if cutoff:
                del self._times[:cutoff]
                del self._poses[:cutoff]

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
