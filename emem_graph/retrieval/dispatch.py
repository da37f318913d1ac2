"""Calling tools by name: argument validation for every entry point, and the never-raising
dispatcher planners use.

``@tool_method`` wraps each tool method so that a Python call and a dispatched call go through
the same schema-generated validation (same messages) and flush the memory first.
``dispatch_tool_call`` turns every failure into a one-line ``Error: ...`` string; it serves a
memory's tools and any other door's (the fleet's, schemas.register_door) with the same checks.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import reprlib
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from emem_graph.errors import EmemGraphError
from emem_graph.gate import gate_of
from emem_graph.limits import load_json
from emem_graph.retrieval.schemas import (
    ALL_SCHEMAS,
    MEMORY_DOOR,
    ToolArgumentError,
    door_schemas,
    validate_arguments,
)

log = logging.getLogger(__name__)

P = ParamSpec("P")
Host = TypeVar("Host", bound="Flushable")


class Flushable(Protocol):
    """What a tool method's owner offers: a flush of pending writes before reading."""

    def flush_before_tool(self) -> None: ...


def tool_method(
    fn: Callable[Concatenate[Host, P], str],
) -> Callable[Concatenate[Host, P], str]:
    """Validate a tool method's arguments against its schema (named like the method), then
    flush and run it with every parameter filled in (given values or schema defaults).

    The method's own defaults must equal the schema's (checked once, at import), so the Python
    signature and the published definition cannot drift apart.

    Raises (from the wrapped call):
        ToolArgumentError: unknown, missing or mistyped argument.
    """
    name = fn.__name__
    parameters = list(inspect.signature(fn).parameters.values())[1:]
    _check_signature(name, parameters)
    names = [p.name for p in parameters]

    @functools.wraps(fn)
    def call(self: Host, *args: P.args, **kwargs: P.kwargs) -> str:
        if len(args) > len(names):
            raise ToolArgumentError(
                f"{name}: takes at most {len(names)} positional arguments, got {len(args)}"
            )
        given: dict[str, Any] = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key in given:
                raise ToolArgumentError(f"{name}: argument {key!r} given twice")
            given[key] = value
        values = validate_arguments(name, given)
        # The memory's gate (gate.py): a tool racing close() answers or raises
        # MemoryClosedError, never a store's error from under a closing memory.
        with gate_of(self):
            self.flush_before_tool()
            run: Callable[..., str] = fn
            return run(self, **values)

    return call


def _check_signature(name: str, parameters: list[inspect.Parameter]) -> None:
    schema = ALL_SCHEMAS[name]["parameters"]
    properties = schema["properties"]
    if [p.name for p in parameters] != list(properties):
        raise TypeError(f"{name}: parameters {[p.name for p in parameters]} != schema")
    for parameter in parameters:
        spec = properties[parameter.name]
        if parameter.name in schema["required"]:
            expected: Any = inspect.Parameter.empty
        else:
            expected = spec.get("default")
        if parameter.default != expected:
            raise TypeError(
                f"{name}: default of {parameter.name} is {parameter.default!r}, "
                f"the schema says {expected!r}"
            )


def dispatch_tool_call(
    owner: object, tool_name: Any, arguments: Any = None, door: str = MEMORY_DOOR
) -> str:
    """Call ``owner``'s tool ``tool_name`` with ``arguments`` and return its text.

    Args:
        owner: the object holding the tool methods.
        tool_name: one of the tools (or planner actions).
        arguments: a dict, a JSON object string (as function-calling APIs deliver it), or None.
        door: whose tools ``owner`` holds: a memory's, or another door's (the fleet's); the
            arguments are checked against that door's schemas, and the method is called with
            the values they validate to.

    Returns:
        The tool's output, or one line ``Error: ...`` naming the problem (unknown tool, unknown
        or mistyped argument, unparseable time, bad value, failing backend). Never raises.
    """
    try:
        schemas = door_schemas(door)
        if not isinstance(tool_name, str) or tool_name not in schemas:
            shown = reprlib.repr(tool_name)  # bounded: a tool name may be any size
            return _error(f"unknown tool {shown}; available: {', '.join(schemas)}")
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            try:
                # Length and nesting are checked before parsing (limits.load_json).
                text = arguments
                arguments = load_json(text, f"{tool_name}: arguments") if text.strip() else {}
            except json.JSONDecodeError as exc:
                return _error(f"{tool_name}: arguments are not valid JSON ({exc.msg})")
        if not isinstance(arguments, dict):
            return _error(
                f"{tool_name}: arguments must be an object of named values, "
                f"got {type(arguments).__name__}"
            )
        if any(not isinstance(key, str) for key in arguments):
            return _error(f"{tool_name}: argument names must be strings")
        # Names 'self' or other odd keys cleanly; the values are the schema's types (1.0
        # given for a count is 1), every parameter filled in.
        values = validate_arguments(tool_name, arguments, door)
        # A RetrievalTools also serves the capabilities' attached tools through .tool().
        lookup = getattr(owner, "tool", None)
        method = lookup(tool_name) if callable(lookup) else getattr(owner, tool_name)
        # None means "not given" (validate_arguments): left out.
        result: str = method(**{key: value for key, value in values.items() if value is not None})
        return result
    except (EmemGraphError, ValueError) as exc:
        return _error(str(exc))
    except (RecursionError, OverflowError, MemoryError) as exc:
        # Left over from an input the bounds did not foresee: still one line, not a crash.
        log.warning("tool %s: %s", tool_name, type(exc).__name__)
        return _error(f"{tool_name}: the arguments are too large or too deeply nested ({exc})")
    except Exception as exc:
        # A tool call must not take the planner down; the traceback goes to the log.
        log.exception("tool %s failed", tool_name)
        return _error(f"{tool_name} failed: {type(exc).__name__}: {exc}")


def _error(message: str) -> str:
    return "Error: " + " ".join(message.split())
