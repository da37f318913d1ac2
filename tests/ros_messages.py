"""Real ROS 2 messages for the bridge's tests, built with rosbags (no ROS install needed).

``typestore()`` is the Jazzy typestore plus vision_msgs (registered from its .msg text, as a bag
recorded on a robot would carry it); the builders fill every field, as rosbags requires.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from emem_graph.evals import patrol_bag

# vision_msgs 4.x (Humble and later), the types Detection2DArray needs: the bag writer's own
# registration, so the tests build messages of exactly the types the patrol bags carry.
VISION_MSGS = patrol_bag.VISION_MSGS


@lru_cache(maxsize=1)
def typestore() -> Any:
    """The ROS 2 Jazzy typestore with vision_msgs registered."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types: dict[str, Any] = {}
    for name, text in VISION_MSGS.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def T(name: str) -> Any:
    """The rosbags class of the ROS type ``name``."""
    return typestore().types[name]


def header(t: float | None, frame_id: str = "map") -> Any:
    """A std_msgs/Header stamped at ``t`` float seconds (None: the zero stamp)."""
    sec, nanosec = (0, 0) if t is None else (math.floor(t), round((t % 1.0) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    stamp = T("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec)
    return T("std_msgs/msg/Header")(stamp=stamp, frame_id=frame_id)


def quaternion_from_yaw(yaw: float) -> Any:
    return T("geometry_msgs/msg/Quaternion")(
        x=0.0, y=0.0, z=math.sin(yaw / 2.0), w=math.cos(yaw / 2.0)
    )


def pose(x: float, y: float, z: float = 0.0, yaw: float = 0.0, orientation: Any = None) -> Any:
    return T("geometry_msgs/msg/Pose")(
        position=T("geometry_msgs/msg/Point")(x=x, y=y, z=z),
        orientation=orientation if orientation is not None else quaternion_from_yaw(yaw),
    )


def pose_with_covariance(p: Any) -> Any:
    return T("geometry_msgs/msg/PoseWithCovariance")(pose=p, covariance=np.zeros(36))


def odometry(t: float | None, x: float, y: float, yaw: float = 0.0, frame: str = "map") -> Any:
    twist = T("geometry_msgs/msg/TwistWithCovariance")(
        twist=T("geometry_msgs/msg/Twist")(
            linear=T("geometry_msgs/msg/Vector3")(x=0.0, y=0.0, z=0.0),
            angular=T("geometry_msgs/msg/Vector3")(x=0.0, y=0.0, z=0.0),
        ),
        covariance=np.zeros(36),
    )
    return T("nav_msgs/msg/Odometry")(
        header=header(t, frame),
        child_frame_id="base_link",
        pose=pose_with_covariance(pose(x, y, 0.0, yaw)),
        twist=twist,
    )


def pose_stamped(t: float | None, x: float, y: float, z: float = 0.0, yaw: float = 0.0) -> Any:
    return T("geometry_msgs/msg/PoseStamped")(header=header(t), pose=pose(x, y, z, yaw))


def string(text: str) -> Any:
    return T("std_msgs/msg/String")(data=text)


def float32(value: float) -> Any:
    return T("std_msgs/msg/Float32")(data=value)


def battery(
    percentage: float, voltage: float, status: int, temperature: float = math.nan, t: float = 0.0
) -> Any:
    return T("sensor_msgs/msg/BatteryState")(
        header=header(t if t else None),
        voltage=voltage,
        temperature=temperature,
        current=math.nan,
        charge=math.nan,
        capacity=math.nan,
        design_capacity=math.nan,
        percentage=percentage,
        power_supply_status=status,
        power_supply_health=0,
        power_supply_technology=2,
        present=True,
        cell_voltage=np.array([4.1, 4.1, 4.0], dtype=np.float32),
        cell_temperature=np.array([], dtype=np.float32),
        location="base",
        serial_number="",
    )


def detections(t: float | None, *labels_scores: tuple[str, float]) -> Any:
    """A vision_msgs/Detection2DArray with one detection (one hypothesis) per (label, score)."""
    items = []
    for index, (label, score) in enumerate(labels_scores):
        result = T("vision_msgs/msg/ObjectHypothesisWithPose")(
            hypothesis=T("vision_msgs/msg/ObjectHypothesis")(class_id=label, score=score),
            pose=pose_with_covariance(pose(0.0, 0.0)),
        )
        bbox = T("vision_msgs/msg/BoundingBox2D")(
            center=T("vision_msgs/msg/Pose2D")(
                position=T("vision_msgs/msg/Point2D")(x=10.0 * index, y=5.0), theta=0.0
            ),
            size_x=4.0,
            size_y=8.0,
        )
        items.append(
            T("vision_msgs/msg/Detection2D")(
                header=header(t, "camera"), results=[result], bbox=bbox, id=str(index)
            )
        )
    return T("vision_msgs/msg/Detection2DArray")(header=header(t, "camera"), detections=items)


def round_trip(msg: Any) -> Any:
    """``msg`` serialized to CDR and read back (what a bag or the wire delivers)."""
    store = typestore()
    raw = store.serialize_cdr(msg, msg.__msgtype__)
    return store.deserialize_cdr(raw, msg.__msgtype__)
