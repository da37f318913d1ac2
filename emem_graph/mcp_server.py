"""The memory's tools over the Model Context Protocol (stdio or streamable HTTP), with fastmcp.

Each tool is published with the name, description and JSON schema of its one definition
(``memory.get_tool_definitions``) and runs through ``memory.dispatch_tool_call``: validation and
messages are the same as at every other door. A tool's ``Error: ...`` text becomes an MCP tool
error (``isError``); the server keeps answering. A read-only server neither lists nor runs the
write actions (store_specific_memory, start_episode, end_episode).

The server runs in a daemon thread while the main thread waits for the client to leave (stdin
closed) or for SIGTERM / SIGINT; the caller then closes the memory, so everything a tool call
acknowledged is flushed before the process exits. A note store_specific_memory answers "Stored"
for is written before that answer (the tool itself writes it), so it survives a kill too.

Over HTTP each client holds a session on the server until it closes it. A client that crashed
never does, so sessions are bounded (SessionLimits): one with no request in flight for a while
is closed, and a new one beyond the cap closes the one idle longest, rather than being refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from emem_graph.errors import BackendUnavailableError, InvalidInputError
from emem_graph.retrieval.schemas import ACTION_SCHEMAS

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import ASGIApp, Receive, Scope, Send

WRITE_TOOLS: frozenset[str] = frozenset(ACTION_SCHEMAS)
"""The tools that change the memory: not offered by a read-only server."""

ERROR_PREFIX = "Error: "
"""How a tool's text says it failed (dispatch_tool_call)."""

INSTRUCTIONS = (
    "A robot's spatio-temporal memory: what it perceived, where and when. Ask with the "
    "retrieval tools (semantic_search, locate, temporal_query, ...); each tool's description "
    "says when to use it and when not to."
)

STOP_WAIT_S = 10.0
"""How long a stop waits for the HTTP server to finish its open requests."""

SESSION_IDLE_S = 300.0
"""How long an HTTP session may go with no request in flight before the server closes it. A
connected client of the MCP SDK keeps a GET stream open, so only a client that went away (or
one without that stream, between its calls) is ever idle this long."""

MAX_SESSIONS = 100
"""The most HTTP sessions a server holds (each about 70 KB); a new one beyond it closes the
session idle longest."""


class RemoteBindError(InvalidInputError):
    """A non-loopback address was asked for without --allow-remote."""


@dataclass(frozen=True)
class SessionLimits:
    """How many HTTP sessions a server holds, and for how long one may sit idle.

    Raises:
        InvalidInputError: ``idle_s`` not a positive finite number, or ``max_sessions`` < 1.
    """

    idle_s: float = SESSION_IDLE_S
    """Seconds without a request in flight after which a session is closed."""
    max_sessions: int = MAX_SESSIONS
    """Sessions held at most; a new one closes the one idle longest (503 only if none is)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.idle_s) and self.idle_s > 0):
            raise InvalidInputError(
                f"--session-idle {self.idle_s}: give a positive number of seconds"
            )
        if self.max_sessions < 1:
            raise InvalidInputError(f"--max-sessions {self.max_sessions}: give 1 or more")


@dataclass(frozen=True)
class Endpoint:
    """Where an HTTP server listens."""

    host: str
    port: int

    @property
    def url(self) -> str:
        """The MCP endpoint's URL."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"


def parse_endpoint(text: str) -> Endpoint:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; PORT 0 picks a free port).

    Raises:
        InvalidInputError: not HOST:PORT, or a port outside 0..65535.
    """
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise InvalidInputError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    return Endpoint(host, int(port))


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback bind unless ``allow_remote`` (the server has no authentication).

    Raises:
        RemoteBindError: ``host`` is not loopback and ``allow_remote`` is False.
    """
    if not is_loopback(host) and not allow_remote:
        raise RemoteBindError(
            f"refusing to serve on {host}: the MCP server has no authentication, so anyone who "
            "can reach that address could read and write the memory; bind 127.0.0.1 (default), "
            "or pass --allow-remote to do it anyway"
        )


class ToolHost(Protocol):
    """What a server offers tools of: a memory, or a fleet (emem_graph.fleet)."""

    def get_tool_definitions(self, include_actions: bool = False) -> list[dict[str, Any]]: ...

    def dispatch_tool_call(
        self, tool_name: str, arguments: dict[str, Any] | str | None = None
    ) -> str: ...


