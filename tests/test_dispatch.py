"""Tool definitions, dispatch and argument validation: one schema for the definitions, the
Python methods and dispatch; every bad call is one ``Error: ...`` line, never an exception."""

from __future__ import annotations

import inspect
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph import InvalidInputError, SpatioTemporalMemory
from emem_graph.retrieval.schemas import ACTION_SCHEMAS, ALL_SCHEMAS, TOOL_SCHEMAS

TEN_TOOLS = [
    "semantic_search",
    "spatial_query",
    "temporal_query",
    "episode_summary",
    "get_current_context",
    "search_gists",
    "entity_query",
    "locate",
    "recall",
    "body_status",
]


CAPABILITY_TOOLS = {  # spatial, areas, profile: attached after the ten
    "route_query", "directional_query", "navigate_to", "describe_area", "global_search",
    "user_profile",
}  # fmt: skip


def test_definitions_are_the_ten_tools_in_openai_form(house):
    definitions = house.memory.get_tool_definitions()
    names = [d["function"]["name"] for d in definitions]
    assert names[:10] == TEN_TOOLS and set(names[10:]) == CAPABILITY_TOOLS
    assert len(names) == len(set(names))
    for definition in definitions:
        assert definition["type"] == "function"
        function = definition["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert "Use " in function["description"] and "NOT" in function["description"]
        assert function["parameters"]["type"] == "object"
        assert set(function["parameters"]["required"]) <= set(function["parameters"]["properties"])
    json.dumps(definitions)  # plain JSON
    with_actions = house.memory.get_tool_definitions(include_actions=True)
    assert [d["function"]["name"] for d in with_actions] == names + list(ACTION_SCHEMAS)


def test_definitions_are_copies(house):
    house.memory.get_tool_definitions()[0]["function"]["name"] = "changed"
    assert house.memory.get_tool_definitions()[0]["function"]["name"] == "semantic_search"


def test_api_parameters_and_defaults_match_the_schema():
    """API.md's table, plus include_body_state on the perception tools and scope (the area
    walk) on semantic_search and recall."""
    expected = {
        "semantic_search": {"query": None, "n_results": 10, "layer": None, "time_after": None,
                            "time_before": None, "near_x": None, "near_y": None,
                            "spatial_radius": None, "episode_id": None},
        "spatial_query": {"x": None, "y": None, "z": 0.0, "radius": 2.0, "layer": None,
                          "time_after": None, "time_before": None, "n_results": 10},
        "temporal_query": {"time_after": None, "time_before": None, "last_n_minutes": None,
                           "layer": None, "near_x": None, "near_y": None, "spatial_radius": None,
                           "order": "newest", "n_results": 10},
        "episode_summary": {"episode_id": None, "task_name": None, "last_n": 1},
        "get_current_context": {"radius": 3.0, "include_recent_minutes": 5.0},
        "search_gists": {"query": None, "n_results": 10, "time_after": None, "time_before": None},
        "entity_query": {"name": None, "entity_type": None, "near_x": None, "near_y": None,
                         "spatial_radius": None, "last_seen_after": None, "n_results": 10},
        "locate": {"concept": None, "n_results": 10, "layer": None, "time_after": None,
                   "time_before": None, "at_time": None},
        "recall": {"query": None, "n_results": 10, "radius_multiplier": 1.5},
        "body_status": {"layers": None},
    }  # fmt: skip
    for tool, parameters in expected.items():
        properties = TOOL_SCHEMAS[tool]["parameters"]["properties"]
        for name, default in parameters.items():
            assert properties[name].get("default") == default, (tool, name)
        extra = set(properties) - set(parameters)
        assert extra <= {"include_body_state", "scope"}, (tool, extra)
        if "scope" in extra:
            assert properties["scope"]["enum"] == ["local", "global"], tool
            assert properties["scope"]["default"] == "local", tool
    assert {t for t, s in TOOL_SCHEMAS.items() if "scope" in s["parameters"]["properties"]} == {
        "semantic_search", "recall"}  # fmt: skip
    perception = {"semantic_search", "spatial_query", "temporal_query", "locate", "recall"}
    assert {t for t, s in TOOL_SCHEMAS.items() if "include_body_state" in s["parameters"][
        "properties"]} == perception  # fmt: skip


@pytest.mark.parametrize("tool", list(ALL_SCHEMAS))
def test_facade_signatures_follow_the_schema(tool):
    if tool in ("start_episode", "end_episode"):
        return  # the facade keeps eMEM's richer episode methods; dispatch uses the actions
    signature = inspect.signature(getattr(SpatioTemporalMemory, tool))
    parameters = [p for p in signature.parameters.values() if p.name != "self"]
    schema = ALL_SCHEMAS[tool]["parameters"]
    assert [p.name for p in parameters] == list(schema["properties"])
    for p in parameters:
        if p.name in schema["required"]:
            assert p.default is inspect.Parameter.empty
        else:
            assert p.default == schema["properties"][p.name].get("default")


def test_registration_pairs_callables_with_definitions(house):
    pairs = house.memory.get_tools_for_registration()
    names = [d["function"]["name"] for _, d in pairs]
    assert names[:10] == TEN_TOOLS and set(names[10:]) == CAPABILITY_TOOLS
    call, definition = pairs[9]
    assert definition["function"]["name"] == "body_status"
    assert call().startswith("Body Status:")


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("fly", {}, "Error: unknown tool 'fly'; available: semantic_search"),
        ("semantic_search", {"query": "cup", "colour": "red"}, "unknown argument 'colour'"),
        ("semantic_search", {"query": "cup", "n_results": "many"}, "argument 'n_results'"),
        ("semantic_search", {"query": 5}, "argument 'query': Input should be a valid string"),
        ("semantic_search", {"query": "   "}, "argument 'query'"),
        ("semantic_search", {}, "missing required argument 'query'"),
        ("semantic_search", {"query": "x", "n_results": True}, "not a boolean"),
        ("semantic_search", {"query": "x", "n_results": 0}, "greater than or equal to 1"),
        ("spatial_query", {"x": float("nan"), "y": 0}, "argument 'x'"),
        ("spatial_query", {"x": 0, "y": 0, "radius": -1}, "argument 'radius'"),
        ("temporal_query", {"time_after": "soon"}, "time_after: cannot parse 'soon'"),
        ("temporal_query", {"order": "random"}, "argument 'order'"),
        ("entity_query", {"last_seen_after": "whenever"}, "last_seen_after: cannot parse"),
        ("body_status", {"layers": "battery"}, "argument 'layers'"),
        ("semantic_search", {"query": "x", "near_x": 1.0}, "go together"),
        ("semantic_search", {"query": "x", "self": 1}, "unknown argument 'self'"),
        ("semantic_search", "not json", "arguments are not valid JSON"),
        ("semantic_search", ["query"], "arguments must be an object"),
    ],
)
def test_dispatch_returns_one_error_line(house, tool, arguments, expected):
    out = house.memory.dispatch_tool_call(tool, arguments)
    assert out.startswith("Error: ")
    assert expected in out
    assert "\n" not in out


