"""Converters: message → memory text, on real rosbags messages and on plain objects."""

from __future__ import annotations

import math
from types import SimpleNamespace as Msg

import numpy as np
import pytest
import ros_messages as rm

from ros_bridge.config import LayerConfig
from ros_bridge.converters import (
    GENERIC_MAX_CHARS,
    ConversionError,
    convert,
    detection_text,
    pluralise,
)
from ros_bridge.messages import normalise_type, stamp_seconds


def layer(type_name: str, **fields: object) -> LayerConfig:
    return LayerConfig.model_validate({"name": "cam", "topic": "/t", "type": type_name, **fields})


# --- messages.py ---------------------------------------------------------------------------


def test_type_names_are_normalised_to_the_ros2_form() -> None:
    assert normalise_type("std_msgs/String") == "std_msgs/msg/String"
    assert normalise_type("std_msgs/msg/String") == "std_msgs/msg/String"
    assert normalise_type(" nav_msgs.msg.Odometry ") == "nav_msgs/msg/Odometry"
    with pytest.raises(ValueError, match="not a ROS message type name"):
        normalise_type("String")


def test_stamp_seconds_keeps_nanoseconds_and_treats_zero_as_missing() -> None:
    assert stamp_seconds(rm.odometry(12.25, 0, 0)) == pytest.approx(12.25, abs=1e-9)
    assert stamp_seconds(rm.odometry(None, 0, 0)) is None
    assert stamp_seconds(rm.string("x")) is None
    ros1 = Msg(header=Msg(stamp=Msg(secs=3, nsecs=500_000_000)))
    assert stamp_seconds(ros1) == pytest.approx(3.5)


# --- String, numeric, Bool ------------------------------------------------------------------


def test_string_is_its_stripped_data_and_empty_is_none() -> None:
    text_layer = layer("std_msgs/String")
    assert convert(text_layer, rm.string("  a red chair by the door ")) == (
        "a red chair by the door"
    )
    assert convert(text_layer, rm.string("   ")) is None
    assert convert(text_layer, Msg(data="plain object")) == "plain object"


def test_numeric_text_has_label_value_and_unit_and_nan_is_none() -> None:
    temperature = layer("std_msgs/msg/Float32", label="temperature", unit=" °C")
    # Float32 is written as the float32 it is, not as its float64 expansion.
    assert convert(temperature, rm.float32(23.1)) == "temperature: 23.1 °C"
    assert convert(temperature, rm.float32(math.nan)) is None
    depth = layer("std_msgs/msg/Float64", unit="m")
    assert convert(depth, Msg(data=2.5)) == "cam: 2.5m"
    assert convert(depth, Msg(data=math.inf)) is None
    count = layer("std_msgs/msg/Int32", label="people")
    assert convert(count, rm.T("std_msgs/msg/Int32")(data=-3)) == "people: -3"
    assert convert(layer("std_msgs/UInt8"), Msg(data=np.uint8(200))) == "cam: 200"


def test_bool_is_true_or_false_after_the_label() -> None:
    door = layer("std_msgs/msg/Bool", label="door open")
    assert convert(door, rm.T("std_msgs/msg/Bool")(data=True)) == "door open: true"
    assert convert(door, Msg(data=False)) == "door open: false"


# --- BatteryState ---------------------------------------------------------------------------


def test_battery_state_reads_percent_voltage_and_status() -> None:
    battery = layer("sensor_msgs/msg/BatteryState")
    assert convert(battery, rm.battery(0.84, 12.34, 2)) == "battery 84% (12.3 V, discharging)"
    assert (
        convert(battery, rm.battery(0.5, 11.0, 1, temperature=31.0))
        == "battery 50% (11.0 V, 31.0 °C, charging)"
    )


def test_battery_state_leaves_out_nan_and_unknown_fields() -> None:
    battery = layer("sensor_msgs/msg/BatteryState")
    assert convert(battery, rm.battery(math.nan, 12.0, 0)) == "battery (12.0 V)"
    assert convert(battery, rm.battery(1.0, math.nan, 4)) == "battery 100% (full)"
    assert convert(battery, rm.battery(0.2, math.nan, 0)) == "battery 20%"
    assert convert(battery, rm.battery(math.nan, math.nan, 0)) is None
    # A driver publishing 0..100 instead of 0..1.
    assert convert(battery, Msg(percentage=73.0, voltage=math.nan)) == "battery 73%"


# --- detections -----------------------------------------------------------------------------


