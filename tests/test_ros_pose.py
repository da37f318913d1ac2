"""Pose: yaw from the full quaternion, interpolation at a message's time, staleness."""

from __future__ import annotations

import math
import threading

import pytest
import ros_messages as rm

from emem_graph.errors import InvalidInputError
from ros_bridge.pose import PoseTracker, pose_from_message, yaw_from_quaternion


def test_pose_types_give_position_yaw_frame_and_stamp() -> None:
    odom = pose_from_message(
        "nav_msgs/Odometry", rm.odometry(4.5, 1.0, 2.0, yaw=0.75, frame="odom")
    )
    assert (odom.x, odom.y, odom.z) == (1.0, 2.0, 0.0)
    assert odom.yaw == pytest.approx(0.75)
    assert odom.frame_id == "odom"
    assert odom.stamp == pytest.approx(4.5)
    stamped = pose_from_message(
        "geometry_msgs/msg/PoseStamped", rm.pose_stamped(1.0, 3, 4, 1.5, -1.0)
    )
    assert (stamped.x, stamped.y, stamped.z, stamped.frame_id) == (3.0, 4.0, 1.5, "map")
    assert stamped.yaw == pytest.approx(-1.0)
    covariance = rm.T("geometry_msgs/msg/PoseWithCovarianceStamped")(
        header=rm.header(2.0), pose=rm.pose_with_covariance(rm.pose(5.0, 6.0, yaw=3.0))
    )
    amcl = pose_from_message("geometry_msgs/msg/PoseWithCovarianceStamped", covariance)
    assert (amcl.x, amcl.y, amcl.yaw) == (5.0, 6.0, pytest.approx(3.0))


def test_yaw_uses_the_full_quaternion() -> None:
    # Heading 90 degrees, pitched 30 and rolled 40 (z, y, x order): z and w alone misread it.
    cy, sy = math.cos(math.pi / 4), math.sin(math.pi / 4)
    cp, sp = math.cos(math.radians(15)), math.sin(math.radians(15))
    cr, sr = math.cos(math.radians(20)), math.sin(math.radians(20))
    qw = cr * cp * cy + sr * sp * sy
    qx = sr * cp * cy - cr * sp * sy
    qy = cr * sp * cy + sr * cp * sy
    qz = cr * cp * sy - sr * sp * cy
    assert yaw_from_quaternion(qx, qy, qz, qw) == pytest.approx(math.pi / 2)
    assert abs(2 * math.atan2(qz, qw) - math.pi / 2) > 0.05
    # Not normalised: same heading.
    assert yaw_from_quaternion(0.0, 0.0, 2.0, 2.0) == pytest.approx(math.pi / 2)


def test_non_pose_types_and_non_finite_poses_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="not a pose type"):
        pose_from_message("std_msgs/msg/String", rm.string("x"))
    with pytest.raises(InvalidInputError, match="non-finite"):
        pose_from_message("nav_msgs/msg/Odometry", rm.odometry(1.0, math.nan, 0.0))


def test_pose_is_interpolated_at_the_requested_time() -> None:
    tracker = PoseTracker(max_age=1.0, history_s=30.0)
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(10.0, 0.0, 0.0, yaw=0.0))
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(11.0, 2.0, 4.0, yaw=1.0))
    pose = tracker.at(10.25)
    assert pose is not None
    assert (pose.x, pose.y) == (pytest.approx(0.5), pytest.approx(1.0))
    assert pose.yaw == pytest.approx(0.25)
    assert pose.stamp == 10.25
    assert pose.frame_id == "map"
    exact = tracker.at(11.0)
    assert exact is not None and exact.x == 2.0


def test_yaw_is_interpolated_the_short_way_round() -> None:
    tracker = PoseTracker(max_age=1.0, history_s=30.0)
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(1.0, 0.0, 0.0, yaw=math.radians(170)))
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(2.0, 0.0, 0.0, yaw=math.radians(-170)))
    pose = tracker.at(1.5)
    assert pose is not None
    assert abs(pose.yaw) == pytest.approx(math.pi)


def test_outside_the_samples_the_nearest_is_used_only_within_max_age() -> None:
    tracker = PoseTracker(max_age=0.5, history_s=30.0)
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(10.0, 1.0, 1.0))
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(11.0, 3.0, 1.0))
    after = tracker.at(11.4)
    assert after is not None and after.x == 3.0 and after.stamp == 11.0
    before = tracker.at(9.6)
    assert before is not None and before.x == 1.0
    assert tracker.at(11.6) is None
    assert tracker.at(9.4) is None
    assert PoseTracker(1.0, 10.0).at(0.0) is None


def test_a_gap_longer_than_max_age_on_both_sides_has_no_pose() -> None:
    tracker = PoseTracker(max_age=0.5, history_s=60.0)
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(100.0, 0.0, 0.0))
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(110.0, 10.0, 0.0))
    assert tracker.at(105.0) is None
    near_end = tracker.at(109.6)
    assert near_end is not None and near_end.x == pytest.approx(9.6)


def test_samples_without_stamp_use_the_receive_time_and_may_arrive_out_of_order() -> None:
    tracker = PoseTracker(max_age=1.0, history_s=30.0)
    tracker.update("geometry_msgs/msg/PoseStamped", rm.pose_stamped(None, 4.0, 0.0), stamp=2.0)
    tracker.update("geometry_msgs/msg/PoseStamped", rm.pose_stamped(1.0, 2.0, 0.0))
    pose = tracker.at(1.5)
    assert pose is not None and pose.x == pytest.approx(3.0)
    with pytest.raises(InvalidInputError, match="without a stamp"):
        tracker.update("geometry_msgs/msg/PoseStamped", rm.pose_stamped(None, 0.0, 0.0))


def test_history_older_than_history_s_is_forgotten() -> None:
    tracker = PoseTracker(max_age=100.0, history_s=5.0)
    for t in range(1, 21):
        tracker.update("nav_msgs/msg/Odometry", rm.odometry(float(t), float(t - 1), 0.0))
    assert len(tracker) == 6  # t = 15 .. 20
    oldest = tracker.at(1.0)
    assert oldest is not None and oldest.x == 14.0
    latest = tracker.latest()
    assert latest is not None and latest.x == 19.0


def test_frames_are_not_mixed_by_interpolation() -> None:
    tracker = PoseTracker(max_age=1.0, history_s=30.0)
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(1.0, 0.0, 0.0, frame="odom"))
    tracker.update("nav_msgs/msg/Odometry", rm.odometry(2.0, 5.0, 0.0, frame="map"))
    pose = tracker.at(1.8)
    assert pose is not None and pose.frame_id == "map" and pose.x == 5.0


def test_tracker_is_safe_to_update_and_read_from_several_threads() -> None:
    tracker = PoseTracker(max_age=1.0, history_s=1000.0)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            for i in range(200):
                t = float(i * 4 + offset + 1)
                tracker.update("nav_msgs/msg/Odometry", rm.odometry(t, t, 0.0))
                tracker.at(t - 0.5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(tracker) == 800
    mid = tracker.at(400.5)
    assert mid is not None and mid.x == pytest.approx(400.5)
    assert tracker.at(-0.5) is None  # more than max_age before the first sample (t = 1)