def tool_names(memory: ToolHost, read_only: bool) -> list[str]:
    """The tools a server offers, in the order of the memory's definitions."""
    return [
        definition["function"]["name"]
        for definition in memory.get_tool_definitions(include_actions=True)
        if not (read_only and definition["function"]["name"] in WRITE_TOOLS)
    ]


def build_server(
    memory: ToolHost, *, read_only: bool = False, instructions: str = INSTRUCTIONS
) -> FastMCP:
    """A FastMCP server offering ``memory``'s tools (without the write actions if
    ``read_only``); ``instructions`` tell the client what it serves.

    Raises:
        BackendUnavailableError: fastmcp is not installed (the ``mcp`` extra).
    """
    try:
        import anyio
        from fastmcp import FastMCP
        from fastmcp.exceptions import ToolError
        from fastmcp.server.middleware import Middleware
        from fastmcp.tools import Tool, ToolResult
        from mcp.types import ToolAnnotations
        from pydantic import PrivateAttr
    except ImportError as exc:
        raise BackendUnavailableError(
            f"the MCP server needs fastmcp ({exc}); install it with: pip install 'emem-graph[mcp]'"
        ) from None

    class MemoryTool(Tool):
        """One tool of the memory, run by its dispatcher in a worker thread."""

        _dispatch: Callable[[str, dict[str, Any]], str] = PrivateAttr()

        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            text = await anyio.to_thread.run_sync(self._dispatch, self.name, arguments)
            return ToolResult(content=text, is_error=text.startswith(ERROR_PREFIX))

    class RefuseWrites(Middleware):
        """A read-only server answers a write action with a tool error naming the reason (an
        unlisted tool would otherwise read as a mere typo)."""

        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            if context.message.name in WRITE_TOOLS:
                raise ToolError(
                    f"{context.message.name}: refused, this MCP server is read-only (--read-only)"
                )
            return await call_next(context)

    server: FastMCP = FastMCP(
        name="emem-graph",
        instructions=instructions,
        middleware=[RefuseWrites()] if read_only else [],
        strict_input_validation=False,  # the dispatcher validates, as at every other door
        mask_error_details=False,
    )
    offered = set(tool_names(memory, read_only))
    for definition in memory.get_tool_definitions(include_actions=True):
        function = definition["function"]
        if function["name"] not in offered:
            continue
        writes = function["name"] in WRITE_TOOLS
        tool = MemoryTool(
            name=function["name"],
            description=function["description"],
            parameters=function["parameters"],
            annotations=ToolAnnotations(
                readOnlyHint=not writes,
                destructiveHint=False,
                idempotentHint=not writes,
                openWorldHint=False,
            ),
        )
        tool._dispatch = memory.dispatch_tool_call
        server.add_tool(tool)
    return server


