"""The tools' JSON schemas (OpenAI function-calling form) and the argument models built from them.

TOOL_SCHEMAS is the single source of truth: get_tool_definitions() returns it as is, and the
pydantic model that validates a tool's arguments (for dispatch and for the Python methods
alike) is generated from the same dict, so a parameter, type, default or bound cannot differ
between what a model is told and what is accepted. Another set of tools made from these
schemas (the fleet's) is registered as a door of its own (register_door) and validated by the
same code, with the same rules and bounds. The other spellings of a tool are checked
against it: the method running the tool when its module is imported (dispatch.tool_method), the
facade method and the ROS ``.srv`` request by tests/test_tool_definitions.py. The search filters
a tool takes are described once here (_filters), named once in emem_graph/filters.py.
"""

from __future__ import annotations

import copy
import functools
import reprlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from emem_graph.errors import InvalidInputError
from emem_graph.filters import AREA_PARAMETERS, FILTER_PARAMETERS
from emem_graph.limits import bound_parameter, check_tool_arguments

_TIME_FORMS = (
    "Relative ('-10m', '-2h', '-1d', '-30s', '10 minutes ago', 'an hour', 'yesterday', "
    "'last week') or a Unix timestamp in seconds."
)
_N_RESULTS = {
    "type": "integer",
    "default": 10,
    "minimum": 1,
    "maximum": 1000,
    "description": "Maximum number of results to return.",
}
_LAYER = {
    "type": "string",
    "description": "Only memories of this layer (e.g. 'captions', 'detections'); omit for all.",
}
_NEAR_X = {
    "type": "number",
    "description": "X of the centre of an area filter (world frame, metres); needs near_y and "
    "spatial_radius.",
}
_NEAR_Y = {"type": "number", "description": "Y of the centre of the area filter (metres)."}
_SPATIAL_RADIUS = {
    "type": "number",
    "minimum": 0,
    "description": "Radius of the area filter around (near_x, near_y), in metres.",
}
_BODY = {
    "type": "boolean",
    "default": False,
    "description": "Also return body-state readings (battery, temperature...); off by default.",
}


_SCOPE = {
    "type": "string",
    "enum": ["local", "global"],
    "default": "local",
    "description": "'global' answers an implicit or global question ('where can I get a "
    "coffee?', 'what is this place like?') by walking the area hierarchy (at most 3 chains, "
    "no filters); 'local' (default) searches memories directly.",
}

GLOBAL_CHAINS = 3
"""Chains a tool's global scope returns at most (more retrieved context makes planners worse)."""


def _time(what: str) -> dict[str, Any]:
    return {"type": ["string", "number"], "description": f"{what} {_TIME_FORMS}"}


def _required_text(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "pattern": r"\S", "description": description}


def _filters(what: str, *names: str) -> dict[str, Any]:
    """The search filters ``names`` (of filters.FILTER_PARAMETERS, in that order) as schema
    properties; ``what`` names the records in the time filters' descriptions ('memories')."""
    if list(names) != [name for name in FILTER_PARAMETERS if name in names]:
        raise ValueError(f"filter parameters {names} are not in FILTER_PARAMETERS order")
    common = {
        "layer": _LAYER,
        "time_after": _time(f"Only {what} from after this time."),
        "time_before": _time(f"Only {what} from before this time."),
        "near_x": _NEAR_X,
        "near_y": _NEAR_Y,
        "spatial_radius": _SPATIAL_RADIUS,
        "episode_id": {
            "type": "string",
            "description": f"Only {what} of this episode (an id from start_episode).",
        },
    }
    return {name: common[name] for name in names}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    # Every parameter gets its size bound (limits.py) written into the schema itself: the
    # planner is told the bound the argument model then enforces.
    bounded = {key: bound_parameter(key, spec) for key, spec in properties.items()}
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": bounded, "required": required},
    }


TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "semantic_search": _tool(
        "semantic_search",
        "Find memories by meaning and keywords: observations, summaries and known entities "
        "that match a description ('red cup', 'person waving'). Several things in one request "
        "('the cup, then the kettle') are each searched. Use when no more specific tool fits. "
        "Do NOT use for 'where is X' (use locate), for what happened in a time window (use "
        "temporal_query), for what is near a coordinate (use spatial_query), for a named "
        "entity's count or last position (use entity_query), or for the robot's own state "
        "(use body_status).",
        {
            "query": _required_text("What to find, in natural language."),
            "n_results": _N_RESULTS,
            **_filters("memories", *FILTER_PARAMETERS),
            "include_body_state": _BODY,
            "scope": _SCOPE,
        },
        ["query"],
    ),
    "spatial_query": _tool(
        "spatial_query",
        "List what was observed within a radius of a coordinate, nearest first, with no "
        "meaning filter. Use when the question gives a position ('what is at (3, 4)?'). Do NOT "
        "use to find where something is (use locate) or for memories without real "
        "coordinates.",
        {
            "x": {"type": "number", "description": "X of the point (world frame, metres)."},
            "y": {"type": "number", "description": "Y of the point (world frame, metres)."},
            "z": {
                "type": "number",
                "default": 0.0,
                "description": "Z of the point; the radius is measured horizontally.",
            },
            "radius": {
                "type": "number",
                "default": 2.0,
                "minimum": 0,
                "description": "Radius in metres.",
            },
            **_filters("observations", "layer", "time_after", "time_before"),
            "n_results": _N_RESULTS,
            "include_body_state": _BODY,
        },
        ["x", "y"],
    ),
    "temporal_query": _tool(
        "temporal_query",
        "List what was observed in a time window, newest (or oldest) first: 'what happened in "
        "the last 10 minutes', 'yesterday', 'between X and Y', optionally in an area or a "
        "layer. When the window's observations were consolidated it returns their summaries. "
        "Use it instead of semantic_search for time-focused questions. Do NOT use for 'what "
        "is around me now' (use get_current_context).",
        {
            "time_after": _time("Start of the window."),
            "time_before": _time("End of the window."),
            "last_n_minutes": {
                "type": "number",
                "minimum": 0,
                "description": "Shortcut: the window is the last N minutes up to now.",
            },
            **_filters("observations", "layer", *AREA_PARAMETERS),
            "order": {
                "type": "string",
                "enum": ["newest", "oldest"],
                "default": "newest",
                "description": "'newest' lists the most recent first, 'oldest' the earliest.",
            },
            "n_results": _N_RESULTS,
            "include_body_state": _BODY,
        },
        [],
    ),
    "episode_summary": _tool(
        "episode_summary",
        "Summarise past episodes (tasks, sessions): their status, summary and how many "
        "observations they hold and when. Use when the question names a task ('the kitchen "
        "patrol') or asks about the last task(s). Give episode_id, or task_name (all episodes "
        "whose name contains it, newest first), or last_n. Do NOT use for individual "
        "observations (use semantic_search or temporal_query).",
        {
            "episode_id": {
                "type": "string",
                "description": "Exact episode id (from start_episode).",
            },
            "task_name": {
                "type": "string",
                "description": "Part of the episode name, any case ('kitchen').",
            },
            "last_n": {
                "type": "integer",
                "default": 1,
                "minimum": 1,
                "maximum": 100,
                "description": "How many of the most recent episodes (with task_name: at "
                "least 10 matches are listed).",
            },
        },
        [],
    ),
    "get_current_context": _tool(
        "get_current_context",
        "Describe the robot's situation NOW: its position, what is nearby (observations, area "
        "summaries, entities), what happened in the last minutes, and its body status. Use for "
        "'what do you see', 'where am I', 'what is going on'. Do NOT use for the past (use "
        "temporal_query or episode_summary) or for finding a thing (use locate).",
        {
            "radius": {
                "type": "number",
                "default": 3.0,
                "minimum": 0,
                "description": "What counts as nearby, in metres.",
            },
            "include_recent_minutes": {
                "type": "number",
                "default": 5.0,
                "minimum": 0,
                "description": "How many minutes back 'recent' reaches.",
            },
        },
        [],
    ),
    "search_gists": _tool(
        "search_gists",
        "Search only the consolidated summaries (gists) of past experience. Use for questions "
        "about long ago, or when a high-level summary is wanted rather than single events. Do "
        "NOT use for recent or specific observations (use semantic_search first).",
        {
            "query": _required_text("What to find in the summaries."),
            "n_results": _N_RESULTS,
            "time_after": _time("Only summaries covering a time after this."),
            "time_before": _time("Only summaries covering a time before this."),
        },
        ["query"],
    ),
    "entity_query": _tool(
        "entity_query",
        "Look up persistent entities (objects, people, landmarks) by name, type, area or last "
        "sighting: their position, type and how often they were seen. Use for 'how often did "
        "I see Maria', 'which chairs are there', 'where was the red chair last seen'. Do NOT "
        "use for events or descriptions (use semantic_search); if nothing is found, try "
        "semantic_search or locate.",
        {
            "name": {
                "type": "string",
                "description": "Part of the entity name, any case ('chair').",
            },
            "entity_type": {
                "type": "string",
                "description": "Entity type, any case ('furniture', 'person').",
            },
            **_filters("entities", *AREA_PARAMETERS),
            "last_seen_after": _time("Only entities seen after this time."),
            "n_results": _N_RESULTS,
        },
        [],
    ),
    "locate": _tool(
        "locate",
        "Estimate WHERE something is: a position (x, y, z) and a radius, from the memories "
        "that match it best (weak matches are ignored). A thing that moved is answered where it "
        "is now, with when it was last seen there, whether a later look missed it and where it "
        "was before. Use for 'where is the kitchen', 'find the charging station', 'where was "
        "the red cup at 10:00' (at_time). Do NOT use to list memories (use semantic_search) or "
        "for memories without real coordinates.",
        {
            "concept": _required_text("What to locate, in natural language."),
            "n_results": {
                **_N_RESULTS,
                "description": "How many matching memories to consider for the estimate.",
            },
            **_filters("memories", "layer", "time_after", "time_before"),
            "include_body_state": _BODY,
            "at_time": {
                "type": ["string", "number"],
                "description": "Where the thing was at this time (a history question: the "
                "position it had then), instead of where it is now. A clock time '10:00' (UTC, "
                f"the latest one not in the future) or {_TIME_FORMS[0].lower()}{_TIME_FORMS[1:]}",
            },
        },
        ["concept"],
    ),
    "recall": _tool(
        "recall",
        "Tell everything about a PLACE or thing with a location: locates it, then gathers the "
        "observations, summaries and entities around it. Use for 'describe the kitchen', "
        "'everything about Maria's desk'; several things in one request are each recalled. "
        "Do NOT use for abstract topics or memories without coordinates (use "
        "semantic_search).",
        {
            "query": _required_text("What to recall, in natural language."),
            "n_results": {**_N_RESULTS, "description": "Items per section."},
            "radius_multiplier": {
                "type": "number",
                "default": 1.5,
                "exclusiveMinimum": 0,
                "description": "Multiplier on the located radius for gathering (at least 2 m).",
            },
            "include_body_state": _BODY,
            "scope": _SCOPE,
        },
        ["query"],
    ),
    "body_status": _tool(
        "body_status",
        "Report the robot's OWN state: the latest reading of each body-state layer and its "
        "age. Use for battery level, CPU temperature, joint health. Do NOT use for anything "
        "in the environment.",
        {
            "layers": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Body-state layers to report (e.g. ['battery']); omit for all.",
            },
        },
        [],
    ),
}
"""The ten retrieval tools."""

