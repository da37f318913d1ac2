"""The fleet's tool definitions and dispatcher: the seven retrieval tools a fleet answers, each
with one memory's definition (retrieval/schemas.py) less the parameters only one memory has,
plus ``robot``; dispatch turns every failure into one ``Error: ...`` line, as a memory's does."""

from __future__ import annotations

import copy
import json
from typing import Any

from emem_graph.errors import EmemGraphError
from emem_graph.retrieval.schemas import tool_definitions

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
    "type": "string",
    "description": "Only this robot's memories (its name in the fleet); every robot's when "
    "left out. Every answer line names its robot.",
}
FLEET_NOTE = (
    " Fleet: asks every robot's pushed memory (positions in the fleet frame); each line starts "
    "with [robot NAME]."
)


def fleet_tool_definitions() -> list[dict[str, Any]]:
    """The fleet's tools in OpenAI function-calling form."""
    definitions = []
    for definition in tool_definitions():
        function = definition["function"]
        if function["name"] not in FLEET_TOOLS:
            continue
        function = copy.deepcopy(function)
        properties = function["parameters"]["properties"]
        for name in ONE_MEMORY_ONLY:
            properties.pop(name, None)
        properties["robot"] = dict(ROBOT)
        function["description"] += FLEET_NOTE
        definitions.append({"type": "function", "function": function})
    return definitions


def dispatch(fleet: object, tool_name: str, arguments: dict[str, Any] | str | None) -> str:
    """Run the tool method ``tool_name`` of ``fleet`` (a FleetMemory); its text, or one line
    ``Error: ...``. Never raises."""
    try:
        if isinstance(arguments, str):
            arguments = json.loads(arguments) if arguments.strip() else {}
        arguments = dict(arguments or {})
        if tool_name not in FLEET_TOOLS:
            return f"Error: unknown tool {tool_name!r}; available: {', '.join(FLEET_TOOLS)}"
        known = next(
            d["function"]["parameters"]["properties"]
            for d in fleet_tool_definitions()
            if d["function"]["name"] == tool_name
        )
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            return f"Error: {tool_name}: unknown argument(s) {', '.join(unknown)}"
        given = {key: value for key, value in arguments.items() if value is not None}
        return str(getattr(fleet, tool_name)(**given))
    except (EmemGraphError, ValueError, TypeError) as exc:
        return "Error: " + " ".join(str(exc).split())
