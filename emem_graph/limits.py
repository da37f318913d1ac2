"""Bounds on what callers hand the tools and the command line, refused before any work.

Every limit is a named constant here (the README's Guarantees section quotes them). A value
beyond one is refused with one InvalidInputError line naming the argument and the limit: a
dispatched tool call answers it as ``Error: ...``, a Python call of a tool raises it, the CLI
prints it and exits with status 2. The checks are iterative and cost O(size of the input) at
most, so an oversized or deeply nested input is refused in microseconds to milliseconds,
before any parsing, embedding or query.
"""

from __future__ import annotations

import json
from typing import Any

from emem_graph.errors import InvalidInputError
from emem_graph.validation import MAX_COORDINATE

MAX_TOOL_CALL_CHARS = 200_000
"""Characters of one tool call's JSON argument text (checked before it is parsed)."""
MAX_JSON_DEPTH = 32
"""Nesting depth of JSON arrays and objects in tool arguments and ``--param`` values."""
MAX_TOOL_ARGUMENTS = 64
"""Named arguments in one tool call (every tool takes at most a dozen)."""
MAX_TOOL_TEXT_CHARS = 10_000
"""Characters of a tool's text argument: a query, a name, a layer, an id, a time phrase."""
MAX_TOOL_CONTENT_CHARS = 100_000
"""Characters of the text store_specific_memory writes (the default config.max_text_chars)."""
MAX_TOOL_LIST_ITEMS = 100
"""Items of a list argument (body_status's layers)."""
MAX_TOOL_COORDINATE = MAX_COORDINATE
"""|x|, |y|, |z|, |near_x|, |near_y| of a tool call, in metres: the bound writes have too."""
MAX_TOOL_DISTANCE_M = 1e10
"""A radius or distance argument (radius, spatial_radius, max_distance, max_detour), metres:
larger than any two coordinates within MAX_TOOL_COORDINATE are apart."""
MAX_TOOL_NUMBER = 1e15
"""|value| of any other number argument: times as Unix seconds, minutes, multipliers."""
MAX_PARAM_CHARS = 1_000_000
"""Characters of one ``--param NAME=VALUE`` of the CLI."""
MAX_JSON_FILE_BYTES = 16 * 1024 * 1024
"""Bytes of a JSON file the CLI reads (bench --scale-from)."""
MAX_CLI_TEXT_CHARS = 1_000_000
"""Characters of one command-line argument (a query, a path, a statement)."""
MAX_CLI_NUMBER = 1e10
"""|value| of any number given on the command line (finite only); some have tighter bounds:"""
MAX_DEMO_ROUNDS = 1_000
"""demo --rounds."""
MAX_BAG_DURATION_S = 7 * 24 * 3600.0
"""make-bag --duration (a simulated week)."""
MAX_BENCH_OBSERVATIONS = 100_000_000
"""bench --n, --model-n, --extract-n, --scale-with; and the eval commands' counts."""

_DISTANCES = frozenset({"radius", "spatial_radius", "max_distance", "max_detour"})
_COORDINATES = frozenset({"x", "y", "z", "near_x", "near_y"})
_CONTENTS = frozenset({"content"})


