"""The bridge's services without ROS: requests of emem_interfaces in, response fields out.

``MemoryOwner`` runs everything that touches the memory on one worker thread (ingest ticks,
tool calls, episodes, queries), with a timeout per call. ``ServiceDispatcher.handle`` turns one
service request (an rclpy request, or any object with the ``.srv`` fields) into a tool call on
that thread and returns the response fields as a dict; it never raises. ROS has no optional
fields, so the request's sentinels mean "not given": ``""`` for text, an empty list,
``use_near=false`` for the area filter, ``last_n_minutes=0`` and ``use_position=false``.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import math
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from emem_graph.areas import schemas as _area_schemas  # noqa: F401  (registers its tools)
from emem_graph.errors import (
    InvalidInputError,
    MemoryClosedError,
    QueryResourceError,
    QueryTimeoutError,
)
from emem_graph.explore.cypher import format_result, query_graph
from emem_graph.explore.statement import check_live_bounds, check_statement
from emem_graph.profile import schemas as _profile_schemas  # noqa: F401  (registers user_profile)
from emem_graph.retrieval.formatting import collect_records, record_fields
from emem_graph.retrieval.schemas import ALL_SCHEMAS, tool_definitions
from emem_graph.spatial import schemas as _spatial_schemas  # noqa: F401  (registers its tools)
from ros_bridge.srv_files import srv_definition

if TYPE_CHECKING:
    from emem_graph.memory import SpatioTemporalMemory
    from emem_graph.storage.graph import GraphDB

log = logging.getLogger(__name__)

T = TypeVar("T")

TOOL_RESPONSE = ("success", "error", "result", "result_json")
"""The response block every tool service ends with."""
ERROR_PREFIX = "Error: "
"""How a tool's text says it failed (dispatch_tool_call)."""


@dataclass(frozen=True)
class ServiceSpec:
    """One service of emem_interfaces.

    Attributes:
        srv_type: the ``.srv`` type name (``SemanticSearch``).
        service_name: the node-relative service name (``semantic_search``, served as
            ``~/semantic_search``).
        tool: the tool a request is mapped to; None for the services handled specially
            (CallTool, ListTools, StoreSpecificMemory, StartEpisode, EndEpisode, Query).
        response_fields: the response's field names, in ``.srv`` order.
    """

    srv_type: str
    service_name: str
    tool: str | None
    response_fields: tuple[str, ...]


def _tool_service(srv_type: str, tool: str) -> ServiceSpec:
    return ServiceSpec(srv_type, tool, tool, TOOL_RESPONSE)


SERVICES: dict[str, ServiceSpec] = {
    spec.srv_type: spec
    for spec in (
        _tool_service("SemanticSearch", "semantic_search"),
        _tool_service("SpatialQuery", "spatial_query"),
        _tool_service("TemporalQuery", "temporal_query"),
        _tool_service("EpisodeSummary", "episode_summary"),
        _tool_service("GetCurrentContext", "get_current_context"),
        _tool_service("SearchGists", "search_gists"),
        _tool_service("EntityQuery", "entity_query"),
        _tool_service("Locate", "locate"),
        _tool_service("Recall", "recall"),
        _tool_service("BodyStatus", "body_status"),
        # services: spatial
        _tool_service("RouteQuery", "route_query"),
        _tool_service("DirectionalQuery", "directional_query"),
        _tool_service("NavigateTo", "navigate_to"),
        # services: areas
        _tool_service("DescribeArea", "describe_area"),
        _tool_service("GlobalSearch", "global_search"),
        # services: profile
        _tool_service("UserProfile", "user_profile"),
        ServiceSpec("CallTool", "call_tool", None, TOOL_RESPONSE),
        ServiceSpec("ListTools", "list_tools", None, ("names", "schemas_json")),
        ServiceSpec(
            "StoreSpecificMemory",
            "store_specific_memory",
            None,
            ("success", "error", "observation_id"),
        ),
        ServiceSpec("StartEpisode", "start_episode", None, ("success", "error", "episode_id")),
        ServiceSpec(
            "EndEpisode", "end_episode", None, ("success", "error", "episode_id", "summary")
        ),
        ServiceSpec("Query", "query", None, ("success", "error", "rows_json")),
    )
}
"""Every service of emem_interfaces, by ``.srv`` type name."""