ACTION_SCHEMAS: dict[str, dict[str, Any]] = {
    "store_specific_memory": _tool(
        "store_specific_memory",
        "Write a note into memory (a fact to keep: 'the keys are in the blue bowl'), at the "
        "robot's current position unless x, y are given. Do NOT use to search memory.",
        {
            "content": _required_text("The note to remember."),
            "layer_name": {
                "type": "string",
                "default": "agent_notes",
                "minLength": 1,
                "description": "Layer to store the note in.",
            },
            "x": {"type": "number", "description": "X of the note (default: current position)."},
            "y": {"type": "number", "description": "Y of the note (default: current position)."},
            "z": {"type": "number", "description": "Z of the note (default: current position)."},
        },
        ["content"],
    ),
    "start_episode": _tool(
        "start_episode",
        "Start a new episode (task); later observations belong to it. An active episode is "
        "ended first.",
        {"name": _required_text("Name of the task, e.g. 'patrol kitchen'.")},
        ["name"],
    ),
    "end_episode": _tool(
        "end_episode",
        "End the current episode (task).",
        {},
        [],
    ),
}
"""The write-side actions offered to planners."""

CORE_TOOLS: tuple[str, ...] = tuple(TOOL_SCHEMAS)
"""The ten retrieval tools of API.md (TOOL_SCHEMAS also holds the capabilities' tools)."""

ALL_SCHEMAS: dict[str, dict[str, Any]] = {**TOOL_SCHEMAS, **ACTION_SCHEMAS}

