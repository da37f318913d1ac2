"""The spatial tools' schemas (route_query, directional_query, navigate_to), registered with the
core tools at import."""

from __future__ import annotations

from typing import Any

from emem_graph.retrieval.schemas import (
    N_RESULTS,
    register_tool_schemas,
    required_text,
    tool_schema,
)

DIRECTIONS = (
    "north",
    "south",
    "east",
    "west",
    "northeast",
    "northwest",
    "southeast",
    "southwest",
    "left",
    "right",
)
"""Compass directions (world frame: x east, y north) and the sides of a route."""

_PLACE = (
    "A place: something to locate in memory ('the basketball court', 'room 423') or "
    "coordinates 'x, y' in metres (world frame)."
)

SPATIAL_SCHEMAS: dict[str, dict[str, Any]] = {
    "route_query": tool_schema(
        "route_query",
        "Find something ON THE WAY between two places: the candidates of `target` (known "
        "entities first, then memories that match it) ranked by the detour they add to the "
        "route the robot knows from start to goal (its map of visited places), each with its "
        "position, how far along the route it is and its detour. Use for 'the vending machine "
        "on the way from the basketball court to the football field'. Do NOT use for 'where "
        "is X' (use locate) or for the route itself (use navigate_to).",
        {
            "target": required_text("What to find along the route, e.g. 'vending machine'."),
            "goal": required_text(f"Where the route ends. {_PLACE}"),
            "start": {
                "type": "string",
                "description": f"Where the route starts (default: the robot's current "
                f"position). {_PLACE}",
            },
            "max_detour": {
                "type": "number",
                "default": 30.0,
                "minimum": 0,
                "description": "Leave out candidates that lengthen the route by more than "
                "this many metres.",
            },
            "n_results": N_RESULTS,
        },
        ["target", "goal"],
    ),
    "directional_query": tool_schema(
        "directional_query",
        "Find the candidates of `target` in a DIRECTION from an anchor place, nearest first: "
        "north/south/east/west or a diagonal (within 45 degrees of it; x is east, y north), "
        "or left/right of the route from the anchor to `route_goal`. Use for 'the closest "
        "water cooler west of room 423', 'what is on the left on the way to the lab'. Do NOT "
        "use without a direction (use locate or spatial_query).",
        {
            "target": required_text("What to find, e.g. 'water cooler'."),
            "anchor": required_text(f"Where the direction is taken from. {_PLACE}"),
            "direction": {
                "type": "string",
                "enum": list(DIRECTIONS),
                "description": "Compass direction from the anchor, or 'left'/'right' of the "
                "route from the anchor to route_goal.",
            },
            "max_distance": {
                "type": "number",
                "default": 50.0,
                "exclusiveMinimum": 0,
                "description": "Metres: how far from the anchor (compass) or from the route "
                "(left/right) to look.",
            },
            "route_goal": {
                "type": "string",
                "description": f"With left/right: where the route from the anchor goes. {_PLACE}",
            },
            "n_results": N_RESULTS,
        },
        ["target", "anchor", "direction"],
    ),
    "navigate_to": tool_schema(
        "navigate_to",
        "The waypoints to drive from the robot's current position to a remembered place or "
        "thing, along places the robot has visited (its map), with the route's length: for a "
        "navigation stack. Use for 'take me to the kitchen', 'go to the charging station'. "
        "Do NOT use to find things along a route (use route_query).",
        {"concept": required_text(f"Where to go. {_PLACE}")},
        ["concept"],
    ),
}

register_tool_schemas(SPATIAL_SCHEMAS)