AREA_FIELDS = ("near_x", "near_y", "spatial_radius")
"""Request fields that count only with ``use_near=true``."""
ZERO_MEANS_NOT_GIVEN = frozenset({"last_n_minutes"})
"""Numeric request fields whose default 0 means "not given"."""
SCHEMA_ONLY_ARGUMENTS = frozenset({"include_body_state"})
"""Tool arguments the typed services leave out (the table of ROS.md); CallTool takes them."""


# --- the memory's owner ----------------------------------------------------------------------


class MemoryOwner:
    """One worker thread that owns the memory: every call that touches it runs there, in the
    order submitted.

    Args:
        memory: the open memory; from now on use it only through this owner.
        name: the worker thread's name.
    """

    def __init__(self, memory: SpatioTemporalMemory, *, name: str = "emem-memory-owner") -> None:
        self._memory = memory
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """close() was called."""
        return self._closed

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn(memory, *args)`` on the worker; the Future gives its result.

        Raises:
            MemoryClosedError: the owner is closed.
        """
        return self._submit(fn, self._memory, *args)

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """Run ``fn(memory, *args)`` on the worker and return its result (or raise its
        exception).

        Raises:
            TimeoutError: no result within ``timeout_s`` seconds; a call still queued is
                cancelled, one already running finishes in the background.
            MemoryClosedError: the owner is closed.
        """
        return self._wait(self.submit(fn, *args), timeout_s)

    def run(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
        """Run ``fn(*args)`` (without the memory: e.g. ``pipeline.tick``) on the worker.

        Raises:
            TimeoutError, MemoryClosedError: as call().
        """
        return self._wait(self._submit(fn, *args), timeout_s)

    def close(self, timeout_s: float | None = None) -> None:
        """Let the queued calls finish, then flush and close the memory on the worker and stop
        it (idempotent).

        Raises:
            TimeoutError: the memory was not closed within ``timeout_s`` seconds.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # Submitted under the lock, after _closed is set: nothing can queue behind it.
            done = self._executor.submit(_flush_and_close, self._memory)
        try:
            self._wait(done, timeout_s)
        finally:
            self._executor.shutdown(wait=timeout_s is None)

    def _submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        with self._lock:
            if self._closed:
                raise MemoryClosedError("the memory is closed (the bridge is shutting down)")
            return self._executor.submit(fn, *args)

    @staticmethod
    def _wait(future: Future[T], timeout_s: float | None) -> T:
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            started = not future.cancel()
            state = "still running" if started else "cancelled before it started"
            raise TimeoutError(
                f"the memory did not answer within {timeout_s:g} s (the call is {state}; the "
                "memory is busy with earlier calls or a slow one)"
            ) from None


def _flush_and_close(memory: SpatioTemporalMemory) -> None:
    try:
        memory.flush()
    finally:
        memory.close()


# --- settings --------------------------------------------------------------------------------


class ServiceSettings(Protocol):
    """What the dispatcher reads from the bridge config's ``services`` section."""

    @property
    def timeout_s(self) -> float: ...

    @property
    def query_service(self) -> bool: ...

    @property
    def query_row_limit(self) -> int: ...

    @property
    def query_timeout_s(self) -> float: ...

    @property
    def consolidation_in_background(self) -> bool: ...


@dataclass(frozen=True)
class DefaultServiceSettings:
    """The ``services`` defaults of the bridge config (used when none is given)."""

    timeout_s: float = 30.0
    query_service: bool = False
    query_row_limit: int = 1000
    query_timeout_s: float = 10.0
    consolidation_in_background: bool = True


# --- the dispatcher --------------------------------------------------------------------------


