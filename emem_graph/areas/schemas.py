"""The area tools' schemas (OpenAI function-calling form), registered next to the core ten."""

from __future__ import annotations

from typing import Any

from emem_graph.retrieval.schemas import register_tool_schemas, required_text, tool_schema

_N_WALKS = {
    "type": "integer",
    "default": 3,
    "minimum": 1,
    "maximum": 16,
    "description": "Walks from the roots kept side by side at every level (more: slower, "
    "finds answers in areas a summary left out).",
}

AREA_SCHEMAS: dict[str, dict[str, Any]] = {
    "describe_area": tool_schema(
        "describe_area",
        "Describe areas of the remembered world at several scales (room, building, site), each "
        "with its summary and extent. Use it with a concept to find the area it belongs to "
        "('somewhere to eat', 'printing'), with a point (near_x, near_y, optionally "
        "spatial_radius) for the areas around it, or with nothing for an overview of the "
        "whole memory ('what is this place like?'). Do NOT use for a single object's "
        "position (use locate) or for events in time (use temporal_query).",
        {
            "concept": {
                "type": "string",
                "description": "What the area should hold or offer; omit for the point or the "
                "overview.",
            },
            "near_x": {
                "type": "number",
                "description": "X of a point (world frame, metres); needs near_y.",
            },
            "near_y": {"type": "number", "description": "Y of the point (metres)."},
            "spatial_radius": {
                "type": "number",
                "minimum": 0,
                "description": "Also areas within this many metres of the point (default 0: "
                "the areas containing it).",
            },
            "n_results": {
                "type": "integer",
                "default": 3,
                "minimum": 1,
                "maximum": 100,
                "description": "Maximum number of areas (or area chains) to return.",
            },
            "n_walks": _N_WALKS,
        },
        [],
    ),
    "global_search": tool_schema(
        "global_search",
        "Answer an implicit or global question ('where can I get a coffee?', 'where could I "
        "sit outside?') by walking the area hierarchy from the whole site down to a room and "
        "its best matching memory; returns chains from that memory up to the site, each level "
        "with its summary and extent. Use when the question names a need or a kind of place "
        "rather than an object. Do NOT use for a named object (use locate or semantic_search) "
        "or for time windows (use temporal_query).",
        {
            "query": required_text("The question or need, in natural language."),
            "n_results": {
                "type": "integer",
                "default": 3,
                "minimum": 1,
                "maximum": 16,
                "description": "Chains to return (at most n_walks).",
            },
            "n_walks": _N_WALKS,
        },
        ["query"],
    ),
}

register_tool_schemas(AREA_SCHEMAS)