def bound_parameter(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema ``spec`` of tool parameter ``name`` with the limits above filled in
    where it names none (maxLength, maxItems, minimum/maximum); the published schema and the
    argument model are built from the result, so a planner is told the bounds it meets.

    Args:
        name: the parameter's name (decides which numeric bound applies).
        spec: its JSON schema (not modified).

    Returns:
        A copy of ``spec`` with the bounds added.
    """
    bounded = dict(spec)
    kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
    if "string" in kinds and "enum" not in spec:
        limit = MAX_TOOL_CONTENT_CHARS if name in _CONTENTS else MAX_TOOL_TEXT_CHARS
        bounded.setdefault("maxLength", limit)
    if "array" in kinds:
        bounded.setdefault("maxItems", MAX_TOOL_LIST_ITEMS)
        items = dict(spec["items"])
        if items.get("type") == "string":
            items.setdefault("maxLength", MAX_TOOL_TEXT_CHARS)
        bounded["items"] = items
    if kinds == ["number"] or kinds == ["integer"]:
        if name in _COORDINATES:
            top = MAX_TOOL_COORDINATE
        elif name in _DISTANCES:
            top = MAX_TOOL_DISTANCE_M
        else:
            top = MAX_TOOL_NUMBER
        if kinds == ["integer"]:
            top = int(top)
        bounded.setdefault("minimum", -top)
        bounded.setdefault("maximum", top)
    return bounded


def check_tool_arguments(tool: str, arguments: dict[str, Any]) -> None:
    """Refuse arguments too many, too long or too deep before any validation looks at them.

    Only sizes are checked here (O(1) per argument, plus an iterative walk of container
    values); types and bounds are the schema's (schemas.validate_arguments).

    Raises:
        InvalidInputError: more than MAX_TOOL_ARGUMENTS arguments, a text over its limit, a
            list over MAX_TOOL_LIST_ITEMS, a value nested deeper than MAX_JSON_DEPTH.
    """
    if len(arguments) > MAX_TOOL_ARGUMENTS:
        raise InvalidInputError(
            f"{tool}: {len(arguments)} arguments; at most {MAX_TOOL_ARGUMENTS} (MAX_TOOL_ARGUMENTS)"
        )
    for key, value in arguments.items():
        if isinstance(key, str) and len(key) > MAX_TOOL_TEXT_CHARS:
            raise InvalidInputError(f"{tool}: an argument name has {len(key)} characters")
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 63:
            # Bounds compare fine, but showing such a number fails (int -> str limit).
            raise InvalidInputError(
                f"{tool}: argument {key!r} is a whole number of {value.bit_length()} bits; "
                f"numbers are at most {MAX_TOOL_NUMBER:g}"
            )
        if isinstance(value, str):
            limit = MAX_TOOL_CONTENT_CHARS if key in _CONTENTS else MAX_TOOL_TEXT_CHARS
            if len(value) > limit:
                raise InvalidInputError(
                    f"{tool}: argument {key!r} has {len(value):,} characters; the limit is "
                    f"{limit:,}: shorten it"
                )
        elif isinstance(value, (list, tuple, dict, set, frozenset)):
            if len(value) > MAX_TOOL_LIST_ITEMS:
                raise InvalidInputError(
                    f"{tool}: argument {key!r} has {len(value):,} items; the limit is "
                    f"{MAX_TOOL_LIST_ITEMS} (MAX_TOOL_LIST_ITEMS)"
                )
            check_depth(value, f"{tool}: argument {key!r}")


def check_depth(value: Any, what: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse a Python value nested deeper than ``limit`` (walked iteratively: no recursion,
    and a self-containing list is refused too).

    Raises:
        InvalidInputError: nested deeper than ``limit``, or more than MAX_TOOL_CALL_CHARS
            containers and items in all.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (list, tuple, dict, set, frozenset)):
            continue
        if depth > limit:
            raise InvalidInputError(
                f"{what} is nested deeper than {limit} levels (MAX_JSON_DEPTH): flatten it"
            )
        seen += len(item)
        if seen > MAX_TOOL_CALL_CHARS:
            raise InvalidInputError(f"{what} holds more than {MAX_TOOL_CALL_CHARS:,} items")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped), found
    without parsing it; for text that is not JSON the count is meaningless but finite. The
    scan stops once the nesting passes MAX_JSON_DEPTH (returning that depth)."""
    if text.count("[") + text.count("{") <= 1:
        return 1 if "[" in text or "{" in text else 0
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    return deepest  # deeper than any limit: no need to read on
        elif char in "]}":
            depth -= 1
    return deepest


def load_json(text: str, what: str, max_chars: int = MAX_TOOL_CALL_CHARS) -> Any:
    """Parse JSON ``text`` after checking its length and nesting (json.loads recurses: a deep
    text would raise RecursionError, a huge one take memory in proportion).

    Args:
        text: the JSON text.
        what: how the message names it ("semantic_search: arguments").
        max_chars: the length limit.

    Returns:
        The parsed value.

    Raises:
        InvalidInputError: too long, nested deeper than MAX_JSON_DEPTH.
        ValueError (json.JSONDecodeError): not JSON; the caller decides what that means.
    """
    if len(text) > max_chars:
        raise InvalidInputError(
            f"{what}: {len(text):,} characters, over the limit of {max_chars:,}; shorten it"
        )
    if json_depth(text) > MAX_JSON_DEPTH:
        raise InvalidInputError(
            f"{what}: nested deeper than {MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH); flatten it"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # a number of more than 4,300 digits (Python's int limit)
        raise InvalidInputError(f"{what}: {exc}".split(";")[0]) from None


def check_cli_arguments(values: dict[str, Any]) -> None:
    """Refuse a command-line argument beyond its bound (argparse checks only types).

    Args:
        values: ``vars()`` of the parsed arguments.

    Raises:
        InvalidInputError: a number beyond MAX_CLI_NUMBER (or its own bound; infinity too:
            NaN is refused by the command itself), a text over MAX_CLI_TEXT_CHARS or holding a
            NUL character.
    """
    tighter = {"rounds": MAX_DEMO_ROUNDS, "duration": MAX_BAG_DURATION_S}
    for name, value in values.items():
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            option = "--" + name.replace("_", "-")
            if isinstance(item, bool) or item is None:
                continue
            if isinstance(item, (int, float)):
                top = tighter.get(name, MAX_CLI_NUMBER)
                if isinstance(item, int) and name not in tighter and option != "--seed":
                    top = min(top, MAX_BENCH_OBSERVATIONS)
                # NaN is left to the command (its message names the coordinate it breaks).
                if abs(item) > top:
                    raise InvalidInputError(
                        f"{option} {item!r}: must be a finite number within +-{top:g}"
                    )
            elif isinstance(item, str):
                if len(item) > MAX_CLI_TEXT_CHARS:
                    raise InvalidInputError(
                        f"{option}: {len(item):,} characters, over the limit of "
                        f"{MAX_CLI_TEXT_CHARS:,}"
                    )
                if "\x00" in item:
                    raise InvalidInputError(f"{option}: contains a NUL character")