class ServiceDispatcher:
    """Maps service requests to tool calls on the memory's owner.

    Args:
        owner: the memory's owner.
        config: the bridge config (its ``services`` section is read), a services section
            itself, or None for the defaults.
    """

    def __init__(self, owner: MemoryOwner, config: Any = None) -> None:
        self.owner = owner
        section = getattr(config, "services", config)
        self.settings: ServiceSettings = (
            section if section is not None else DefaultServiceSettings()
        )
        self._handlers: dict[str, Callable[[ServiceSpec, Any], dict[str, Any]]] = {
            "CallTool": self._tool,
            "ListTools": self._list_tools,
            "StoreSpecificMemory": self._store_note,
            "StartEpisode": self._start_episode,
            "EndEpisode": self._end_episode,
            "Query": self._query,
        }
        # One live statement at a time (each may take hundreds of MB while Kuzu binds it).
        self._query_slot = threading.Lock()

    def handle(self, srv_name: str, request: Any) -> dict[str, Any]:
        """Answer one request of service ``srv_name`` (type name ``SemanticSearch`` or service
        name ``semantic_search``).

        Returns:
            The response fields by name. On any failure (bad request, unknown tool, a tool's
            ``Error: ...`` text, timeout, closed memory) ``success`` is false and ``error``
            says why; the dispatcher keeps working. Never raises.
        """
        spec = service_spec(srv_name)
        if spec is None:
            known = ", ".join(SERVICES)
            return {"success": False, "error": f"unknown service {srv_name!r} (known: {known})"}
        try:
            handler = self._handlers.get(spec.srv_type, self._tool)
            return handler(spec, request)
        except (
            InvalidInputError,
            MemoryClosedError,
            TimeoutError,
            QueryTimeoutError,
            QueryResourceError,
        ) as exc:
            log.info("%s refused: %s", spec.srv_type, exc)
            return _failure(spec, str(exc))
        except Exception as exc:
            # A service callback must not take the node down; the traceback goes to the log.
            log.exception("%s failed", spec.srv_type)
            return _failure(spec, f"{spec.srv_type} failed: {type(exc).__name__}: {exc}")

    # --- tool services --------------------------------------------------------------------

    def _tool(self, spec: ServiceSpec, request: Any) -> dict[str, Any]:
        tool, arguments = request_to_arguments(spec.srv_type, request)
        text, records = self.owner.call(
            _run_tool, tool, arguments, timeout_s=self.settings.timeout_s
        )
        failed = text.startswith(ERROR_PREFIX)
        document: dict[str, Any] = {
            "tool": tool,
            "arguments": arguments,
            "records": [] if failed else records,
            "text": text,
        }
        if tool == "locate" and not failed:
            document["location"] = _location(text)
        return {
            "success": not failed,
            "error": text[len(ERROR_PREFIX) :] if failed else "",
            "result": text,
            "result_json": _to_json(document),
        }

    def _list_tools(self, spec: ServiceSpec, request: Any) -> dict[str, Any]:
        definitions = tool_definitions(include_actions=True)
        return {
            "names": [d["function"]["name"] for d in definitions],
            "schemas_json": json.dumps(definitions, ensure_ascii=False),
        }

    # --- planner actions ------------------------------------------------------------------

    def _store_note(self, spec: ServiceSpec, request: Any) -> dict[str, Any]:
        tool, arguments = request_to_arguments(spec.srv_type, request)
        text, _ = self.owner.call(_run_tool, tool, arguments, timeout_s=self.settings.timeout_s)
        if text.startswith(ERROR_PREFIX):
            return _failure(spec, text[len(ERROR_PREFIX) :])
        match = _STORED.match(text)
        if match is None:  # the tool's text format changed: say so rather than guess
            return _failure(spec, f"store_specific_memory answered {text!r}: no id in it")
        return {"success": True, "error": "", "observation_id": match.group(1)}

    def _start_episode(self, spec: ServiceSpec, request: Any) -> dict[str, Any]:
        _, arguments = request_to_arguments(spec.srv_type, request)
        if "name" not in arguments:
            raise InvalidInputError("StartEpisode: name is empty; give the task's name")
        episode_id = self.owner.call(
            _start_episode, arguments["name"], timeout_s=self.settings.timeout_s
        )
        return {"success": True, "error": "", "episode_id": episode_id}

    def _end_episode(self, spec: ServiceSpec, request: Any) -> dict[str, Any]:
        wait = _field(spec.srv_type, request, "wait_for_consolidation")
        if not isinstance(wait, bool):
            raise InvalidInputError(
                f"EndEpisode: wait_for_consolidation must be a bool, got {wait!r}"
            )
        wait = wait or not self.settings.consolidation_in_background
        episode_id, summary = self.owner.call(_end_episode, wait, timeout_s=self.settings.timeout_s)
        if episode_id is None:
            return _failure(spec, "no active episode to end (StartEpisode starts one)")
        return {"success": True, "error": "", "episode_id": episode_id, "summary": summary}

    # --- Query ----------------------------------------------------------------------------

    def _query(self, spec: ServiceSpec, request: Any) -> dict[str, Any]:
        if not getattr(self.settings, "query_service", False):
            raise InvalidInputError(
                "Query is disabled on this bridge (services.query_service: false, the default): "
                "enable it in the bridge config, with SROS2 access control on ~/query, or query "
                "a copy of the memory with emem-graph cypher"
            )
        cypher = _text_field(spec.srv_type, request, "cypher")
        params = _json_object(spec.srv_type, "params_json", request)
        # The allow-list (check_read_only, inside check_statement) refuses LOAD and every other
        # file, write or setting form. Checked before anything binds the statement: EXPLAIN
        # (the plan check) folds constants too.
        check_statement(cypher, params, limit=self.settings.query_row_limit)
        check_live_bounds(cypher)
        limit = self.settings.query_row_limit
        query_timeout = self.settings.query_timeout_s
        # Only the catch-up runs on the owner's worker; the statement runs on a connection and
        # thread of its own (GraphDB.run_statement), from this caller's thread, so the tool
        # calls queued on the owner are not held up while it runs.
        if not self._query_slot.acquire(timeout=query_timeout):
            raise QueryTimeoutError(
                f"another Query statement held the graph for {query_timeout:g} s "
                "(services.query_timeout_s); one runs at a time: try again"
            )
        try:
            graph = self.owner.call(_caught_up_graph, timeout_s=self.settings.timeout_s)
            if graph.running_statements():
                # An earlier statement's caller was answered at its timeout, but Kuzu has
                # not stopped it yet (it does not look at the interrupt while binding).
                raise QueryTimeoutError(
                    "an earlier Query statement is still being stopped (it ran past its "
                    "timeout); try again in a few seconds"
                )
            result = query_graph(graph, cypher, params, limit=limit, timeout_s=query_timeout)
        finally:
            self._query_slot.release()
        return {"success": True, "error": "", "rows_json": format_result(result, "json")}


