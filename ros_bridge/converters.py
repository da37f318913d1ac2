"""Message → memory text, per ROS type name, with a per-layer template override.

Every converter is deterministic (the same message gives the same text) and returns None when the
message holds nothing worth remembering (empty text, NaN, no detection above the threshold).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from emem_graph.errors import InvalidInputError
from ros_bridge.config import LayerConfig
from ros_bridge.messages import is_binary, is_message, message_fields

GENERIC_MAX_CHARS = 1000
"""Longest text of the generic converter (longer text is cut and ends with "…")."""
GENERIC_MAX_ITEMS = 8
"""Sequences of numbers longer than this are written as ``[N values]``."""

_FLOAT32 = {"std_msgs/msg/Float32"}
_FLOAT64 = {"std_msgs/msg/Float64"}
_INTEGERS = {
    f"std_msgs/msg/{name}"
    for name in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Byte")
}
NUMERIC_TYPES = frozenset(_FLOAT32 | _FLOAT64 | _INTEGERS)
STRING = "std_msgs/msg/String"
BOOL = "std_msgs/msg/Bool"
BATTERY_STATE = "sensor_msgs/msg/BatteryState"
DETECTION2D_ARRAY = "vision_msgs/msg/Detection2DArray"

# sensor_msgs/BatteryState power_supply_status constants.
_SUPPLY_STATUS = {1: "charging", 2: "discharging", 3: "not charging", 4: "full"}

_IRREGULAR_PLURALS = {
    "person": "people",
    "man": "men",
    "woman": "women",
    "child": "children",
    "mouse": "mice",
    "foot": "feet",
    "tooth": "teeth",
    "goose": "geese",
    "knife": "knives",
    "shelf": "shelves",
    "leaf": "leaves",
    "wolf": "wolves",
    "sheep": "sheep",
    "fish": "fish",
    "deer": "deer",
}


class ConversionError(InvalidInputError):
    """A layer's template does not fit its messages (unknown field, bad format spec)."""


def convert(layer: LayerConfig, msg: Any) -> str | None:
    """The text to remember for ``msg`` arriving on ``layer``, or None when there is none.

    The built-in text depends on ``layer.type`` (see the module's converters); a layer
    ``template`` replaces it, formatted over the message's fields plus ``text`` (the built-in
    text), ``label``, ``unit`` and ``value`` (numeric and Bool messages). For the known types a
    message whose built-in text is None (empty, NaN, nothing detected) stays None with a template.

    Raises:
        ConversionError: the template names a field the message lacks or has a bad format spec.
    """
    converter = _CONVERTERS.get(layer.type)
    if converter is None:
        converter = _detections_converter(layer.type) or _generic
    text = converter(layer, msg)
    if layer.template is None:
        return text
    if text is None and converter is not _generic:
        return None
    return _render(layer, msg, text)


def pluralise(noun: str, count: int) -> str:
    """``noun`` for ``count`` things: the last word of a label gets an English plural
    (``chair`` → ``chairs``, ``bus`` → ``buses``, ``person`` → ``people``)."""
    if count == 1 or not noun:
        return noun
    head, sep, word = noun.rpartition(" ")
    lower = word.lower()
    if lower in _IRREGULAR_PLURALS:
        plural = _IRREGULAR_PLURALS[lower]
        plural = plural if word.islower() else word[0] + plural[1:]
    elif lower.endswith(("s", "x", "z", "ch", "sh")):
        plural = word + "es"
    elif lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        plural = word[:-1] + "ies"
    else:
        plural = word + "s"
    return f"{head}{sep}{plural}"


def detection_text(labels_scores: list[tuple[str, float]], threshold: float) -> str | None:
    """``"2 chairs, 1 person"`` from (label, score) pairs.

    Only detections with ``score >= threshold`` count. Labels are stripped and underscores become
    spaces; counts are ordered by count (highest first), then label (alphabetical), so the same
    detections always give the same text. Returns None when nothing reaches the threshold.
    """
    counts: Counter[str] = Counter()
    for label, score in labels_scores:
        name = label.replace("_", " ").strip()
        if name and math.isfinite(score) and score >= threshold:
            counts[name] += 1
    if not counts:
        return None
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {pluralise(name, count)}" for name, count in ordered)


# --- built-in converters -------------------------------------------------------------------


def _string(layer: LayerConfig, msg: Any) -> str | None:
    data = getattr(msg, "data", None)
    if data is None:
        return None
    text = str(data).strip()
    return text or None


def _numeric(layer: LayerConfig, msg: Any) -> str | None:
    value = _numeric_value(layer.type, msg)
    if value is None:
        return None
    return f"{layer.display_label}: {_format_number(layer.type, value)}{layer.unit}"


def _numeric_value(type_name: str, msg: Any) -> float | int | None:
    data = getattr(msg, "data", None)
    if data is None or isinstance(data, (str, bytes)):
        return None
    if type_name in _INTEGERS:
        return int(data)
    value = float(data)
    return value if math.isfinite(value) else None