class _Serving:
    """The server's thread and how to stop it."""

    def __init__(self, target: Callable[[], None], halt: Callable[[], None] | None) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._halt = halt
        self._thread = threading.Thread(target=self._run, args=(target,), daemon=True)
        self._thread.name = "emem-graph-mcp"

    def _run(self, target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the server to finish (HTTP: open requests are answered); a stdio server reading
        its input cannot be interrupted, and its daemon thread ends with the process."""
        if self._halt is not None:
            self._halt()
            self._thread.join(STOP_WAIT_S)


def open_socket(endpoint: Endpoint) -> socket.socket:
    """A listening TCP socket on ``endpoint`` (bound here so that a busy port is one clear
    error before the server starts, and port 0 gives the port chosen).

    Raises:
        OSError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in endpoint.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((endpoint.host, endpoint.port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


class _BoundSessions:
    """ASGI middleware in front of fastmcp's MCP endpoint that bounds its sessions.

    The MCP SDK's session manager has the knobs (``session_idle_timeout``, ``max_sessions``)
    but fastmcp builds it with their defaults (30 minutes, 10,000 sessions, then 503 for every
    new client), so they are set here before the manager admits its first session. At the cap
    the SDK refuses a new session; this closes the session idle longest first (through the SDK's
    own discard, as its idle expiry does), so a client that crashes in a loop cannot lock the
    others out. A session with a request in flight (a connected client's GET stream) is never
    closed; if every session is busy, the SDK's 503 stands.
    """

    def __init__(self, app: ASGIApp, limits: SessionLimits) -> None:
        self.app = app
        self.limits = limits
        self._configured: object = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            manager = _session_manager(scope)
            if manager is not None:
                if manager is not self._configured:
                    manager.session_idle_timeout = self.limits.idle_s
                    manager.max_sessions = self.limits.max_sessions
                    self._configured = manager
                if not any(name == b"mcp-session-id" for name, _ in scope["headers"]):
                    await _make_room(manager, self.limits.max_sessions)
        await self.app(scope, receive, send)


def _session_manager(scope: Scope) -> StreamableHTTPSessionManager | None:
    """The session manager of the MCP endpoint ``scope`` is a request to, or None."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.routing import Match

    for route in getattr(scope.get("app"), "routes", ()):
        manager = getattr(getattr(route, "endpoint", None), "session_manager", None)
        if isinstance(manager, StreamableHTTPSessionManager):
            return manager if route.matches(scope)[0] is not Match.NONE else None
    return None


async def _make_room(manager: StreamableHTTPSessionManager, cap: int) -> None:
    """Close the sessions idle longest until a new one fits under ``cap``.

    Idle: no request in flight, so the SDK's idle countdown runs; the earliest deadline is the
    session idle longest. (The SDK keeps its sessions in ``_server_instances`` and forgets one
    with ``_discard_session``; without them this does nothing and the SDK's 503 stands.)
    """
    sessions = getattr(manager, "_server_instances", None)
    discard = getattr(manager, "_discard_session", None)
    if not isinstance(sessions, dict) or discard is None:
        return
    while len(sessions) >= cap:
        idle = [
            (transport.idle_scope.deadline, session_id, transport)
            for session_id, transport in sessions.items()
            if transport.idle_scope is not None
            and not transport.idle_scope.cancel_called
            and math.isfinite(transport.idle_scope.deadline)
        ]
        if not idle:
            return
        _, session_id, transport = min(idle, key=lambda entry: entry[0])
        await discard(session_id, transport)


def _http_serving(server: FastMCP, sock: socket.socket, limits: SessionLimits) -> _Serving:
    import uvicorn
    from starlette.middleware import Middleware

    # "auto": the Host and Origin headers of a request to a loopback server must be local (a
    # web page the user visits cannot reach the memory through DNS rebinding). The session
    # bounds come after that check: a refused request never closes a session.
    app = server.http_app(
        transport="http",
        host_origin_protection="auto",
        middleware=[Middleware(_BoundSessions, limits=limits)],
    )
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        timeout_graceful_shutdown=2,
        log_level="warning",
    )
    http = uvicorn.Server(config)

    def halt() -> None:
        http.should_exit = True

    return _Serving(lambda: asyncio.run(http.serve(sockets=[sock])), halt)


def serve(
    server: FastMCP,
    transport: Literal["stdio", "http"],
    *,
    sock: socket.socket | None = None,
    signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
    ready: Callable[[], object] | None = None,
    sessions: SessionLimits | None = None,
) -> bool:
    """Serve until the client leaves (stdio: its input closes) or one of ``signals`` arrives.

    Call from the main thread (signal handlers); close the memory afterwards.

    Returns:
        Whether the server thread has ended. False: a stdio server stopped by a signal is still
        blocked reading its client's open input; leave the process with ``os._exit`` once the
        memory is closed (Python's own exit would abort on that thread's lock of stdin).

    Args:
        server: from build_server.
        transport: "stdio", or "http" (streamable HTTP on ``sock``, from open_socket).
        sock: the listening socket of an HTTP server.
        signals: the signals that stop the server.
        ready: called once the signals are handled and the server thread started (a line that
            says the server runs: a signal after it stops the server cleanly).
        sessions: the bounds of an HTTP server's sessions; None: SessionLimits().

    Raises:
        InvalidInputError: "http" without a socket.
        Exception: whatever stopped the server thread on its own (re-raised here).
    """
    if transport == "http":
        if sock is None:
            raise InvalidInputError("an HTTP server needs a listening socket (open_socket)")
        serving = _http_serving(server, sock, sessions or SessionLimits())
    else:
        serving = _Serving(
            lambda: server.run(transport="stdio", show_banner=False, log_level="WARNING"), None
        )
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
    try:
        serving.start()
        if ready is not None:
            ready()
        while not (stop.is_set() or serving.done.is_set()):
            stop.wait(0.2)
        serving.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if serving.error is not None and not isinstance(serving.error, SystemExit | KeyboardInterrupt):
        raise serving.error
    return serving.done.is_set()