def service_spec(name: str) -> ServiceSpec | None:
    """The service with ``.srv`` type name or service name ``name``, or None."""
    if name in SERVICES:
        return SERVICES[name]
    return next((spec for spec in SERVICES.values() if spec.service_name == name), None)


def request_to_arguments(srv_name: str, request: Any) -> tuple[str, dict[str, Any]]:
    """The tool and its arguments for one request, the sentinels removed.

    ``""`` (text), ``[]`` (lists), ``last_n_minutes=0`` mean "not given"; ``near_x``,
    ``near_y`` and ``spatial_radius`` are given only with ``use_near=true``, and x, y, z of
    StoreSpecificMemory only with ``use_position=true``. CallTool's ``arguments_json`` is
    parsed ("" = no arguments).

    Raises:
        InvalidInputError: an unknown service or one without a tool (ListTools, Query), a field
            missing from the request or of the wrong kind, arguments_json that is not a JSON
            object.
    """
    spec = service_spec(srv_name)
    if spec is None:
        raise InvalidInputError(f"unknown service {srv_name!r} (known: {', '.join(SERVICES)})")
    if spec.srv_type == "CallTool":
        tool = _text_field(spec.srv_type, request, "tool_name").strip()
        if not tool:
            raise InvalidInputError("CallTool: tool_name is empty; ListTools lists the tools")
        return tool, _json_object(spec.srv_type, "arguments_json", request)
    if spec.srv_type == "EndEpisode":
        return "end_episode", {}  # wait_for_consolidation is the service's, not the tool's
    tool = spec.tool or spec.service_name
    if tool not in ALL_SCHEMAS:
        raise InvalidInputError(f"{spec.srv_type} calls no tool; it has no arguments to map")
    fields = srv_definition(spec.srv_type).request
    values = {field.name: _field(spec.srv_type, request, field.name) for field in fields}
    use_near = values.pop("use_near", False)
    use_position = values.pop("use_position", False)
    for flag, value in (("use_near", use_near), ("use_position", use_position)):
        if not isinstance(value, bool):
            raise InvalidInputError(f"{spec.srv_type}: {flag} must be a bool, got {value!r}")
    arguments: dict[str, Any] = {}
    for field in fields:
        name = field.name
        if name not in values:
            continue
        value = values[name]
        if name in AREA_FIELDS and not use_near:
            continue
        if spec.srv_type == "StoreSpecificMemory" and name in ("x", "y", "z") and not use_position:
            continue
        if field.is_array:
            if isinstance(value, str) or not hasattr(value, "__iter__"):
                raise InvalidInputError(
                    f"{spec.srv_type}: {name} must be a list of strings, got {value!r}"
                )
            value = list(value)
            if not value:
                continue
        elif field.type == "string":
            if not isinstance(value, str):
                raise InvalidInputError(f"{spec.srv_type}: {name} must be text, got {value!r}")
            if value == "":
                continue
        elif name in ZERO_MEANS_NOT_GIVEN and value == 0:
            continue
        arguments[name] = value
    return tool, arguments


