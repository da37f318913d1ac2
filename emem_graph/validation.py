"""Input checks shared by the facade and the tools: clear errors before anything is written."""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Callable
from typing import Any

import numpy as np

from emem_graph.errors import EmbeddingDimensionError, InvalidInputError


def finite(name: str, value: Any) -> float:
    """``value`` as a finite float, or InvalidInputError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidInputError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be finite, got {number}")
    return number


MAX_COORDINATE = 1e9
"""Largest magnitude (metres) of a coordinate the memory takes: |x|, |y|, |z| <= 1e9.

Every Earth frame fits with margin (UTM northings stay below 1e7 m, ECEF below 6.4e6 m plus
altitude; the Moon's orbit is 3.8e8 m), float64 still resolves 1e-7 m there, and the derived
computations (squared distances, grid cells, cluster extents, polygon areas) stay far from
float64's 1.8e308, where a coordinate near 1e308 overflowed them. Refused beyond at every write
door; rows beyond it written by an older version are skipped by the derived structures."""


def coordinate(name: str, value: Any) -> float:
    """``value`` as a finite float with |value| <= MAX_COORDINATE, or InvalidInputError."""
    number = finite(name, value)
    if abs(number) > MAX_COORDINATE:
        raise InvalidInputError(
            f"{name} must be within +-{MAX_COORDINATE:g} m (MAX_COORDINATE), got {number!r}; "
            "give positions in a local or map frame in metres"
        )
    return number


def in_bounds(*values: float) -> bool:
    """True when every value is a finite coordinate within MAX_COORDINATE (for rows read
    back: an older version stored any finite number)."""
    return all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in values)


def clamp_coordinate(value: float) -> float:
    """A stored coordinate brought within +-MAX_COORDINATE (NaN becomes 0): how the derived
    structures (place map, area forest, gist shapes) read rows an older version stored beyond
    the bound, so that opening such a memory never overflows."""
    if math.isnan(value):
        return 0.0
    return max(-MAX_COORDINATE, min(MAX_COORDINATE, value))


def optional_finite(name: str, value: Any) -> float | None:
    """Like finite(), but None passes through."""
    return None if value is None else finite(name, value)


def text(name: str, value: Any, max_chars: int) -> str:
    """Non-empty text of at most ``max_chars`` characters, without NUL characters, that UTF-8
    can encode (see plain_text), as a plain ``str``."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(f"{name} must not be empty")
    if len(value) > max_chars:
        raise InvalidInputError(
            f"{name} has {len(value)} characters; the limit is {max_chars} (max_text_chars)"
        )
    if "\x00" in value:
        raise InvalidInputError(f"{name} must not contain NUL characters")
    return plain_text(name, value)


def name(label: str, value: Any, max_chars: int = 256) -> str:
    """A short identifier-like string (layer, source type, episode name, entity name and
    type): one line, without line breaks or other control characters (a tool prints it inside
    a record's line, where a line break would forge another record's line)."""
    value = text(label, value, max_chars).strip()
    if not value.isprintable():
        for position, character in enumerate(value):
            if unicodedata.category(character) in ("Cc", "Zl", "Zp"):
                raise InvalidInputError(
                    f"{label} holds the control character {character!r} at position "
                    f"{position}; a {label} is one line of text (line breaks, tabs and "
                    "escape codes are refused)"
                )
    return value


def confidence(value: Any) -> float:
    """A confidence in [0, 1]."""
    number = finite("confidence", value)
    if not 0.0 <= number <= 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, got {number}")
    return number


def metadata(value: Any, max_chars: int) -> dict[str, Any]:
    """A JSON object: string keys, values that are strings (UTF-8 encodable), finite numbers,
    booleans, None, lists/tuples and dicts, nested at most MAX_METADATA_DEPTH deep, at most
    ``max_chars`` characters of JSON. Returns its JSON form (tuples read back as lists); None
    becomes {}."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"metadata must be a dict, got {type(value).__name__}")
    try:
        encoded = json.dumps(value, allow_nan=False)
    except RecursionError:
        raise InvalidInputError(
            f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels; flatten it"
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from None
    if len(encoded) > max_chars:
        raise InvalidInputError(f"metadata is {len(encoded)} characters of JSON; limit {max_chars}")
    # Walked after the size check, so the walk is bounded: json.dumps alone would turn keys
    # 1 and "1" into one key silently, and write strings no reader could send as UTF-8.
    _check_metadata_tree(value)
    return dict(json.loads(encoded))


def embedding(value: Any, dim: int) -> np.ndarray:
    """A caller-given embedding: ``dim`` finite numbers, returned unit-length float32."""
    try:
        array = np.asarray(value, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidInputError("embedding must be a sequence of numbers") from None
    if array.shape[0] != dim:
        raise EmbeddingDimensionError(
            f"embedding has {array.shape[0]} dimensions; the memory uses {dim}"
        )
    # One dot product checks every entry: in float64 the squares of finite float32 numbers
    # cannot overflow, so a sum that is not finite means a NaN or infinite entry (and no
    # numpy error state is needed: entering one cost a fifth of an add()).
    wide = array.astype(np.float64)
    squares = float(np.dot(wide, wide))
    if not math.isfinite(squares):
        raise InvalidInputError("embedding contains NaN or infinity")
    norm = math.sqrt(squares)
    if norm == 0.0:
        raise InvalidInputError("embedding is the zero vector")
    return array / norm


# --- text that can always be written and read back -------------------------------------------

MAX_METADATA_DEPTH = 32
"""Deepest nesting of dicts and lists metadata may have (the JSON coders recurse)."""

MIN_TIMESTAMP = -62_104_060_800.0
"""0002-01-01 UTC: the earliest time the memory takes (Python's datetime ends at year 1; a
year's margin keeps time windows around a timestamp formattable)."""
MAX_TIMESTAMP = 253_370_764_800.0
"""9999-01-01 UTC: the latest time the memory takes (datetime ends at 9999-12-31)."""


def plain_text(name: str, value: str) -> str:
    """``value`` as a plain ``str`` (a subclass is copied), refusing what UTF-8 cannot encode.

    A lone surrogate ('\\ud800', as ``json.loads`` or ``bytes.decode(errors='surrogateescape')``
    can give) is refused at the door: Kuzu, LanceDB, the embedder and every JSON or ROS
    reader need UTF-8, so such a string would be accepted and then fail in the batch write.

    Raises:
        InvalidInputError: ``value`` holds a lone surrogate.
    """
    try:
        encoded = str.encode(value, "utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} holds a lone surrogate {value[exc.start]!r} at position {exc.start}, "
            "which UTF-8 cannot store; decode the source bytes with errors='replace'"
        ) from None
    return value if type(value) is str else encoded.decode("utf-8")


def text_list(name: str, value: Any) -> list[str]:
    """``value`` as a list of strings: a list, tuple or other iterable of ``str`` (one string
    alone is refused: iterating it would give its letters)."""
    if isinstance(value, str | bytes | dict):
        raise InvalidInputError(f"{name} must be a list of strings, got {type(value).__name__}")
    try:
        items = list(value)
    except TypeError:
        raise InvalidInputError(
            f"{name} must be a list of strings, got {type(value).__name__}"
        ) from None
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidInputError(f"{name}[{i}] must be a string, got {type(item).__name__}")
        plain_text(f"{name}[{i}]", item)
    return items


def optional_text(name: str, value: Any) -> str | None:
    """A string any length (empty too) that UTF-8 can encode and without NUL, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInputError(f"{name} must not contain NUL characters")
    return plain_text(name, value)


def timestamp(name: str, value: Any) -> float:
    """A finite time in seconds between MIN_TIMESTAMP and MAX_TIMESTAMP (years 2 to 9998), so
    that every tool can print it as a date."""
    number = finite(name, value)
    if not MIN_TIMESTAMP <= number <= MAX_TIMESTAMP:
        raise InvalidInputError(
            f"{name} must be seconds between {MIN_TIMESTAMP:.0f} and {MAX_TIMESTAMP:.0f} "
            f"(years 2 to 9998), got {number!r}; give Unix seconds or a clock starting at 0"
        )
    return number


CLOCK_NAME = "get_current_time() (the memory's clock)"


def checked_clock(clock: Any) -> Callable[[], float]:
    """``clock`` with every reading checked as a timestamp() is: a clock that gives NaN, a
    string or nanoseconds (a ROS time's ``nanoseconds``) would otherwise stamp rows that no
    tool can read back, where the same value given as ``timestamp=`` is refused.

    Raises:
        InvalidInputError: ``clock`` is not callable (at once), or a reading is not a time
            (at that reading: the call that read the clock writes nothing).
    """
    if not callable(clock):
        raise InvalidInputError(
            f"get_current_time must be a function returning seconds, got {type(clock).__name__}"
        )

    def read() -> float:
        return timestamp(CLOCK_NAME, clock())

    return read


def _check_metadata_tree(value: Any) -> None:
    """Refuse non-string keys, unencodable strings and nesting deeper than the limit."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "metadata")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            plain_text(path, node)
            continue
        if not isinstance(node, dict | list | tuple):
            continue  # numbers, booleans, None: json.dumps checked them
        if depth > MAX_METADATA_DEPTH:
            raise InvalidInputError(
                f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels; flatten it"
            )
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    raise InvalidInputError(
                        f"{path} has a key {key!r} of type {type(key).__name__}; metadata keys "
                        "must be strings (JSON would turn it into a string silently)"
                    )
                label = f"{path}[{plain_text(f'a key of {path}', key)!r}]"
                stack.append((item, depth + 1, label))
        else:
            stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(node))


def unstorable(value: Any, max_depth: int = MAX_METADATA_DEPTH) -> str | None:
    """What in ``value`` (a string, or strings inside lists, tuples, dicts and pydantic models,
    as an LLM client answers) the store could not write: a lone surrogate or a NUL character,
    or nesting past ``max_depth``; None when every string is storable."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                return "a NUL character"
            try:
                str.encode(node, "utf-8")
            except UnicodeEncodeError as exc:
                return f"a lone surrogate {node[exc.start]!r}"
            continue
        if depth >= max_depth:
            return f"nesting deeper than {max_depth} levels"
        if isinstance(node, dict):
            stack.extend((item, depth + 1) for pair in node.items() for item in pair)
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend((item, depth + 1) for item in node)
        elif hasattr(node, "__pydantic_fields__"):  # a pydantic model: its field values
            stack.extend((item, depth + 1) for item in vars(node).values())
    return None