MEMORY_DOOR = "memory"
"""The door of one memory's tools and actions (ALL_SCHEMAS)."""
_DOORS: dict[str, dict[str, dict[str, Any]]] = {MEMORY_DOOR: ALL_SCHEMAS}

# Public helpers for the capabilities' schema modules (spatial, areas, profile), so their
# parameters read like the core tools'.
tool_schema = _tool
required_text = _required_text
time_parameter = _time
N_RESULTS = _N_RESULTS
LAYER = _LAYER


def register_tool_schemas(schemas: dict[str, dict[str, Any]]) -> None:
    """Add a capability's tools (schemas made with ``tool_schema``) after the core ten.

    Called once, at import, by the capability's schema module; the capability's tool methods
    (``@tool_method``) are checked against these schemas when their module is imported.

    Raises:
        ValueError: a tool of that name is registered already.
    """
    for name, schema in schemas.items():
        if name in ALL_SCHEMAS:
            raise ValueError(f"tool {name!r} is registered already")
        if schema["name"] != name:
            raise ValueError(f"tool {name!r}: its schema is named {schema['name']!r}")
    TOOL_SCHEMAS.update(schemas)
    # ALL_SCHEMAS keeps the tools first, then the planner actions.
    ALL_SCHEMAS.clear()
    ALL_SCHEMAS.update({**TOOL_SCHEMAS, **ACTION_SCHEMAS})
    arguments_model.cache_clear()


def register_door(door: str, schemas: dict[str, dict[str, Any]]) -> None:
    """Serve ``schemas`` (tool name -> schema, each made with ``tool_schema`` so that every
    parameter carries its bound) as the tools of ``door``: validate_arguments and
    dispatch.dispatch_tool_call given ``door`` check calls against them with the same code,
    rules and bounds as a memory's. Called once, at import, by the module that owns them.

    Raises:
        ValueError: the door is registered already.
    """
    if door in _DOORS:
        raise ValueError(f"tool door {door!r} is registered already")
    _DOORS[door] = schemas


def door_schemas(door: str = MEMORY_DOOR) -> dict[str, dict[str, Any]]:
    """The schemas of the tools ``door`` serves, by name (not a copy: do not modify)."""
    return _DOORS[door]


class ToolArgumentError(InvalidInputError):
    """A tool was called with an unknown, missing or mistyped argument."""


def tool_definitions(include_actions: bool = False) -> list[dict[str, Any]]:
    """The tools in OpenAI function-calling form (deep copies, safe to modify)."""
    schemas = ALL_SCHEMAS if include_actions else TOOL_SCHEMAS
    return [{"type": "function", "function": copy.deepcopy(s)} for s in schemas.values()]


def _no_bool(value: Any) -> Any:
    # JSON true is not a number here (pydantic would read it as 1).
    if isinstance(value, bool):
        raise ValueError("Input should be a number, not a boolean")
    return value


def _field_type(spec: dict[str, Any]) -> Any:
    kind = spec["type"]
    if "enum" in spec:
        return Literal[tuple(spec["enum"])]
    if kind == ["string", "number"]:
        return Annotated[str | float, BeforeValidator(_no_bool)]
    if kind == ["string", "array"]:
        # One name or several (the fleet's robot): each form keeps its own bounds.
        return (
            Annotated[str, Field(max_length=spec.get("maxLength"))]
            | Annotated[
                list[Annotated[str, Field(max_length=spec["items"].get("maxLength"))]],
                Field(max_length=spec.get("maxItems")),
            ]
        )
    scalar = {"string": str, "integer": int, "number": float, "boolean": bool}
    if kind in ("integer", "number"):
        return Annotated[scalar[kind], BeforeValidator(_no_bool)]
    if kind == "array":
        if spec["items"]["type"] != "string":
            raise TypeError(f"unsupported array items in tool schema: {spec['items']}")
        return list[Annotated[str, Field(max_length=spec["items"].get("maxLength"))]]
    return scalar[kind]


def _field(spec: dict[str, Any], required: bool) -> tuple[Any, Any]:
    constraints: dict[str, Any] = {}
    for keyword, argument in (
        ("minimum", "ge"),
        ("maximum", "le"),
        ("exclusiveMinimum", "gt"),
        ("minLength", "min_length"),
        ("maxLength", "max_length"),
        ("maxItems", "max_length"),
        ("pattern", "pattern"),
    ):
        if keyword in spec:
            constraints[argument] = spec[keyword]
    if isinstance(spec["type"], list):
        # A time (text or number): its text length is checked by limits.check_tool_arguments;
        # text or a list: each form carries its bound in its type (_field_type).
        constraints.pop("max_length", None)
    annotation = _field_type(spec)
    if required:
        return annotation, Field(..., **constraints)
    if "default" in spec:
        return annotation, Field(spec["default"], **constraints)
    return annotation | None, Field(None, **constraints)