# --- on the owner's thread -------------------------------------------------------------------


def _run_tool(
    memory: SpatioTemporalMemory, tool: str, arguments: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    with collect_records() as records:
        text = memory.dispatch_tool_call(tool, arguments)
    return text, [record_fields(record) for record in records]


def _start_episode(memory: SpatioTemporalMemory, name: str) -> str:
    return memory.start_episode(name)


def _end_episode(memory: SpatioTemporalMemory, wait: bool) -> tuple[str | None, str]:
    episode_id = memory.end_episode(consolidate=True, wait=wait)
    if episode_id is None or not wait:
        return episode_id, ""
    episode = memory.store.get_episode(episode_id)
    return episode_id, (episode.gist or "") if episode is not None else ""


def _caught_up_graph(memory: SpatioTemporalMemory) -> GraphDB:
    # The query sees every observation added so far and what the capabilities derive from
    # them (the map's places and links are written in larger transactions than observations).
    memory.catch_up()
    return memory.store.graph


# --- helpers ---------------------------------------------------------------------------------

_STORED = re.compile(r"^Stored memory (\S+) in \[")
_LOCATION = re.compile(
    r"^Location: \((-?[\d.]+), (-?[\d.]+), (-?[\d.]+)\)\nRadius: (-?[\d.]+)m", re.MULTILINE
)
_MISSING = object()


def _field(srv_type: str, request: Any, name: str) -> Any:
    value = getattr(request, name, _MISSING)
    if value is _MISSING:
        raise InvalidInputError(f"{srv_type}: the request has no field {name!r}")
    return value


def _text_field(srv_type: str, request: Any, name: str) -> str:
    value = _field(srv_type, request, name)
    if not isinstance(value, str):
        raise InvalidInputError(f"{srv_type}: {name} must be text, got {value!r}")
    return value


def _json_object(srv_type: str, name: str, request: Any) -> dict[str, Any]:
    text = _text_field(srv_type, request, name)
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{srv_type}: {name} is not valid JSON ({exc.msg} at line {exc.lineno} column "
            f'{exc.colno}); give an object such as {{"n_results": 3}}'
        ) from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{srv_type}: {name} must be a JSON object of named values, got {type(value).__name__}"
        )
    return value


def _location(text: str) -> dict[str, float] | None:
    match = _LOCATION.search(text)
    if match is None:
        return None
    x, y, z, radius = (float(group) for group in match.groups())
    return {"x": x, "y": y, "z": z, "radius": radius}


def _failure(spec: ServiceSpec, message: str) -> dict[str, Any]:
    """The response of a refused or failed request: success false, the error, the other fields
    empty (only the fields the response has)."""
    message = " ".join(message.split())
    failed: dict[str, Any] = {
        "success": False,
        "error": message,
        "result": ERROR_PREFIX + message,
        "result_json": _to_json(
            {"tool": spec.tool, "arguments": None, "records": [], "text": ERROR_PREFIX + message}
        ),
        "names": [],
    }
    return {name: failed.get(name, "") for name in spec.response_fields}


def _to_json(document: dict[str, Any]) -> str:
    try:
        return json.dumps(document, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:
        # Arguments the tool refused may hold NaN: keep the JSON valid without them.
        return json.dumps(
            {**document, "arguments": _finite_only(document.get("arguments"))},
            ensure_ascii=False,
            default=str,
        )


def _finite_only(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite_only(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite_only(item) for item in value]
    return value
