"""The user_profile tool's schema, registered with the core tools at import."""

from __future__ import annotations

from emem_graph.retrieval.schemas import register_tool_schemas, required_text, tool_schema

DEFAULT_K = 3
"""Knowledge items returned by default: more retrieved memories make planners worse."""

PROFILE_SCHEMAS = {
    "user_profile": tool_schema(
        "user_profile",
        "Look up what a USER told the robot about themselves: which objects they mean by a "
        "personal expression ('my favorite cup' = the yellow cup with the wooden handle, with "
        "where that object is) and their routines ('my cozy evening': the steps in order). Use "
        "it first for an underspecified personal request ('bring me my favorite cup', 'time "
        "for my cozy evening') and follow the steps it returns. Do NOT use for what the robot "
        "perceived (use semantic_search) or to find an object that is not personal (use "
        "locate).",
        {
            "query": required_text("The user's request or the personal expression."),
            "user": {
                "type": "string",
                "minLength": 1,
                "pattern": r"\S",
                "description": "Whose profile to search (the user's name); omit for every user.",
            },
            "k": {
                "type": "integer",
                "default": DEFAULT_K,
                "minimum": 1,
                "maximum": 20,
                "description": "How many pieces of knowledge to return (keep it small).",
            },
        },
        ["query"],
    ),
}

register_tool_schemas(PROFILE_SCHEMAS)
