"""A simulated patrol recorded as a real rosbag: the demo's house seen through ROS topics.

The robot walks the demo's route (kitchen, hallway, living room, hallway, office, hallway,
kitchen) at a steady speed, pausing in each room, and publishes what a real robot would:
odometry at 20 Hz, a captioner's ``std_msgs/String``, a detector's
``vision_msgs/Detection2DArray`` (stamped at capture, received later), a ``std_msgs/Float32``
temperature and a ``sensor_msgs/BatteryState``. The bag is written with rosbags (ROS 2 sqlite3 or
MCAP, or ROS 1) and comes with its ground truth, so tests can check where things were stored.
:func:`replay_patrol` writes such a bag and replays it through the bridge (ros_bridge.bag).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from emem_graph.errors import InvalidInputError
from emem_graph.evals.house import ROOMS, ROUTE, START_TIME, THINGS, VIEW_RADIUS, Thing
from ros_bridge.bag import ReplaySummary, replay_bag, require_rosbags

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

    from emem_graph.memory import SpatioTemporalMemory
    from ros_bridge.config import BridgeConfig

Storage = Literal["sqlite3", "mcap"]

ODOM_TOPIC = "/odom"
CAPTION_TOPIC = "/camera/caption"
DETECTIONS_TOPIC = "/camera/detections"
TEMPERATURE_TOPIC = "/robot/temperature"
BATTERY_TOPIC = "/robot/battery"

TOPIC_TYPES: dict[str, str] = {
    ODOM_TOPIC: "nav_msgs/msg/Odometry",
    CAPTION_TOPIC: "std_msgs/msg/String",
    DETECTIONS_TOPIC: "vision_msgs/msg/Detection2DArray",
    TEMPERATURE_TOPIC: "std_msgs/msg/Float32",
    BATTERY_TOPIC: "sensor_msgs/msg/BatteryState",
}

# vision_msgs (ROS 2 Humble and later) is in no rosbags type store: registered from its .msg text.
VISION_MSGS: dict[str, str] = {
    "vision_msgs/msg/Point2D": "float64 x\nfloat64 y\n",
    "vision_msgs/msg/Pose2D": "vision_msgs/Point2D position\nfloat64 theta\n",
    "vision_msgs/msg/BoundingBox2D": "vision_msgs/Pose2D center\nfloat64 size_x\nfloat64 size_y\n",
    "vision_msgs/msg/ObjectHypothesis": "string class_id\nfloat64 score\n",
    "vision_msgs/msg/ObjectHypothesisWithPose": (
        "vision_msgs/ObjectHypothesis hypothesis\ngeometry_msgs/PoseWithCovariance pose\n"
    ),
    "vision_msgs/msg/Detection2D": (
        "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\n"
        "vision_msgs/BoundingBox2D bbox\nstring id\n"
    ),
    "vision_msgs/msg/Detection2DArray": (
        "std_msgs/Header header\nvision_msgs/Detection2D[] detections\n"
    ),
}

FALSE_POSITIVE = "cat"
"""A label the simulated detector sometimes reports with a low score (below any sane threshold)."""

_DTYPES = {
    "bool": np.bool_,
    "byte": np.uint8,
    "char": np.uint8,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}


@dataclass(frozen=True)
class CaptionTruth:
    """One caption published: when, what it said, which thing it describes, where the robot
    was at the caption's message time (a String has no header: its time is the receive time)."""

    t: float
    text: str
    thing: str | None
    robot_x: float
    robot_y: float