@functools.cache
def arguments_model(tool: str, door: str = MEMORY_DOOR) -> type[BaseModel]:
    """The pydantic model of ``tool``'s arguments at ``door``, generated from its schema."""
    parameters = _DOORS[door][tool]["parameters"]
    required = set(parameters["required"])
    fields: dict[str, Any] = {
        name: _field(spec, name in required) for name, spec in parameters["properties"].items()
    }
    config = ConfigDict(extra="forbid", allow_inf_nan=False)
    return create_model(f"{tool}_arguments", __config__=config, **fields)


def validate_arguments(
    tool: str, arguments: dict[str, Any], door: str = MEMORY_DOOR
) -> dict[str, Any]:
    """Check ``arguments`` against the schema of ``tool`` at ``door`` (a memory's tools, or
    another door's: register_door); returns every parameter's value (given or default). A
    None value means "not given".

    Raises:
        ToolArgumentError: unknown tool, unknown or missing argument, wrong type or bound; the
            message names the tool and the argument.
    """
    schemas = _DOORS[door]
    if tool not in schemas:
        shown = reprlib.repr(tool)  # bounded: a tool name may be any size
        raise ToolArgumentError(f"unknown tool {shown}; available: {', '.join(schemas)}")
    try:
        # Sizes first (limits.py): an oversized or deeply nested value is refused before the
        # model (or a repr of it in a message) walks it.
        check_tool_arguments(tool, arguments)
    except InvalidInputError as exc:
        raise ToolArgumentError(str(exc)) from None
    given = {key: value for key, value in arguments.items() if value is not None}
    key = _validated_key(door, tool, given)
    if key is not None:
        known = _VALIDATED.get(key)
        if known is not None:
            return dict(known)
    model = arguments_model(tool, door)
    try:
        values = dict(model.model_validate(given))
    except ValidationError as exc:
        raise ToolArgumentError(_describe(tool, exc, door)) from None
    if key is not None:
        if len(_VALIDATED) >= VALIDATED_MAX:
            _VALIDATED.clear()
        _VALIDATED[key] = values
    return dict(values)


VALIDATED_MAX = 1024
"""Argument sets whose validation is kept (a planner asks the same questions again and again:
validating took 5-6 us of a 0.09 ms temporal_query)."""
_VALIDATED: dict[tuple[Any, ...], dict[str, Any]] = {}
_KEYED_TYPES = (str, int, float, bool)
_KEYED_CHARS = 256


def _validated_key(door: str, tool: str, given: dict[str, Any]) -> tuple[Any, ...] | None:
    """The cache key of an argument set: the door and tool, each value with its exact type
    (True, 1 and 1.0 validate differently but are equal as keys), or None when a value is not
    a plain scalar or is a long string (those are validated every time)."""
    parts: list[Any] = [door, tool]
    for name, value in sorted(given.items()):
        kind = type(value)
        if kind not in _KEYED_TYPES or (kind is str and len(value) > _KEYED_CHARS):
            return None
        if kind is float and value != value:  # NaN: never equal to itself, never a hit
            return None
        parts.append((name, kind, value))
    return tuple(parts)


_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxstring = 57
_SHORT.maxother = 57
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = 4
"""Shows a rejected value in a message: bounded in size and depth (never a RecursionError)."""


def _describe(tool: str, exc: ValidationError, door: str = MEMORY_DOOR) -> str:
    accepted = ", ".join(_DOORS[door][tool]["parameters"]["properties"]) or "none"
    problems = []
    for error in exc.errors():
        where = str(error["loc"][0]) if error["loc"] else "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r} (accepted: {accepted})")
        elif error["type"] == "missing":
            problems.append(f"missing required argument {where!r}")
        else:
            try:
                shown = _SHORT.repr(error.get("input"))
            except ValueError:  # an int too long to turn into text
                shown = f"a {type(error.get('input')).__name__} too large to show"
            problems.append(f"argument {where!r}: {error['msg']} (got {shown})")
    return f"{tool}: " + "; ".join(problems)
