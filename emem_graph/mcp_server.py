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
"""

from __future__ import annotations

import asyncio
import ipaddress
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


class RemoteBindError(InvalidInputError):
    """A non-loopback address was asked for without --allow-remote."""


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


def _http_serving(server: FastMCP, sock: socket.socket) -> _Serving:
    import uvicorn

    # "auto": the Host and Origin headers of a request to a loopback server must be local (a
    # web page the user visits cannot reach the memory through DNS rebinding).
    app = server.http_app(transport="http", host_origin_protection="auto")
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

    Raises:
        InvalidInputError: "http" without a socket.
        Exception: whatever stopped the server thread on its own (re-raised here).
    """
    if transport == "http":
        if sock is None:
            raise InvalidInputError("an HTTP server needs a listening socket (open_socket)")
        serving = _http_serving(server, sock)
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