@dataclass
class PatrolBagInfo:
    """What a patrol bag holds (its ground truth)."""

    path: Path
    storage: str
    """``sqlite3``, ``mcap`` or ``rosbag1``."""
    ros_version: int
    start: float
    """Bag time of the first message (float seconds since the epoch)."""
    end: float
    topics: dict[str, str]
    """Topic -> ROS type name of every topic written."""
    counts: dict[str, int]
    """Topic -> messages written."""
    rooms: dict[str, tuple[float, float]]
    things: list[Thing]
    captions: list[CaptionTruth] = field(default_factory=list)
    empty_captions: int = 0
    empty_detections: int = 0
    last_battery_percent: float = 0.0
    last_temperature: float = 0.0
    speed: float = 0.5
    dwell_s: float = 3.0

    @property
    def messages(self) -> int:
        """Messages written on every topic together."""
        return sum(self.counts.values())

    @property
    def duration_s(self) -> float:
        """Seconds of bag time."""
        return self.end - self.start

    def pose_at(self, t: float) -> tuple[float, float, float]:
        """The robot's true (x, y, yaw) at bag time ``t``."""
        return _Route(self.speed, self.dwell_s).pose(t - self.start)


class _Route:
    """The demo's route looped forever: pose as a function of seconds since the start."""

    def __init__(self, speed: float, dwell_s: float) -> None:
        self.speed = speed
        self.dwell_s = dwell_s
        self.legs: list[tuple[float, float, float, float, float]] = []  # x0 y0 x1 y1 length
        for here, there in itertools.pairwise(ROUTE):
            (x0, y0), (x1, y1) = ROOMS[here], ROOMS[there]
            self.legs.append((x0, y0, x1, y1, math.dist((x0, y0), (x1, y1))))
        self.loop_s = sum(dwell_s + length / speed for *_, length in self.legs)

    def pose(self, elapsed: float) -> tuple[float, float, float]:
        """(x, y, yaw) after ``elapsed`` seconds: a pause at each room, then the leg to the next."""
        t = elapsed % self.loop_s
        for x0, y0, x1, y1, length in self.legs:
            yaw = math.atan2(y1 - y0, x1 - x0)
            if t < self.dwell_s:
                return x0, y0, yaw
            t -= self.dwell_s
            leg_s = length / self.speed
            if t < leg_s:
                f = t / leg_s
                return x0 + (x1 - x0) * f, y0 + (y1 - y0) * f, yaw
            t -= leg_s
        x0, y0, x1, y1, _ = self.legs[-1]
        return x1, y1, math.atan2(y1 - y0, x1 - x0)

    def moving(self, elapsed: float) -> bool:
        """Whether the robot is walking (not pausing in a room) at ``elapsed``."""
        t = elapsed % self.loop_s
        for *_, length in self.legs:
            if t < self.dwell_s:
                return False
            t -= self.dwell_s + length / self.speed
            if t < 0:
                return True
        return False


def patrol_loop_s(speed: float = 0.5, dwell_s: float = 3.0) -> float:
    """Seconds of one loop of the patrol route."""
    return _Route(speed, dwell_s).loop_s


