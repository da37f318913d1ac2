"""Each tool is defined once, in its schema (retrieval/schemas.py TOOL_SCHEMAS, and the
capabilities' schema modules that register into it); everything else that spells a tool out is
checked against that definition here: the facade method, the method that runs the tool, the
argument model dispatch validates with, the ROS ``.srv`` request and the search filters.

Adding a parameter in one place only makes one of these tests fail.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.filters import AREA_PARAMETERS, FILTER_PARAMETERS
from emem_graph.retrieval.schemas import (
    ACTION_SCHEMAS,
    ALL_SCHEMAS,
    TOOL_SCHEMAS,
    arguments_model,
)
from ros_bridge.services import SCHEMA_ONLY_ARGUMENTS, SERVICES
from ros_bridge.srv_files import srv_definition

FACADE_OWN_SIGNATURE = frozenset({"start_episode", "end_episode"})
"""Planner actions whose facade method is the episode API of API.md (more than the action takes:
metadata, consolidate, wait); the action runs through RetrievalTools, checked below."""

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def _annotation(spec: dict[str, Any], required: bool) -> str:
    """The Python annotation a parameter of this schema has, as written in the source."""
    kind = spec["type"]
    if "enum" in spec:
        text = "str"
    elif kind == ["string", "number"]:
        text = "str | float"
    elif kind == "array":
        text = f"list[{_SCALARS[spec['items']['type']]}]"
    else:
        text = _SCALARS[kind]
    if not required and "default" not in spec:
        text += " | None"
    return text


def definition(tool: str) -> list[tuple[str, Any, str]]:
    """(name, default, annotation) of each parameter of ``tool``, in schema order; a required
    parameter's default is inspect.Parameter.empty, an optional one without a default's None."""
    parameters = ALL_SCHEMAS[tool]["parameters"]
    required = set(parameters["required"])
    return [
        (
            name,
            inspect.Parameter.empty if name in required else spec.get("default"),
            _annotation(spec, name in required),
        )
        for name, spec in parameters["properties"].items()
    ]


def signature(function: Any) -> list[tuple[str, Any, str]]:
    """(name, default, annotation) of each parameter of a bound method (self left out)."""
    return [
        (p.name, p.default, str(p.annotation))
        for p in inspect.signature(function).parameters.values()
    ]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpatioTemporalMemory]:
    path: Path = tmp_path_factory.mktemp("definitions") / "mem"
    opened = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(path)), embedding_provider=HashingEmbedder()
    )
    yield opened
    opened.close()


def test_every_tool_has_a_definition_and_the_memory_serves_each() -> None:
    assert set(ALL_SCHEMAS) == set(TOOL_SCHEMAS) | set(ACTION_SCHEMAS)
    for name, schema in ALL_SCHEMAS.items():
        assert schema["name"] == name


@pytest.mark.parametrize("tool", [t for t in ALL_SCHEMAS if t not in FACADE_OWN_SIGNATURE])
def test_the_facade_method_has_exactly_the_defined_parameters(
    memory: SpatioTemporalMemory, tool: str
) -> None:
    assert signature(getattr(memory, tool)) == definition(tool)


@pytest.mark.parametrize("tool", list(ALL_SCHEMAS))
def test_the_method_running_the_tool_has_exactly_the_defined_parameters(
    memory: SpatioTemporalMemory, tool: str
) -> None:
    # A core tool or action is a RetrievalTools method; a capability's tool is the capability's
    # own @tool_method (spatial, areas, profile), served through RetrievalTools.tool.
    assert signature(memory.tools.tool(tool)) == definition(tool)


@pytest.mark.parametrize("tool", list(ALL_SCHEMAS))
def test_dispatch_validates_with_the_model_derived_from_the_definition(
    memory: SpatioTemporalMemory, tool: str
) -> None:
    parameters = ALL_SCHEMAS[tool]["parameters"]
    fields = arguments_model(tool).model_fields
    assert list(fields) == list(parameters["properties"])
    for name, field in fields.items():
        spec = parameters["properties"][name]
        assert field.is_required() == (name in parameters["required"]), name
        if not field.is_required():
            assert field.default == spec.get("default"), name
    answer = memory.dispatch_tool_call(tool, {"not_a_parameter": 1})
    accepted = ", ".join(parameters["properties"]) or "none"
    assert answer.startswith(f"Error: {tool}: ")
    assert f"unknown argument 'not_a_parameter' (accepted: {accepted})" in answer


TYPED_SERVICES = {spec.tool: name for name, spec in SERVICES.items() if spec.tool is not None}


def test_every_tool_has_a_typed_ros_service() -> None:
    assert set(TYPED_SERVICES) == set(TOOL_SCHEMAS)


@pytest.mark.parametrize(("tool", "srv"), sorted(TYPED_SERVICES.items()))
def test_the_ros_request_carries_exactly_the_defined_parameters(tool: str, srv: str) -> None:
    # Field types, defaults and sentinels are checked in test_ros_services.py; here: the names.
    properties = list(ALL_SCHEMAS[tool]["parameters"]["properties"])
    fields = [f.name for f in srv_definition(srv).request if f.name != "use_near"]
    assert fields == [name for name in properties if name not in SCHEMA_ONLY_ARGUMENTS]


@pytest.mark.parametrize("tool", list(ALL_SCHEMAS))
def test_search_filters_are_the_shared_ones(tool: str) -> None:
    properties = ALL_SCHEMAS[tool]["parameters"]["properties"]
    filters = [name for name in properties if name in FILTER_PARAMETERS]
    area = [name for name in properties if name in AREA_PARAMETERS]
    assert area in ([], list(AREA_PARAMETERS))
    reference = TOOL_SCHEMAS["semantic_search"]["parameters"]["properties"]
    for name in filters:
        # Descriptions may word what is filtered; type and bounds are the filter's own.
        ours = {k: v for k, v in properties[name].items() if k != "description"}
        assert ours == {k: v for k, v in reference[name].items() if k != "description"}, name