def test_detection_text_counts_sorts_and_pluralises() -> None:
    objects = layer("vision_msgs/msg/Detection2DArray")
    msg = rm.detections(
        5.0, ("person", 0.9), ("chair", 0.8), ("chair", 0.95), ("bus", 0.7), ("bus", 0.6)
    )
    # count descending, then label alphabetically: buses and chairs tie at 2.
    assert convert(objects, msg) == "2 buses, 2 chairs, 1 person"


def test_detections_below_the_score_threshold_are_left_out() -> None:
    msg = rm.detections(1.0, ("chair", 0.9), ("person", 0.4), ("person", 0.45))
    assert convert(layer("vision_msgs/Detection2DArray"), msg) == "1 chair"
    assert (
        convert(layer("vision_msgs/Detection2DArray", score_threshold=0.4), msg)
        == "2 people, 1 chair"
    )
    assert convert(layer("vision_msgs/Detection2DArray", score_threshold=0.95), msg) is None
    assert convert(layer("vision_msgs/Detection2DArray"), rm.detections(1.0)) is None


def test_detection_text_is_the_same_whatever_the_order_of_detections() -> None:
    objects = layer("vision_msgs/msg/Detection2DArray")
    pairs = [("cup", 0.9), ("dining_table", 0.8), ("cup", 0.7), ("knife", 0.9), ("box", 0.9)]
    texts = {convert(objects, rm.detections(0.0, *order)) for order in (pairs, pairs[::-1])}
    assert texts == {"2 cups, 1 box, 1 dining table, 1 knife"}


def test_detection_uses_each_detections_best_hypothesis_and_old_vision_msgs() -> None:
    objects = layer("vision_msgs/msg/Detection2DArray")
    two_guesses = Msg(
        results=[
            Msg(hypothesis=Msg(class_id="cat", score=0.3)),
            Msg(hypothesis=Msg(class_id="dog", score=0.8)),
        ]
    )
    assert convert(objects, Msg(detections=[two_guesses])) == "1 dog"
    # vision_msgs before 4.0 (ROS 1, Foxy): id and score on the result itself.
    old = Msg(detections=[Msg(results=[Msg(id="bottle", score=0.9)])] * 3)
    assert convert(objects, old) == "3 bottles"


def test_embodied_agents_detections2d_uses_parallel_labels_and_scores() -> None:
    agents = layer("automatika_embodied_agents/msg/Detections2D")
    msg = Msg(labels=["person", "person", "sofa"], scores=[0.9, 0.2, 0.7], boxes=[])
    assert convert(agents, msg) == "1 person, 1 sofa"
    multi = Msg(detections=[msg, Msg(labels=["sofa"], scores=[0.99])])
    assert convert(layer("automatika_embodied_agents/msg/Detections2DMultiSource"), multi) == (
        "2 sofas, 1 person"
    )


def test_pluralise_handles_common_english_forms() -> None:
    cases = {
        "chair": "chairs",
        "person": "people",
        "box": "boxes",
        "glass": "glasses",
        "couch": "couches",
        "battery": "batteries",
        "toy": "toys",
        "dining table": "dining tables",
        "wine glass": "wine glasses",
        "Person": "People",
    }
    for noun, plural in cases.items():
        assert pluralise(noun, 2) == plural
        assert pluralise(noun, 1) == noun
    assert detection_text([("", 0.9), ("cup", math.nan)], 0.5) is None


# --- generic fallback -----------------------------------------------------------------------


def test_generic_text_flattens_fields_in_order_and_skips_stamps_and_nan() -> None:
    generic = layer("geometry_msgs/msg/PoseStamped")
    text = convert(generic, rm.pose_stamped(3.0, 1.5, -2.0, 0.0))
    assert text == (
        "header.frame_id: map, pose.position.x: 1.5, pose.position.y: -2, pose.position.z: 0, "
        "pose.orientation.x: 0, pose.orientation.y: 0, pose.orientation.z: 0, "
        "pose.orientation.w: 1"
    )
    plain = Msg(name="door", reading=math.nan, ok=True, tags=["a", "b"])
    assert convert(layer("my_msgs/msg/Status"), plain) == "name: door, ok: true, tags: [a, b]"


