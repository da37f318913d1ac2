"""The bridge's services without ROS: the .srv files against the tool schemas, every service
on a real memory through the dispatcher, bad requests, timeouts, and the read-only Query."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sim_clock import SimClock

from emem_graph import SpatioTemporalMemory
from emem_graph.errors import MemoryClosedError
from emem_graph.models import Gist, Observation
from emem_graph.retrieval.formatting import collect_records, format_record, noted
from emem_graph.retrieval.schemas import ALL_SCHEMAS, tool_definitions
from ros_bridge.services import (
    AREA_FIELDS,
    SCHEMA_ONLY_ARGUMENTS,
    SERVICES,
    TOOL_RESPONSE,
    ZERO_MEANS_NOT_GIVEN,
    DefaultServiceSettings,
    MemoryOwner,
    ServiceDispatcher,
    request_to_arguments,
)
from ros_bridge.srv_files import (
    PACKAGE_DIR,
    SrvDefinition,
    SrvSyntaxError,
    default_request,
    parse_srv,
    srv_definition,
    srv_names,
)

START = 100_000.0
TOOL_SERVICES = [name for name, spec in SERVICES.items() if spec.tool is not None]
_SRV_TYPES = {
    "string": {"string"},
    "uint32": {"integer"},
    "float64": {"number"},
    "bool": {"boolean"},
    "string[]": {"array"},
}


# --- .srv files against the tool schemas -----------------------------------------------------


def schema_mismatches(definition: SrvDefinition, tool: str) -> list[str]:
    """Every way the request of ``definition`` differs from the schema of ``tool``."""
    parameters = ALL_SCHEMAS[tool]["parameters"]
    properties, required = parameters["properties"], set(parameters["required"])
    problems: list[str] = []
    names = {field.name for field in definition.request}
    for field in definition.request:
        if field.name in ("use_near", "use_position"):
            if field.type != "bool" or field.default is not False:
                problems.append(f"{field.name} must be 'bool {field.name} false'")
            continue
        spec = properties.get(field.name)
        if spec is None:
            problems.append(f"{field.name}: not an argument of {tool}")
            continue
        kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        if not _SRV_TYPES[field.type] & set(kinds):
            problems.append(f"{field.name}: {field.type} does not carry {spec['type']}")
        if field.name in required:
            if field.default is not None:
                problems.append(f"{field.name}: required, so no default in the .srv")
        elif "default" in spec:
            if field.default != spec["default"] or type(field.value) is not type(spec["default"]):
                problems.append(
                    f"{field.name}: .srv default {field.default!r} != schema {spec['default']!r}"
                )
        else:
            # Optional without a default: the .srv value must be a "not given" sentinel.
            gated = field.name in AREA_FIELDS and "use_near" in names
            gated |= field.name in ("x", "y", "z") and "use_position" in names
            zero = field.name in ZERO_MEANS_NOT_GIVEN and field.value == 0
            empty = field.value in ("", [])
            if not ((gated and field.default is None) or zero or empty):
                problems.append(f"{field.name}: its default {field.value!r} is not a sentinel")
    offered = names | SCHEMA_ONLY_ARGUMENTS
    problems.extend(
        f"{name}: argument of {tool} missing" for name in properties if name not in offered
    )
    return problems


@pytest.mark.parametrize(
    ("srv", "tool"),
    [(name, SERVICES[name].tool) for name in TOOL_SERVICES]
    + [("StoreSpecificMemory", "store_specific_memory"), ("StartEpisode", "start_episode")],
)
def test_srv_request_fields_and_defaults_match_the_tool_schema(srv: str, tool: str) -> None:
    assert schema_mismatches(srv_definition(srv), tool) == []


def test_a_drifted_srv_file_is_caught() -> None:
    text = (PACKAGE_DIR / "srv" / "SemanticSearch.srv").read_text()
    drifted = [
        text.replace("uint32 n_results 10", "uint32 n_results 5"),
        text.replace("string episode_id", "string episode"),
        text.replace("float64 near_x\n", "float64 near_x 1.0\n"),
        text.replace("string layer ", "uint32 layer "),
        text.replace("string episode_id", "# gone"),
    ]
    for variant in drifted:
        assert variant != text
        assert schema_mismatches(parse_srv(variant, "SemanticSearch"), "semantic_search")


def test_every_service_has_its_srv_file_listed_in_the_package() -> None:
    assert srv_names() == sorted(SERVICES)
    cmake = (PACKAGE_DIR / "CMakeLists.txt").read_text()
    listed = re.findall(r'"srv/(\w+)\.srv"', cmake)
    assert sorted(listed) == srv_names()
    assert "rosidl_generate_interfaces" in cmake
    package = (PACKAGE_DIR / "package.xml").read_text()
    assert "<name>emem_interfaces</name>" in package
    assert "rosidl_interface_packages" in package
    for name, spec in SERVICES.items():
        assert tuple(f.name for f in srv_definition(name).response) == spec.response_fields


def test_tool_services_end_with_the_common_response_block() -> None:
    for name in [*TOOL_SERVICES, "CallTool"]:
        response = srv_definition(name).response
        assert [(f.type, f.name) for f in response] == [
            ("bool", "success"),
            ("string", "error"),
            ("string", "result"),
            ("string", "result_json"),
        ]
    assert SERVICES["CallTool"].response_fields == TOOL_RESPONSE


def test_srv_files_are_plain_rosidl() -> None:
    for path in sorted((PACKAGE_DIR / "srv").glob("*.srv")):
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0].strip()
            # No optional or bounded types, no constants: only 'type name [default]' lines.
            assert "?" not in code and "<=" not in code and "=" not in code, (path.name, line)
        assert path.read_text().count("\n---\n") == 1, path.name


def test_default_request_holds_the_srv_defaults() -> None:
    request = default_request("TemporalQuery", last_n_minutes=5.0)
    assert request == SimpleNamespace(
        time_after="",
        time_before="",
        last_n_minutes=5.0,
        layer="",
        use_near=False,
        near_x=0.0,
        near_y=0.0,
        spatial_radius=0.0,
        order="newest",
        n_results=10,
    )
    assert default_request("StartEpisode", name="patrol").name == "patrol"
    assert default_request("BodyStatus").layers == []
    with pytest.raises(KeyError, match="no field"):
        default_request("Locate", query="x")
    with pytest.raises(KeyError, match="no service"):
        srv_definition("Nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("string query\n", "no '---'"),
        ("string query\n---\nbool ok\n---\n", "a second '---'"),
        ("strang query\n---\n", "unknown type"),
        ("string order newest\n---\n", "must be quoted"),
        ("bool flag yes\n---\n", "true or false"),
        ("uint32 n ten\n---\n", "bad uint32 default"),
        ("string Query\n---\n", "bad field name"),
        ("string a\nstring a\n---\n", "defined twice"),
        ("int32 X=1\n---\n", "constants"),
    ],
)
def test_srv_syntax_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(SrvSyntaxError, match=message):
        parse_srv(text, "Broken")


def test_a_hash_inside_a_quoted_default_is_not_a_comment() -> None:
    parsed = parse_srv('string tag "a#b"  # the tag\n---\n', "T")
    assert parsed.request[0].default == "a#b"
    assert parsed.request[0].comment == "the tag"


# --- request mapping --------------------------------------------------------------------------


def test_sentinels_mean_not_given() -> None:
    assert request_to_arguments(
        "SemanticSearch", default_request("SemanticSearch", query="cup", near_x=3.0)
    ) == ("semantic_search", {"query": "cup", "n_results": 10, "scope": "local"})
    assert request_to_arguments(
        "TemporalQuery", default_request("TemporalQuery", use_near=True, near_x=1.0)
    ) == (
        "temporal_query",
        {"near_x": 1.0, "near_y": 0.0, "spatial_radius": 0.0, "order": "newest", "n_results": 10},
    )
    assert request_to_arguments("BodyStatus", default_request("BodyStatus")) == ("body_status", {})
    assert request_to_arguments(
        "BodyStatus", default_request("BodyStatus", layers=("battery",))
    ) == ("body_status", {"layers": ["battery"]})
    assert request_to_arguments(
        "StoreSpecificMemory", default_request("StoreSpecificMemory", content="n", x=1.0)
    ) == ("store_specific_memory", {"content": "n", "layer_name": "agent_notes"})
    assert request_to_arguments(
        "StoreSpecificMemory",
        default_request("StoreSpecificMemory", content="n", use_position=True, x=1.0),
    ) == (
        "store_specific_memory",
        {"content": "n", "layer_name": "agent_notes", "x": 1.0, "y": 0.0, "z": 0.0},
    )
    # The service name works as well as the type name; CallTool parses its JSON.
    assert request_to_arguments(
        "call_tool",
        default_request("CallTool", tool_name="locate", arguments_json='{"concept": "x"}'),
    ) == ("locate", {"concept": "x"})
    assert request_to_arguments("EndEpisode", default_request("EndEpisode")) == ("end_episode", {})


# --- a real memory behind the dispatcher -----------------------------------------------------


@dataclass
class Bridge:
    memory: SpatioTemporalMemory
    owner: MemoryOwner
    dispatcher: ServiceDispatcher
    clock: SimClock

    def ask(self, srv: str, **fields: Any) -> dict[str, Any]:
        return self.dispatcher.handle(srv, default_request(srv, **fields))

    def direct(self, tool: str, arguments: dict[str, Any]) -> str:
        """The tool's text as an LLM tool call returns it (on the owner's thread)."""
        return self.owner.call(lambda m: m.dispatch_tool_call(tool, arguments))


def _fill(memory: SpatioTemporalMemory, clock: SimClock) -> None:
    memory.add("a red cup on the kitchen table", 3.0, 4.0, timestamp=START, layer_name="captions")
    memory.add(
        "a person waving at the front door", 20.0, 20.0, timestamp=START + 10, layer_name="captions"
    )
    memory.add("2 chairs, 1 table", 3.5, 4.2, timestamp=START + 20, layer_name="detections")
    memory.add_body_state("battery 84% (12.3 V, discharging)", "battery", timestamp=START + 30)
    memory.add_entity("red cup", 3.0, 4.0, timestamp=START, entity_type="object")
    clock.now = START + 600
    memory.add("a kettle on the stove", 4.0, 5.0, layer_name="captions")
    # Entities now, not in the background between a service call and the direct one.
    memory.extract_entities()


@pytest.fixture
def make_bridge(
    make_memory: Callable[..., SpatioTemporalMemory],
) -> Iterator[Callable[..., Bridge]]:
    owners: list[MemoryOwner] = []

    def build(settings: Any = None, fill: bool = True) -> Bridge:
        clock = SimClock(START)
        memory = make_memory(clock=clock)
        if fill:
            _fill(memory, clock)
        owner = MemoryOwner(memory)
        owners.append(owner)
        # Query is off by default (services.query_service); these tests exercise it.
        settings = settings if settings is not None else DefaultServiceSettings(query_service=True)
        return Bridge(memory, owner, ServiceDispatcher(owner, settings), clock)

    yield build
    for owner in owners:
        owner.close()


@pytest.fixture
def bridge(make_bridge: Callable[..., Bridge]) -> Bridge:
    return make_bridge()


def _records(response: dict[str, Any]) -> list[dict[str, Any]]:
    document = json.loads(response["result_json"])
    assert document["text"] == response["result"]
    return document["records"]


@pytest.mark.parametrize(
    ("srv", "fields", "tool", "arguments"),
    [
        (
            "SemanticSearch",
            {"query": "red cup", "n_results": 3},
            "semantic_search",
            {"query": "red cup", "n_results": 3},
        ),
        (
            "SemanticSearch",
            {
                "query": "something",
                "use_near": True,
                "near_x": 3.0,
                "near_y": 4.0,
                "spatial_radius": 2.0,
                "layer": "captions",
            },
            "semantic_search",
            {
                "query": "something",
                "near_x": 3.0,
                "near_y": 4.0,
                "spatial_radius": 2.0,
                "layer": "captions",
            },
        ),
        (
            "SpatialQuery",
            {"x": 3.0, "y": 4.0, "radius": 1.5},
            "spatial_query",
            {"x": 3.0, "y": 4.0, "radius": 1.5},
        ),
        ("TemporalQuery", {"last_n_minutes": 2.0}, "temporal_query", {"last_n_minutes": 2.0}),
        (
            "TemporalQuery",
            {"time_before": str(START + 15), "order": "oldest"},
            "temporal_query",
            {"time_before": START + 15, "order": "oldest"},
        ),
        ("EpisodeSummary", {}, "episode_summary", {}),
        ("GetCurrentContext", {"radius": 2.0}, "get_current_context", {"radius": 2.0}),
        ("SearchGists", {"query": "kitchen"}, "search_gists", {"query": "kitchen"}),
        ("EntityQuery", {"name": "cup"}, "entity_query", {"name": "cup"}),
        (
            "Locate",
            {"concept": "red cup", "time_after": "-1h"},
            "locate",
            {"concept": "red cup", "time_after": "-1h"},
        ),
        ("Recall", {"query": "the kitchen table"}, "recall", {"query": "the kitchen table"}),
        ("BodyStatus", {"layers": ["battery"]}, "body_status", {"layers": ["battery"]}),
        (
            "CallTool",
            {
                "tool_name": "semantic_search",
                "arguments_json": '{"query": "battery", "include_body_state": true}',
            },
            "semantic_search",
            {"query": "battery", "include_body_state": True},
        ),
    ],
)
def test_each_tool_service_answers_the_tools_exact_text(
    bridge: Bridge, srv: str, fields: dict[str, Any], tool: str, arguments: dict[str, Any]
) -> None:
    response = bridge.ask(srv, **fields)
    expected = bridge.direct(tool, arguments)
    assert response == {
        "success": True,
        "error": "",
        "result": expected,
        "result_json": response["result_json"],
    }
    assert not expected.startswith("Error")
    document = json.loads(response["result_json"])
    assert document["tool"] == tool
    assert document["text"] == expected


def test_result_json_holds_the_records_behind_the_text(bridge: Bridge) -> None:
    response = bridge.ask("SpatialQuery", x=3.0, y=4.0, radius=1.0)
    records = _records(response)
    assert [(r["kind"], r["text"], r["layer"]) for r in records] == [
        ("observation", "a red cup on the kitchen table", "captions"),
        ("observation", "2 chairs, 1 table", "detections"),
    ]
    assert (records[0]["x"], records[0]["y"], records[0]["timestamp"]) == (3.0, 4.0, START)
    stored = bridge.memory.store.get_observation(records[0]["id"])
    assert stored is not None and stored.text == records[0]["text"]
    assert json.loads(response["result_json"])["arguments"] == {
        "x": 3.0,
        "y": 4.0,
        "z": 0.0,
        "radius": 1.0,
        "n_results": 10,
    }

    entities = _records(bridge.ask("EntityQuery", name="cup"))
    assert [(r["kind"], r["name"], r["entity_type"]) for r in entities] == [
        ("entity", "red cup", "object")
    ]
    body = _records(bridge.ask("BodyStatus"))
    assert [(r["kind"], r["layer"], r["source_type"]) for r in body] == [
        ("observation", "battery", "interoception")
    ]
    located = json.loads(bridge.ask("Locate", concept="red cup")["result_json"])
    assert located["location"]["x"] == pytest.approx(3.0, abs=0.6)
    assert located["location"]["y"] == pytest.approx(4.0, abs=0.6)
    assert located["records"]
    context = _records(bridge.ask("GetCurrentContext", radius=3.0))
    assert {"a kettle on the stove", "red cup"} <= {r["text"] for r in context}
    assert {"observation", "entity"} <= {r["kind"] for r in context}
    assert json.loads(bridge.ask("SearchGists", query="x")["result_json"])["records"] == []


def test_area_filter_applies_only_with_use_near(bridge: Bridge) -> None:
    far = {"near_x": 20.0, "near_y": 20.0, "spatial_radius": 1.0}
    ignored = bridge.ask("SemanticSearch", query="red cup", **far)
    assert "red cup" in ignored["result"]
    applied = bridge.ask("SemanticSearch", query="red cup", use_near=True, **far)
    assert [r["text"] for r in _records(applied)] == ["a person waving at the front door"]


def test_temporal_query_last_n_minutes_zero_means_the_whole_window(bridge: Bridge) -> None:
    everything = _records(bridge.ask("TemporalQuery", order="oldest"))
    assert [r["text"] for r in everything] == [
        "a red cup on the kitchen table",
        "a person waving at the front door",
        "2 chairs, 1 table",
        "a kettle on the stove",
    ]
    recent = _records(bridge.ask("TemporalQuery", last_n_minutes=1.0))
    assert [r["text"] for r in recent] == ["a kettle on the stove"]


def test_episodes_store_notes_and_background_consolidation(bridge: Bridge) -> None:
    started = bridge.ask("StartEpisode", name="kitchen patrol")
    assert started["success"] and started["error"] == ""
    episode_id = started["episode_id"]
    assert bridge.memory.active_episode_id == episode_id

    note = bridge.ask("StoreSpecificMemory", content="the keys are in the blue bowl")
    assert note["success"], note
    stored = bridge.memory.store.get_observation(note["observation_id"])
    assert stored is not None
    # At the robot's current position (the last perception), in the default layer.
    assert (stored.x, stored.y, stored.layer_name) == (4.0, 5.0, "agent_notes")
    assert stored.episode_id == episode_id
    placed = bridge.ask(
        "StoreSpecificMemory",
        content="charger here",
        layer_name="notes",
        use_position=True,
        x=-1.5,
        y=2.0,
        z=0.5,
    )
    stored = bridge.memory.store.get_observation(placed["observation_id"])
    assert stored is not None and (stored.x, stored.y, stored.z, stored.layer_name) == (
        -1.5,
        2.0,
        0.5,
        "notes",
    )

    ended = bridge.ask("EndEpisode")
    assert ended == {"success": True, "error": "", "episode_id": episode_id, "summary": ""}
    assert bridge.memory.active_episode_id is None
    # Consolidation finishes in the background: the summary appears without being waited on.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        episode = bridge.memory.store.get_episode(episode_id)
        if episode is not None and episode.gist:
            break
        time.sleep(0.1)
    assert episode is not None and episode.status == "completed" and episode.gist

    summary = bridge.ask("EpisodeSummary", task_name="kitchen")
    assert "[kitchen patrol] (completed)" in summary["result"]
    assert [r["kind"] for r in _records(summary)] == ["episode"]

    nothing = bridge.ask("EndEpisode")
    assert nothing["success"] is False and "no active episode" in nothing["error"]


def test_end_episode_can_wait_for_its_summary(bridge: Bridge) -> None:
    episode_id = bridge.ask("StartEpisode", name="dock")["episode_id"]
    bridge.ask("StoreSpecificMemory", content="docked at the charger")
    ended = bridge.ask("EndEpisode", wait_for_consolidation=True)
    episode = bridge.memory.store.get_episode(episode_id)
    assert episode is not None and episode.gist
    assert ended == {
        "success": True,
        "error": "",
        "episode_id": episode_id,
        "summary": episode.gist,
    }


def test_consolidation_in_background_off_always_waits(make_bridge: Callable[..., Bridge]) -> None:
    bridge = make_bridge(DefaultServiceSettings(consolidation_in_background=False))
    bridge.ask("StartEpisode", name="dock")
    bridge.ask("StoreSpecificMemory", content="docked at the charger")
    ended = bridge.ask("EndEpisode")
    assert ended["success"] and ended["summary"]


def test_list_tools_names_every_tool_and_action(bridge: Bridge) -> None:
    response = bridge.dispatcher.handle("ListTools", default_request("ListTools"))
    assert set(response) == {"names", "schemas_json"}
    assert response["names"] == list(ALL_SCHEMAS)
    assert json.loads(response["schemas_json"]) == tool_definitions(include_actions=True)


# --- bad requests -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("srv", "fields", "error"),
    [
        ("CallTool", {"tool_name": "fly_to_moon"}, "unknown tool 'fly_to_moon'"),
        ("CallTool", {"tool_name": ""}, "tool_name is empty"),
        (
            "CallTool",
            {"tool_name": "locate", "arguments_json": "{concept: cup}"},
            "arguments_json is not valid JSON",
        ),
        ("CallTool", {"tool_name": "locate", "arguments_json": '["cup"]'}, "must be a JSON object"),
        ("CallTool", {"tool_name": "spatial_query", "arguments_json": '{"x": NaN, "y": 1}'}, "'x'"),
        (
            "CallTool",
            {"tool_name": "locate", "arguments_json": '{"concept": "cup", "k": 1}'},
            "unknown argument 'k'",
        ),
        ("SemanticSearch", {"query": "cup", "time_after": "next tuesday"}, "time_after"),
        ("TemporalQuery", {"time_before": "the day after tomorrow"}, "time_before"),
        ("EntityQuery", {"last_seen_after": "soonish"}, "last_seen_after"),
        ("SpatialQuery", {"x": math.nan, "y": 1.0}, "'x'"),
        ("SpatialQuery", {"x": 1.0, "y": math.inf}, "'y'"),
        (
            "SemanticSearch",
            {
                "query": "cup",
                "use_near": True,
                "near_x": math.nan,
                "near_y": 0.0,
                "spatial_radius": 1.0,
            },
            "'near_x'",
        ),
        ("SpatialQuery", {"x": 1.0, "y": 1.0, "radius": -1.0}, "'radius'"),
        ("SemanticSearch", {"query": ""}, "missing required argument 'query'"),
        ("SemanticSearch", {"query": "cup", "n_results": 0}, "'n_results'"),
        ("TemporalQuery", {"order": "sideways"}, "'order'"),
        ("Recall", {"query": "kitchen", "radius_multiplier": 0.0}, "'radius_multiplier'"),
        ("StoreSpecificMemory", {"content": "   "}, "'content'"),
        ("StoreSpecificMemory", {"content": "x", "use_position": True, "x": math.nan}, "'x'"),
        ("StartEpisode", {"name": ""}, "name is empty"),
    ],
)
def test_a_bad_request_answers_success_false_and_the_dispatcher_keeps_serving(
    bridge: Bridge, srv: str, fields: dict[str, Any], error: str
) -> None:
    response = bridge.ask(srv, **fields)
    assert response["success"] is False
    assert error in response["error"]
    assert set(response) == set(SERVICES[srv].response_fields)
    if "result" in response:
        assert response["result"] == "Error: " + response["error"]
        json.loads(response["result_json"])  # valid JSON, NaN arguments included
    assert bridge.ask("SpatialQuery", x=3.0, y=4.0)["success"] is True


@pytest.mark.parametrize(
    "request_",
    [
        SimpleNamespace(query="cup"),  # fields missing
        SimpleNamespace(**{**vars(default_request("SemanticSearch")), "query": 42}),
        SimpleNamespace(
            **{**vars(default_request("SemanticSearch")), "query": "c", "use_near": "yes"}
        ),
        SimpleNamespace(
            **{**vars(default_request("SemanticSearch")), "query": "c", "n_results": "ten"}
        ),
        None,
    ],
)
def test_a_malformed_request_object_is_refused(bridge: Bridge, request_: Any) -> None:
    response = bridge.dispatcher.handle("SemanticSearch", request_)
    assert response["success"] is False and response["error"].startswith(
        ("SemanticSearch: ", "semantic_search: ")
    )


def test_an_unknown_service_is_refused(bridge: Bridge) -> None:
    response = bridge.dispatcher.handle("Teleport", SimpleNamespace())
    assert response["success"] is False and "unknown service 'Teleport'" in response["error"]


def test_a_busy_memory_answers_with_a_timeout_and_recovers(
    make_bridge: Callable[..., Bridge],
) -> None:
    bridge = make_bridge(SimpleNamespace(services=DefaultServiceSettings(timeout_s=0.3)))
    release = threading.Event()
    blocker = bridge.owner.submit(lambda memory: release.wait(30))
    try:
        started = time.monotonic()
        response = bridge.ask("SemanticSearch", query="red cup")
        assert time.monotonic() - started < 5
        assert response["success"] is False
        assert "did not answer within 0.3 s" in response["error"]
        assert "cancelled before it started" in response["error"]
    finally:
        release.set()
    assert blocker.result(timeout=30) is True
    assert bridge.ask("SemanticSearch", query="red cup")["success"] is True


def test_a_closed_memory_answers_success_false(bridge: Bridge) -> None:
    bridge.owner.close()
    response = bridge.ask("SemanticSearch", query="cup")
    assert response["success"] is False and "closed" in response["error"]
    assert bridge.ask("Query", cypher="RETURN 1")["success"] is False


# --- the memory's owner -----------------------------------------------------------------------


def test_every_call_runs_on_the_one_owner_thread(bridge: Bridge) -> None:
    seen: set[int] = set()
    lock = threading.Lock()

    def note_thread(memory: SpatioTemporalMemory) -> None:
        with lock:
            seen.add(threading.get_ident())

    callers = [
        threading.Thread(target=lambda: [bridge.owner.call(note_thread) for _ in range(5)])
        for _ in range(4)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert len(seen) == 1 and threading.get_ident() not in seen
    assert bridge.owner.run(threading.get_ident) in seen


def test_close_flushes_and_closes_the_memory_on_its_thread(
    make_bridge: Callable[..., Bridge], tmp_path: Path
) -> None:
    bridge = make_bridge(fill=False)
    bridge.owner.call(lambda m: m.add("buffered, not yet flushed", 1.0, 1.0))
    bridge.owner.close()
    bridge.owner.close()  # idempotent
    with pytest.raises(MemoryClosedError):
        bridge.owner.call(lambda m: m.flush())
    with pytest.raises(MemoryClosedError):
        bridge.memory.flush()
    reopened = SpatioTemporalMemory(
        config=bridge.memory.config, embedding_provider=bridge.memory.embedder
    )
    try:
        assert reopened.store.counts()["observations"] == 1
    finally:
        reopened.close()


# --- Query: read-only Cypher on the live memory -----------------------------------------------


def _counts(bridge: Bridge) -> dict[str, int]:
    counts = {}
    for table in ("Observation", "Episode", "Gist", "Entity"):
        response = bridge.ask("Query", cypher=f"MATCH (n:{table}) RETURN count(n) AS n")
        assert response["success"], response
        counts[table] = json.loads(response["rows_json"])["rows"][0]["n"]
    return counts


def test_query_reads_the_live_memory_with_parameters(bridge: Bridge) -> None:
    response = bridge.ask(
        "Query",
        cypher="MATCH (o:Observation) WHERE o.layer = $layer RETURN o.text AS text "
        "ORDER BY o.timestamp",
        params_json='{"layer": "captions"}',
    )
    assert response["success"] and response["error"] == "", response
    rows = json.loads(response["rows_json"])
    assert rows["columns"] == ["text"]
    assert [row["text"] for row in rows["rows"]] == [
        "a red cup on the kitchen table",
        "a person waving at the front door",
        "a kettle on the stove",
    ]
    assert rows["truncated"] is False
    # Observations still in the ingest buffer are flushed first: the query sees them.
    bridge.owner.call(lambda m: m.add("just now", 0.0, 0.0))
    assert _counts(bridge)["Observation"] == 6


def test_query_keeps_to_the_row_limit(make_bridge: Callable[..., Bridge]) -> None:
    bridge = make_bridge(DefaultServiceSettings(query_service=True, query_row_limit=2))
    rows = json.loads(bridge.ask("Query", cypher="MATCH (o:Observation) RETURN o.id")["rows_json"])
    assert len(rows["rows"]) == 2 and rows["truncated"] is True


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE (:Episode {id: 'intruder', name: 'x'})",
        "MERGE (:Entity {id: 'intruder'})",
        "MATCH (o:Observation) SET o.text = 'overwritten'",
        "MATCH (o:Observation) DETACH DELETE o",
        "MATCH (e:Entity) DELETE e",
        "MATCH (o:Observation) REMOVE o.text",
        "DROP TABLE FOLLOWS",
        "ALTER TABLE Episode ADD intruder INT64",
        "CREATE NODE TABLE Intruder(id STRING PRIMARY KEY)",
        "COPY Episode FROM 'episodes.csv'",
        "COPY (MATCH (o:Observation) RETURN o.text) TO '{out}/leak.csv'",
        "EXPORT DATABASE '{out}/leak'",
        "LOAD EXTENSION json",
        "LOAD FROM '{out}/secret.csv' RETURN *",
        "INSTALL json",
        "ATTACH '{out}/other.kuzu' AS other (dbtype kuzu)",
        "BEGIN TRANSACTION",
        "COMMIT",
        "CHECKPOINT",
        "MATCH (o:Observation) RETURN count(o); MATCH (e:Episode) DETACH DELETE e",
    ],
)
def test_query_refuses_every_write_and_the_memory_is_unchanged(
    bridge: Bridge, tmp_path: Path, statement: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "secret.csv").write_text("a,b\n1,2\n")
    before = _counts(bridge)
    texts_before = json.loads(
        bridge.ask("Query", cypher="MATCH (o:Observation) RETURN o.text ORDER BY o.id")["rows_json"]
    )
    response = bridge.ask("Query", cypher=statement.replace("{out}", str(out)))
    assert response["success"] is False, response
    assert response["error"] and response["rows_json"] == ""
    assert _counts(bridge) == before
    texts_after = json.loads(
        bridge.ask("Query", cypher="MATCH (o:Observation) RETURN o.text ORDER BY o.id")["rows_json"]
    )
    assert texts_after == texts_before
    assert sorted(p.name for p in out.iterdir()) == ["secret.csv"]
    # The memory still writes and reads normally afterwards.
    assert bridge.ask("StoreSpecificMemory", content="still writable")["success"] is True
    assert _counts(bridge)["Observation"] == before["Observation"] + 1


def test_kuzu_itself_refuses_a_write_in_the_read_only_transaction(bridge: Bridge) -> None:
    graph = bridge.owner.call(lambda m: m.store.graph)
    from emem_graph.errors import ReadOnlyQueryError

    with pytest.raises(ReadOnlyQueryError, match="nothing was changed"):
        bridge.owner.call(
            lambda m: graph.run_statement(
                "MATCH (o:Observation) SET o.text = 'x'", limit=10, timeout_s=10
            )
        )
    assert "x" not in {
        row["text"]
        for row in json.loads(
            bridge.ask("Query", cypher="MATCH (o:Observation) RETURN o.text AS text")["rows_json"]
        )["rows"]
    }


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"cypher": ""}, "empty"),
        (
            {"cypher": "MATCH (o:Observation) WHERE o.layer = $layer RETURN o"},
            "needs parameter(s) $layer",
        ),
        ({"cypher": "RETURN 1", "params_json": '{"x": 1}'}, "no parameter(s) x"),
        ({"cypher": "RETURN 1", "params_json": "[1]"}, "params_json must be a JSON object"),
        ({"cypher": "RETURN 1", "params_json": "{oops"}, "params_json is not valid JSON"),
        ({"cypher": "MATCH (n:Nope) RETURN n"}, "Cypher failed"),
    ],
)
def test_query_errors_are_clear(bridge: Bridge, fields: dict[str, str], error: str) -> None:
    response = bridge.ask("Query", **fields)
    assert response["success"] is False and error in response["error"]


def test_query_times_out(make_bridge: Callable[..., Bridge]) -> None:
    bridge = make_bridge(DefaultServiceSettings(query_service=True, query_timeout_s=0.05))
    # 4e8 rows from a list parameter (on the live memory range() is bounded: check_live_bounds).
    many = "UNWIND $n AS i UNWIND $n AS j RETURN sum(i * 1.0 * j) AS s"
    numbers = json.dumps({"n": list(range(1, 20001))})
    started = time.monotonic()
    response = bridge.ask("Query", cypher=many, params_json=numbers)
    assert response["success"] is False and "ran longer than 0.05 s" in response["error"]
    assert time.monotonic() - started < 10
    assert bridge.ask("Query", cypher="RETURN 1 AS one")["success"] is True


# --- the record collector ---------------------------------------------------------------------


def test_formatters_note_records_only_inside_a_collector() -> None:
    first = Observation(id="o1", text="cup", x=1.0, y=2.0, timestamp=0.0)
    gist = Gist(id="g1", text="kitchen", x=0.0, y=0.0, time_start=0.0, time_end=1.0)
    outside = format_record(first)
    with collect_records() as records:
        assert format_record(first) == outside  # the text does not change
        format_record(gist)
        format_record(first)  # each record once
        with collect_records() as inner:
            noted([gist])
    assert records == [first, gist]
    assert inner == [gist]
    assert noted([first]) == [first]  # outside: nothing to note into, no error


def test_a_widened_semantic_search_notes_only_the_records_it_shows(
    make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """semantic_search asks for 3n hits when n hits collapse into fewer lines; the records
    behind its text (the bridge's result_json) are those of the lines shown, not those of the
    narrower search it set aside (the ROS suite saw 11 records behind 10 lines)."""
    from emem_graph.retrieval.search import HybridSearch, Scored

    def obs(i: int, text: str) -> Observation:
        return Observation(id=f"o{i:02d}", text=text, x=1.0, y=1.0, timestamp=float(i))

    narrow = [obs(i, "a red plant by the door") for i in range(3)] + [obs(50, "a blue vase")]
    wide = [obs(i, "a red plant by the door") for i in range(3)] + [
        obs(60 + i, f"a green thing {i}") for i in range(8)
    ]

    def answer(self, request, n, where):  # the hits of the narrow and of the wide search
        return [Scored(r, 1.0 - k / 100) for k, r in enumerate(narrow if n == 4 else wide)]

    monkeypatch.setattr(HybridSearch, "search_request", answer)
    memory = make_memory(embedder=None, maintenance_interval=None)
    with collect_records() as records:
        text = memory.semantic_search("red plant", n_results=4)
    lines = [line for line in text.splitlines() if line[:1].isdigit()]
    assert len(lines) == 4 and "blue vase" not in text
    assert [r.id for r in records] == ["o00", "o60", "o61", "o62"]