def test_dispatch_accepts_json_strings_and_null_as_omitted(house):
    out = house.memory.dispatch_tool_call(
        "spatial_query", json.dumps({"x": 18.5, "y": 4.0, "layer": None, "n_results": 1})
    )
    assert out.startswith("1. [captions] (18.5,4.0)")
    assert house.memory.dispatch_tool_call("body_status", None).startswith("Body Status:")
    # A numeric string for a number is accepted, as tool-calling models often send them.
    assert house.memory.dispatch_tool_call("spatial_query", {"x": "18.5", "y": 4}).startswith("1.")


def test_python_methods_raise_value_errors_with_the_same_message(house):
    with pytest.raises(InvalidInputError) as caught:
        house.memory.temporal_query(time_after="soon")
    dispatched = house.memory.dispatch_tool_call("temporal_query", {"time_after": "soon"})
    assert dispatched == "Error: " + str(caught.value)
    with pytest.raises(ValueError, match="unknown argument 'colour'"):
        house.memory.tools.semantic_search("cup", colour="red")  # type: ignore[call-arg]


def test_dispatch_on_a_closed_memory_is_an_error_not_an_exception(make_memory):
    mem = make_memory()
    mem.close()
    out = mem.dispatch_tool_call("body_status", {})
    assert out.startswith("Error: ") and "closed" in out


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=5,
)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict]:
    tool = draw(st.sampled_from(list(ALL_SCHEMAS)))
    names = list(ALL_SCHEMAS[tool]["parameters"]["properties"])
    keys = (
        st.sampled_from(names) | st.text(min_size=1, max_size=8) if names else st.text(max_size=8)
    )
    values = st.one_of(
        _JSON,
        st.sampled_from(["-10m", "yesterday", "1715000000", "kitchen", "newest", "oldest"]),
        st.floats(-100, 100),
    )
    return tool, draw(st.dictionaries(keys, values, max_size=5))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=tool_calls())