def test_generic_text_skips_binary_data_and_summarises_long_arrays() -> None:
    image = rm.T("sensor_msgs/msg/Image")(
        header=rm.header(1.0, "camera"),
        height=2,
        width=3,
        encoding="rgb8",
        is_bigendian=0,
        step=9,
        data=np.arange(18, dtype=np.uint8),
    )
    text = convert(layer("sensor_msgs/msg/Image"), image)
    assert text == (
        "header.frame_id: camera, height: 2, width: 3, encoding: rgb8, is_bigendian: 0, step: 9"
    )
    odom = rm.odometry(1.0, 1.0, 2.0)
    text = convert(layer("nav_msgs/msg/Odometry"), odom)
    assert text is not None
    assert "pose.covariance: [36 values]" in text
    assert "child_frame_id: base_link" in text


def test_generic_text_is_capped_and_deterministic() -> None:
    huge = Msg(items=[Msg(name=f"object number {i}", x=float(i)) for i in range(500)])
    generic = layer("my_msgs/msg/Inventory")
    first, second = convert(generic, huge), convert(generic, huge)
    assert first == second
    assert first is not None
    assert len(first) <= GENERIC_MAX_CHARS
    assert first.startswith("items[0].name: object number 0, items[0].x: 0, items[1].name")
    assert first.endswith("…")
    assert convert(generic, Msg()) is None


# --- templates ------------------------------------------------------------------------------


def test_template_formats_message_fields_and_converter_values() -> None:
    objects = layer(
        "vision_msgs/msg/Detection2DArray", template="I see {text} in {header.frame_id}"
    )
    assert convert(objects, rm.detections(1.0, ("cup", 0.9))) == "I see 1 cup in camera"
    depth = layer(
        "std_msgs/msg/Float64", label="depth", template="{label} is {value:.1f}{unit}", unit=" m"
    )
    assert convert(depth, Msg(data=2.345)) == "depth is 2.3 m"
    where = layer(
        "geometry_msgs/PoseStamped", template="at ({pose.position.x:.1f}, {pose.position.y:.1f})"
    )
    assert convert(where, rm.pose_stamped(1.0, 1.25, 3.0)) == "at (1.2, 3.0)"


def test_template_keeps_none_for_empty_known_messages() -> None:
    objects = layer("vision_msgs/msg/Detection2DArray", template="I see {text}")
    assert convert(objects, rm.detections(1.0, ("cup", 0.1))) is None
    temperature = layer("std_msgs/msg/Float32", template="{value} degrees")
    assert convert(temperature, rm.float32(math.nan)) is None


def test_template_naming_a_missing_field_raises_a_conversion_error() -> None:
    bad = layer("std_msgs/msg/String", template="{colour} chair")
    with pytest.raises(ConversionError, match=r"'cam'.*colour"):
        convert(bad, rm.string("red"))


# --- serialized round trip ------------------------------------------------------------------


def test_messages_read_back_from_cdr_convert_like_the_originals() -> None:
    cases = [
        (layer("std_msgs/msg/String"), rm.string("kitchen, fridge open")),
        (layer("std_msgs/msg/Float32", unit="%"), rm.float32(0.1)),
        (layer("sensor_msgs/msg/BatteryState"), rm.battery(0.84, 12.3, 2)),
        (
            layer("vision_msgs/msg/Detection2DArray"),
            rm.detections(7.5, ("person", 0.9), ("chair", 0.6), ("chair", 0.7)),
        ),
        (layer("nav_msgs/msg/Odometry"), rm.odometry(2.0, 3.0, 4.0, 0.5)),
    ]
    expected = [
        "kitchen, fridge open",
        "cam: 0.1%",
        "battery 84% (12.3 V, discharging)",
        "2 chairs, 1 person",
        None,
    ]
    for (config, msg), want in zip(cases, expected, strict=True):
        decoded = rm.round_trip(msg)
        assert decoded is not msg
        assert convert(config, decoded) == convert(config, msg)
        if want is not None:
            assert convert(config, decoded) == want


class _RclpyLike:
    """Shaped like an rclpy message: private slots and get_fields_and_field_types()."""

    __slots__ = ("_data", "_frame", "_values")

    def __init__(self) -> None:
        self._frame = "base_link"
        self._data = bytes(range(10))
        self._values = np.array([1.5, 2.5])

    @classmethod
    def get_fields_and_field_types(cls) -> dict[str, str]:
        return {"frame": "string", "data": "sequence<uint8>", "values": "double[2]"}

    frame = property(lambda self: self._frame)
    data = property(lambda self: self._data)
    values = property(lambda self: self._values)


def test_generic_text_reads_rclpy_shaped_messages_through_their_field_list() -> None:
    text = convert(layer("my_msgs/msg/Blob"), _RclpyLike())
    assert text == "frame: base_link, values: [1.5, 2.5]"