def patrol_typestore(ros_version: int) -> Typestore:
    """The rosbags type store of the patrol: ROS 2 Jazzy or ROS 1 Noetic, plus vision_msgs."""
    require_rosbags()
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if ros_version == 1 else Stores.ROS2_JAZZY)
    types: dict[str, Any] = {}
    for name, text in VISION_MSGS.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def build_message(store: Typestore, typename: str, values: dict[str, Any] | None = None) -> Any:
    """A rosbags message of ``typename`` with every field given: ``values`` (nested dicts for
    nested messages) and zero for the rest (fixed-size arrays as numpy arrays, as rosbags needs).
    """
    values = values or {}
    _, fields = store.fielddefs[typename]
    unknown = set(values) - {name for name, _ in fields}
    if unknown:
        raise InvalidInputError(f"{typename} has no field(s) {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, (node, desc) in fields:
        given = values.get(name)
        kwargs[name] = _field_value(store, node, desc, given)
    return store.types[typename](**kwargs)


def _field_value(store: Typestore, node: int, desc: Any, given: Any) -> Any:
    # rosbags Nodetype: 1 BASE, 2 NAME, 3 ARRAY (fixed size), 4 SEQUENCE.
    if node == 2:
        if given is None or isinstance(given, dict):
            return build_message(store, desc, given)
        return given
    if node == 1:
        if given is not None:
            return given
        base = desc[0]
        return "" if base == "string" else False if base == "bool" else 0
    (sub_node, sub_desc), size = desc
    if sub_node == 1 and sub_desc[0] in _DTYPES:
        dtype = _DTYPES[sub_desc[0]]
        if given is not None:
            return np.asarray(given, dtype=dtype)
        return np.zeros(size if node == 3 else 0, dtype=dtype)
    if given is not None:
        return list(given)
    return [_field_value(store, sub_node, sub_desc, None) for _ in range(size if node == 3 else 0)]


def _time(store: Typestore, t: float) -> Any:
    sec = math.floor(t)
    return build_message(
        store, "builtin_interfaces/msg/Time", {"sec": sec, "nanosec": round((t - sec) * 1e9)}
    )


def _visible(x: float, y: float) -> list[Thing]:
    return [thing for thing in THINGS if math.dist((thing.x, thing.y), (x, y)) <= VIEW_RADIUS]


def write_patrol_bag(
    path: Path | str,
    *,
    storage: Storage = "sqlite3",
    ros_version: int = 2,
    duration_s: float = 120.0,
    seed: int = 0,
    speed: float = 0.5,
    dwell_s: float = 3.0,
    odometry: bool = True,
    odom_hz: float = 20.0,
    caption_period_s: float = 2.0,
    detection_hz: float = 2.0,
    battery_hz: float = 1.0,
    temperature_period_s: float = 5.0,
) -> PatrolBagInfo:
    """Write a simulated patrol of the demo's house to a new bag at ``path``.

    Args:
        path: Where the bag goes (a directory for ROS 2, a ``.bag`` file for ROS 1); must not
            exist yet.
        storage: ROS 2 storage plugin, ``sqlite3`` or ``mcap`` (ignored for ROS 1).
        ros_version: 2 (rosbag2) or 1 (rosbag1 ``.bag``).
        duration_s: Seconds of patrol recorded (the route loops; one loop is about 2 minutes).
        seed: Seed of the detector scores, false positives and sensor noise.
        odometry: Write ``/odom``; False makes a bag where nothing has a pose.

    Returns:
        The ground truth: topics, message counts, captions with the robot's position.

    Raises:
        InvalidInputError: ``path`` exists, a ROS 1 path does not end in ``.bag``, or an
            argument is out of range.
        BackendUnavailableError: rosbags is not installed.
    """
    path = Path(path)
    if path.exists():
        raise InvalidInputError(f"{path} exists already: a bag is written to a new path")
    if ros_version not in (1, 2):
        raise InvalidInputError(f"ros_version must be 1 or 2, got {ros_version!r}")
    if ros_version == 1 and path.suffix != ".bag":
        raise InvalidInputError(f"a ROS 1 bag's name must end in .bag, got {path.name!r}")
    if storage not in ("sqlite3", "mcap"):
        raise InvalidInputError(f"storage must be 'sqlite3' or 'mcap', got {storage!r}")
    if not duration_s > 0 or not speed > 0 or dwell_s < 0:
        raise InvalidInputError("duration_s and speed must be > 0 and dwell_s >= 0")
    store = patrol_typestore(ros_version)
    route = _Route(speed, dwell_s)
    rng = np.random.default_rng(seed)
    topics = {topic: kind for topic, kind in TOPIC_TYPES.items() if odometry or topic != ODOM_TOPIC}
    info = PatrolBagInfo(
        path=path,
        storage="rosbag1" if ros_version == 1 else storage,
        ros_version=ros_version,
        start=START_TIME,
        end=START_TIME,
        topics=topics,
        counts=dict.fromkeys(topics, 0),
        rooms=dict(ROOMS),
        things=list(THINGS),
        speed=speed,
        dwell_s=dwell_s,
    )
    # (receive time, topic, message): sorted by receive time before writing, as a recorder would.
    records: list[tuple[float, str, Any]] = []

    def header(t: float, frame: str) -> dict[str, Any]:
        return {"stamp": _time(store, t), "frame_id": frame}

    def every(period: float, offset: float = 0.0) -> list[float]:
        n = int((duration_s - offset) / period) + 1 if duration_s >= offset else 0
        return [START_TIME + offset + i * period for i in range(n)]

    if odometry:
        for t in every(1.0 / odom_hz):
            x, y, yaw = route.pose(t - START_TIME)
            msg = build_message(
                store,
                "nav_msgs/msg/Odometry",
                {
                    "header": header(t, "map"),
                    "child_frame_id": "base_link",
                    "pose": {
                        "pose": {
                            "position": {"x": x, "y": y, "z": 0.0},
                            "orientation": {"z": math.sin(yaw / 2), "w": math.cos(yaw / 2)},
                        }
                    },
                    "twist": {
                        "twist": {"linear": {"x": speed if route.moving(t - START_TIME) else 0.0}}
                    },
                },
            )
            records.append((t + 0.002, ODOM_TOPIC, msg))

    for i, t in enumerate(every(caption_period_s, offset=0.7)):
        received = t + 0.3  # a String has no header: the receive time is its time
        x, y, _ = route.pose(received - START_TIME)
        visible = _visible(x, y)
        described = visible[i % len(visible)] if visible else None
        text = described.caption if described else ""
        if described is None:
            info.empty_captions += 1
        info.captions.append(
            CaptionTruth(received, text, described.name if described else None, x, y)
        )
        records.append(
            (received, CAPTION_TOPIC, build_message(store, "std_msgs/msg/String", {"data": text}))
        )

    for t in every(1.0 / detection_hz, offset=0.25):
        x, y, _ = route.pose(t - START_TIME)
        detections = []
        for thing in _visible(x, y):
            score = float(rng.uniform(0.6, 0.98))
            detections.append(_detection(store, t, thing.label, score, thing.name))
        if rng.random() < 0.2:
            score = float(rng.uniform(0.05, 0.3))
            detections.append(_detection(store, t, FALSE_POSITIVE, score, "fp"))
        if not any(d.results[0].hypothesis.score >= 0.5 for d in detections):
            info.empty_detections += 1
        msg = build_message(
            store,
            "vision_msgs/msg/Detection2DArray",
            {"header": header(t, "camera"), "detections": detections},
        )
        records.append((t + 0.15, DETECTIONS_TOPIC, msg))  # the detector's latency

    for t in every(1.0 / battery_hz, offset=0.5):
        fraction = 0.95 - 0.0004 * (t - START_TIME)
        info.last_battery_percent = round(fraction * 100, 1)
        msg = build_message(
            store,
            "sensor_msgs/msg/BatteryState",
            {
                "header": header(t, "base_link"),
                "voltage": 11.1 + 1.5 * fraction,
                "current": -1.8,
                # NaN is ROS's "not measured" for these float fields.
                "temperature": math.nan,
                "charge": math.nan,
                "capacity": math.nan,
                "design_capacity": 5.2,
                "percentage": fraction,
                "power_supply_status": 2,  # DISCHARGING
                "power_supply_technology": 2,  # LION
                "present": True,
                "location": "base",
            },
        )
        records.append((t + 0.01, BATTERY_TOPIC, msg))

    for t in every(temperature_period_s, offset=1.0):
        celsius = round(38.0 + 0.01 * (t - START_TIME) + float(rng.normal(0, 0.1)), 2)
        info.last_temperature = celsius
        msg = build_message(store, "std_msgs/msg/Float32", {"data": celsius})
        records.append((t, TEMPERATURE_TOPIC, msg))

    records.sort(key=lambda record: record[0])
    _write(path, store, ros_version, storage, topics, records, info)
    info.start = records[0][0] if records else START_TIME
    info.end = records[-1][0] if records else START_TIME
    return info


def _detection(store: Typestore, t: float, label: str, score: float, tracker_id: str) -> Any:
    return build_message(
        store,
        "vision_msgs/msg/Detection2D",
        {
            "header": {"stamp": _time(store, t), "frame_id": "camera"},
            "results": [
                build_message(
                    store,
                    "vision_msgs/msg/ObjectHypothesisWithPose",
                    {"hypothesis": {"class_id": label, "score": score}},
                )
            ],
            "bbox": {"center": {"position": {"x": 320.0, "y": 240.0}}, "size_x": 80.0,
                     "size_y": 60.0},
            "id": tracker_id,
        },
    )  # fmt: skip


def _write(
    path: Path,
    store: Typestore,
    ros_version: int,
    storage: Storage,
    topics: dict[str, str],
    records: list[tuple[float, str, Any]],
    info: PatrolBagInfo,
) -> None:
    if ros_version == 1:
        from rosbags.rosbag1 import Writer as Writer1

        path.parent.mkdir(parents=True, exist_ok=True)  # rosbag2's writer does this itself
        with Writer1(path) as bag1:
            connections = {
                topic: bag1.add_connection(topic, kind, typestore=store)
                for topic, kind in topics.items()
            }
            for t, topic, msg in records:
                data = store.serialize_ros1(msg, topics[topic])
                bag1.write(connections[topic], round(t * 1e9), data)
                info.counts[topic] += 1
        return
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Writer2

    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer2(path, version=9, storage_plugin=plugin) as bag2:
        connections = {
            topic: bag2.add_connection(topic, kind, typestore=store)
            for topic, kind in topics.items()
        }
        for t, topic, msg in records:
            bag2.write(connections[topic], round(t * 1e9), store.serialize_cdr(msg, topics[topic]))
            info.counts[topic] += 1


def patrol_config_yaml(memory_dir: str | Path, *, rate_hz: float = 1.0) -> str:
    """The bridge configuration (YAML text) that replays a patrol bag into ``memory_dir``."""
    return f"""\
# Bridge configuration for the simulated patrol bag (emem-graph make-bag).
node_name: emem_graph
memory_dir: {str(memory_dir)!r}
position:
  topic: {ODOM_TOPIC}
  type: nav_msgs/msg/Odometry
  max_age: 1.0
trigger:
  rate_hz: {rate_hz}
layers:
  - name: captions
    topic: {CAPTION_TOPIC}
    type: std_msgs/msg/String
  - name: detections
    topic: {DETECTIONS_TOPIC}
    type: vision_msgs/msg/Detection2DArray
    score_threshold: 0.5
  - name: temperature
    topic: {TEMPERATURE_TOPIC}
    type: std_msgs/msg/Float32
    internal_state: true
    unit: °C
    max_age: 10.0
  - name: battery
    topic: {BATTERY_TOPIC}
    type: sensor_msgs/msg/BatteryState
    internal_state: true
"""


def patrol_config(memory_dir: str | Path, *, rate_hz: float = 1.0) -> BridgeConfig:
    """The validated bridge configuration of :func:`patrol_config_yaml`."""
    import yaml

    from ros_bridge.config import BridgeConfig

    return BridgeConfig.build(yaml.safe_load(patrol_config_yaml(memory_dir, rate_hz=rate_hz)))


def replay_patrol(
    memory: SpatioTemporalMemory,
    *,
    rounds: int = 2,
    set_time: Callable[[float], None] | None = None,
    progress: bool = True,
    storage: Storage = "sqlite3",
) -> ReplaySummary:
    """The demo's patrol as a bag: write ``rounds`` loops of the simulated patrol to a
    temporary bag and replay it into ``memory`` as one episode (consolidated before returning).

    Args:
        set_time: Sets the memory's clock (bag time: the episode starts at the bag's start and
            the clock is left at its end).
    """
    with tempfile.TemporaryDirectory(prefix="emem-patrol-") as tmp:
        bag = Path(tmp) / "patrol"
        info = write_patrol_bag(bag, storage=storage, duration_s=rounds * patrol_loop_s(), seed=0)
        if set_time is not None:
            set_time(info.start)
        memory.start_episode("patrol (ROS bag)")
        summary = replay_bag(bag, patrol_config(memory.config.db_path), memory, progress)
        if set_time is not None:
            set_time(info.end)
        memory.end_episode(wait=True)
    return summary
