"""What the bridge needs to know about a ROS message, whatever library built it.

A message is any object with the right attributes: an rclpy message, a rosbags message (a
dataclass), a genpy (ROS 1) message or a ``SimpleNamespace`` in a test. Messages are keyed by their
ROS type name, normalised to ``pkg/msg/Name``.
"""

from __future__ import annotations

import array
import dataclasses
import re
from collections.abc import Iterator
from typing import Any

from emem_graph.errors import InvalidInputError

_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(/msg)?/[A-Za-z][A-Za-z0-9_]*$")


def normalise_type(name: str) -> str:
    """The canonical ROS 2 form of a message type name.

    ``std_msgs/String``, ``std_msgs/msg/String`` and ``std_msgs.msg.String`` all become
    ``std_msgs/msg/String``.

    Raises:
        InvalidInputError: ``name`` is not a ``package/Name`` or ``package/msg/Name`` type name.
    """
    if not isinstance(name, str):
        raise InvalidInputError(f"a ROS type name must be a string, got {type(name).__name__}")
    candidate = name.strip().replace(".", "/")
    if not _TYPE_NAME.match(candidate):
        raise InvalidInputError(
            f"{name!r} is not a ROS message type name (expected package/msg/Name, "
            "e.g. std_msgs/msg/String)"
        )
    package, _, message = candidate.rpartition("/")
    package = package.removesuffix("/msg")
    return f"{package}/msg/{message}"


def time_seconds(stamp: Any) -> float | None:
    """A ROS time (``sec``/``nanosec``, or ROS 1 ``secs``/``nsecs``) as float seconds.

    Returns None when ``stamp`` is not a time or is zero (ROS's "no time given").
    """
    sec = getattr(stamp, "sec", None)
    if sec is None:
        sec = getattr(stamp, "secs", None)
    nanosec = getattr(stamp, "nanosec", None)
    if nanosec is None:
        nanosec = getattr(stamp, "nsecs", 0)
    if sec is None or nanosec is None:
        return None
    seconds = int(sec) + int(nanosec) * 1e-9
    return seconds if seconds != 0.0 else None


def stamp_seconds(msg: Any) -> float | None:
    """The message's ``header.stamp`` as float seconds (nanoseconds kept).

    Returns None when the message has no header or its stamp is zero.
    """
    header = getattr(msg, "header", None)
    if header is None:
        return None
    return time_seconds(getattr(header, "stamp", None))


def frame_id(msg: Any) -> str | None:
    """The message's ``header.frame_id``, or None when it has no header or an empty frame."""
    header = getattr(msg, "header", None)
    frame = getattr(header, "frame_id", None) if header is not None else None
    return str(frame) if frame else None


def message_fields(msg: Any) -> Iterator[tuple[str, Any]]:
    """The message's fields as (name, value) pairs, in declaration order.

    Works on rclpy messages (``get_fields_and_field_types``), rosbags messages (dataclasses),
    genpy messages (``__slots__``) and plain objects (their public attributes).
    """
    if hasattr(msg, "get_fields_and_field_types"):
        names = list(msg.get_fields_and_field_types())
    elif dataclasses.is_dataclass(msg) and not isinstance(msg, type):
        names = [field.name for field in dataclasses.fields(msg)]
    elif hasattr(msg, "__slots__"):
        names = [slot.lstrip("_") for slot in msg.__slots__]
    elif hasattr(msg, "__dict__"):
        names = [name for name in vars(msg) if not name.startswith("_")]
    else:
        return
    for name in names:
        # rosbags declares __msgtype__ as a (string-annotated) ClassVar that reads as a field.
        if not name.startswith("__") and hasattr(msg, name):
            yield name, getattr(msg, name)


def is_binary(value: Any) -> bool:
    """Whether ``value`` is raw bytes (a ``uint8[]``/``byte[]`` field such as image data)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return True
    if isinstance(value, array.array):
        return value.typecode in ("b", "B")
    dtype = getattr(value, "dtype", None)
    return dtype is not None and getattr(value, "ndim", 0) > 0 and dtype.itemsize == 1


def is_message(value: Any) -> bool:
    """Whether ``value`` is a nested message (has fields) rather than a primitive or sequence."""
    if isinstance(value, (str, bytes, bytearray, int, float, bool, list, tuple, dict)):
        return False
    if value is None or hasattr(value, "dtype") or isinstance(value, array.array):
        return False
    return any(True for _ in message_fields(value))
