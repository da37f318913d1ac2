"""The fleet's tools: the seven retrieval tools a fleet answers, each with one memory's schema
(retrieval/schemas.py) less the parameters only one memory has, plus ``robot``. They are
registered as the door ``fleet`` (schemas.register_door), so a dispatched call is checked by
the same code, with the same bounds, as a memory's (retrieval/dispatch.py), and every failure
is one ``Error: ...`` line."""

from __future__ import annotations

import copy
from typing import Any

from emem_graph.fleet.layout import MAX_ROBOT_CHARS
from emem_graph.retrieval.schemas import door_schemas, register_door, tool_schema

FLEET_DOOR = "fleet"
FLEET_TOOLS = (
    "semantic_search",
    "spatial_query",
    "temporal_query",
    "entity_query",
    "locate",
    "recall",
    "search_gists",
)
ONE_MEMORY_ONLY = ("include_body_state", "at_time", "scope")
"""Parameters of a memory's tools that a fleet does not answer."""
ROBOT = {
    "type": ["string", "array"],
    "items": {"type": "string", "maxLength": MAX_ROBOT_CHARS},
    "maxLength": MAX_ROBOT_CHARS,
    "description": "Only this robot's memories (its name in the fleet), or only these robots' "
    "(a list of names); every robot's when left out. Every answer line names its robot.",
}
"""How many robots a list may name is the bound every list argument has (limits.py); each
name must also be a robot's name (layout.check_robot), checked when the fleet reads it."""
FLEET_NOTE = (
    " Fleet: asks every robot's pushed memory (positions in the fleet frame); each line starts "
    "with [robot NAME]."
)


def _fleet_schemas() -> dict[str, dict[str, Any]]:
    """One memory's schemas of FLEET_TOOLS (in a memory's order), less ONE_MEMORY_ONLY, plus
    ``robot``; tool_schema bounds each parameter as a memory's are."""
    schemas = {}
    for name, memory in door_schemas().items():
        if name not in FLEET_TOOLS:
            continue
        parameters = memory["parameters"]
        properties = {
            key: copy.deepcopy(spec)
            for key, spec in parameters["properties"].items()
            if key not in ONE_MEMORY_ONLY
        }
        properties["robot"] = copy.deepcopy(ROBOT)
        required = [key for key in parameters["required"] if key in properties]
        schemas[name] = tool_schema(name, memory["description"] + FLEET_NOTE, properties, required)
    return schemas


register_door(FLEET_DOOR, _fleet_schemas())


def fleet_tool_definitions() -> list[dict[str, Any]]:
    """The fleet's tools in OpenAI function-calling form (deep copies, safe to modify)."""
    return [
        {"type": "function", "function": copy.deepcopy(schema)}
        for schema in door_schemas(FLEET_DOOR).values()
    ]