def _format_number(type_name: str, value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    if type_name in _FLOAT32:
        # The shortest text that reads back as the same float32 (0.1, not 0.10000000149011612).
        return str(np.float32(value))
    return repr(float(value))


def _bool(layer: LayerConfig, msg: Any) -> str | None:
    data = getattr(msg, "data", None)
    if data is None:
        return None
    return f"{layer.display_label}: {'true' if bool(data) else 'false'}"


def _battery_state(layer: LayerConfig, msg: Any) -> str | None:
    label = layer.label or "battery"
    percentage = _finite(getattr(msg, "percentage", None))
    voltage = _finite(getattr(msg, "voltage", None))
    temperature = _finite(getattr(msg, "temperature", None))
    status = _SUPPLY_STATUS.get(int(getattr(msg, "power_supply_status", 0) or 0))
    details = []
    if voltage is not None:
        details.append(f"{voltage:.1f} V")
    if temperature is not None:
        details.append(f"{temperature:.1f} °C")
    if status is not None:
        details.append(status)
    if percentage is None and not details:
        return None
    text = label
    if percentage is not None:
        # ROS says 0..1; some drivers publish 0..100.
        percent = percentage * 100.0 if percentage <= 1.0 else percentage
        text += f" {round(percent)}%"
    if details:
        text += f" ({', '.join(details)})"
    return text


def _vision_detections(layer: LayerConfig, msg: Any) -> str | None:
    pairs = []
    for detection in getattr(msg, "detections", None) or []:
        best: tuple[str, float] | None = None
        for result in getattr(detection, "results", None) or []:
            hypothesis = getattr(result, "hypothesis", None)
            if hypothesis is not None:  # vision_msgs >= 4 (ROS 2 Humble on)
                label, score = getattr(hypothesis, "class_id", ""), getattr(hypothesis, "score", 0)
            else:  # older vision_msgs: id and score on the result itself
                label, score = getattr(result, "id", ""), getattr(result, "score", 0)
            candidate = (str(label), float(score))
            if best is None or candidate[1] > best[1]:
                best = candidate
        if best is not None:
            pairs.append(best)
    return detection_text(pairs, layer.score_threshold)


def _agents_detections(layer: LayerConfig, msg: Any) -> str | None:
    """EmbodiedAgents Detections2D (parallel ``labels`` / ``scores``) and its multi-source form
    (``detections``: a list of Detections2D)."""
    sources = [msg] if hasattr(msg, "labels") else list(getattr(msg, "detections", None) or [])
    pairs = []
    for source in sources:
        labels = list(getattr(source, "labels", None) or [])
        scores = list(getattr(source, "scores", None) or [])
        for index, label in enumerate(labels):
            score = float(scores[index]) if index < len(scores) else 1.0
            pairs.append((str(label), score))
    return detection_text(pairs, layer.score_threshold)


def _detections_converter(type_name: str) -> Callable[[LayerConfig, Any], str | None] | None:
    # EmbodiedAgents' interface package has been renamed over releases; match the message name.
    name = type_name.rpartition("/")[2]
    if name in ("Detections2D", "Detections2DMultiSource", "Detections3D"):
        return _agents_detections
    return None


def _generic(layer: LayerConfig, msg: Any) -> str | None:
    """``field: value`` pairs of every leaf field, flattened with dotted paths, in declaration
    order; binary data, header stamps and NaN are left out; capped at GENERIC_MAX_CHARS."""
    parts: list[str] = []
    _flatten(msg, "", parts, depth=0)
    if not parts:
        return None
    text = ", ".join(parts)
    if len(text) > GENERIC_MAX_CHARS:
        text = text[: GENERIC_MAX_CHARS - 1].rstrip(", ") + "…"
    return text


def _flatten(value: Any, path: str, parts: list[str], depth: int) -> None:
    if sum(len(part) + 2 for part in parts) > GENERIC_MAX_CHARS or depth > 12:
        return
    if is_binary(value):
        return
    if is_message(value):
        if path.rpartition(".")[2] == "stamp" and _is_time(value):
            return  # the observation's timestamp already holds it
        for name, child in message_fields(value):
            _flatten(child, f"{path}.{name}" if path else name, parts, depth + 1)
        return
    if isinstance(value, (list, tuple)) or (hasattr(value, "dtype") and value.ndim > 0):
        items = list(value)
        if not items:
            return
        if all(is_message(item) for item in items):
            for index, item in enumerate(items):
                _flatten(item, f"{path}[{index}]", parts, depth + 1)
            return
        if len(items) > GENERIC_MAX_ITEMS:
            parts.append(f"{path}: [{len(items)} values]")
            return
        parts.append(f"{path}: [{', '.join(_scalar(item) or 'nan' for item in items)}]")
        return
    text = _scalar(value)
    if text is not None and path:
        parts.append(f"{path}: {text}")


def _is_time(value: Any) -> bool:
    names = {name for name, _ in message_fields(value)}
    return names in ({"sec", "nanosec"}, {"secs", "nsecs"})


def _scalar(value: Any) -> str | None:
    if isinstance(value, str):
        text = value.strip()
        return text or None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return None
        return f"{number:.6g}"
    if value is None:
        return None
    return str(value)


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _render(layer: LayerConfig, msg: Any, text: str | None) -> str | None:
    values: dict[str, Any] = {
        "text": text or "",
        "label": layer.display_label,
        "unit": layer.unit,
    }
    if layer.type in NUMERIC_TYPES:
        values["value"] = _numeric_value(layer.type, msg)
    elif layer.type == BOOL:
        values["value"] = bool(getattr(msg, "data", False))
    values.update(message_fields(msg))
    try:
        rendered = string.Formatter().vformat(layer.template or "", (), values)
    except (KeyError, AttributeError, IndexError, ValueError, TypeError) as exc:
        raise ConversionError(
            f"layers {layer.name!r}: template {layer.template!r} does not fit a {layer.type} "
            f"message: {type(exc).__name__}: {exc}"
        ) from None
    rendered = rendered.strip()
    return rendered or None


_CONVERTERS: dict[str, Callable[[LayerConfig, Any], str | None]] = {
    STRING: _string,
    BOOL: _bool,
    BATTERY_STATE: _battery_state,
    DETECTION2D_ARRAY: _vision_detections,
    **dict.fromkeys(NUMERIC_TYPES, _numeric),
}