def test_dispatch_never_raises_on_random_arguments(house, call):
    tool, arguments = call
    out = house.memory.dispatch_tool_call(tool, arguments)
    assert isinstance(out, str) and out
    if out.startswith("Error: "):
        assert "\n" not in out
        assert "failed:" not in out, out  # bad input is named, not an internal failure
    for value in arguments.values():
        if isinstance(value, float) and not math.isfinite(value) and out.startswith("Error"):
            assert "finite" in out or "argument" in out or "time" in out


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-2.0, 2.0),
    st.sampled_from([math.nan, math.inf, -0.0]),
    st.sampled_from(["newest", "oldest", "1", "2.5", "", "yesterday", "x" * 300]),
)


@settings(max_examples=300, deadline=None)
@given(
    tool=st.sampled_from(TEN_TOOLS),
    calls=st.lists(
        st.dictionaries(
            st.sampled_from(["n_results", "order", "last_n_minutes", "radius", "name", "x"]),
            _SCALARS,
            max_size=3,
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_kept_validations_answer_as_a_fresh_validation(tool, calls) -> None:
    """validate_arguments keeps the result of an argument set it accepted: every later call
    answers (values, or the same one-line error) as pydantic does from scratch, whatever came
    before; True, 1 and 1.0 are told apart; a caller changing what it got changes nothing."""
    from emem_graph.retrieval import schemas

    def fresh(arguments: dict) -> object:
        given = {k: v for k, v in arguments.items() if v is not None}
        try:
            schemas.check_tool_arguments(tool, arguments)
            return dict(schemas.arguments_model(tool).model_validate(given))
        except schemas.ValidationError as exc:
            return schemas._describe(tool, exc)
        except InvalidInputError as exc:
            return str(exc)

    for arguments in [*calls, *calls]:  # every set twice: the second may come from the cache
        try:
            got: object = schemas.validate_arguments(tool, arguments)
        except schemas.ToolArgumentError as exc:
            got = str(exc)
        assert got == fresh(arguments), arguments
        if isinstance(got, dict):
            got.clear()  # the caller's copy


def test_a_kept_validation_keeps_true_apart_from_one() -> None:
    from emem_graph.retrieval.schemas import ToolArgumentError, validate_arguments

    assert validate_arguments("temporal_query", {"n_results": 1})["n_results"] == 1
    with pytest.raises(ToolArgumentError, match="not a boolean"):
        validate_arguments("temporal_query", {"n_results": True})
    assert validate_arguments("temporal_query", {"n_results": 1.0})["n_results"] == 1
