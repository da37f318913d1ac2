"""The MCP door: ``emem-graph mcp DIR`` in a subprocess, used by a real MCP client (fastmcp's
Client) over stdio and over streamable HTTP on 127.0.0.1. Every tool is listed with its one
definition and answers; bad arguments are tool errors and the server keeps answering; a
read-only server refuses writes; a non-loopback bind needs --allow-remote; SIGTERM stops the
server with exit status 0 and what a tool call stored is in the memory afterwards; a note
store_specific_memory acknowledged is in the memory even when the server is killed (SIGKILL)
right after the answer.

The tests that only read share one server per transport (a module's server on its own copy of
the memory); a test that writes, stops, kills, binds or starts a server with other options has
its own."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from emem_graph.errors import InvalidInputError
from emem_graph.ingest.embeddings import HashingEmbedder
from emem_graph.mcp_server import SessionLimits, check_bind, parse_endpoint
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.retrieval.schemas import ACTION_SCHEMAS, ALL_SCHEMAS, CORE_TOOLS, TOOL_SCHEMAS

COMMAND = [sys.executable, "-m", "emem_graph.cli"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
HOUR = 3600.0
NOW = time.time()
T = NOW - 4 * HOUR
"""The cup is on the kitchen table from T to T+4 min, in the bathroom sink from T+2h."""
START_S = 60.0
"""How long a server may take to start (imports, opening the memory)."""
STOP_S = 15.0
"""How long a server may take to stop after SIGTERM (graceful HTTP shutdown is 2 s)."""
SERVING = re.compile(r"serving .* (?:at (http://\S+)|on stdio), pid (\d+)")
LOCATION = re.compile(r"^Location: \((-?[\d.]+), (-?[\d.]+), (-?[\d.]+)\)", re.MULTILINE)

VALID_CALLS: dict[str, dict[str, Any]] = {
    "semantic_search": {"query": "red cup", "n_results": 5},
    "spatial_query": {"x": 12.0, "y": 9.0, "radius": 3.0},
    "temporal_query": {"time_after": "-5h", "order": "newest"},
    "episode_summary": {},
    "get_current_context": {"radius": 5.0},
    "search_gists": {"query": "kitchen"},
    "entity_query": {"name": "red cup"},
    "locate": {"concept": "red cup"},
    "recall": {"query": "where is the red cup"},
    "body_status": {},
    "route_query": {"target": "red cup", "goal": "bathroom sink"},
    "directional_query": {"target": "red cup", "anchor": "kitchen table", "direction": "north"},
    "navigate_to": {"concept": "bathroom sink"},
    "describe_area": {},
    "global_search": {"query": "where can I wash my hands"},
    "user_profile": {"query": "coffee"},
    "store_specific_memory": {"content": "the keys are in the blue bowl", "x": 2.0, "y": 2.0},
    "start_episode": {"name": "patrol kitchen"},
    "end_episode": {},
}
"""A valid call of every tool the server offers (a new tool must be added here)."""


# --- the memory served ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small memory: a red cup moved from the kitchen table to the bathroom sink, a battery
    reading, one finished episode."""
    directory = tmp_path_factory.mktemp("mcp") / "template"
    with SpatioTemporalMemory(
        str(directory),
        config={"maintenance_interval": None, "entity_extraction": False},
        embedding_provider=HashingEmbedder(384),
    ) as memory:
        memory.add_entity("kitchen table", 1.5, 1.5, timestamp=T - 600, entity_type="furniture")
        memory.add_entity("bathroom sink", 12.5, 9.5, timestamp=T - 600, entity_type="fixture")
        memory.add("a kitchen table with chairs", 1.5, 1.5, timestamp=T - 600)
        memory.add("a bathroom sink with a mirror", 12.5, 9.5, timestamp=T - 500)
        for i in range(5):
            memory.add("a red cup on the kitchen table", 1.0 + 0.05 * i, 1.0, timestamp=T + 60 * i)
            memory.add_entity("red cup", 1.0 + 0.05 * i, 1.0, timestamp=T + 60 * i)
        for i in range(3):
            when = T + 2 * HOUR + 60 * i
            memory.add("a red cup in the bathroom sink", 12.0, 9.0, timestamp=when)
            memory.add_entity("red cup", 12.0, 9.0, timestamp=when)
        memory.add_body_state("battery at 80 percent", "battery", timestamp=NOW - 60)
        memory.start_episode("morning patrol")
        memory.add("the hallway is clear", 6.0, 5.0)
        memory.end_episode(consolidate=False)
    return directory


@pytest.fixture
def memory_dir(template: Path, tmp_path: Path) -> Path:
    """A copy of the template for one test (a server holds its memory read-write)."""
    copy = tmp_path / "memory"
    shutil.copytree(template, copy)
    return copy


JSON_OR_SSE = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "crashed", "version": "0"},
    },
}


def stored_notes(directory: Path) -> str:
    """What a fresh open of ``directory`` finds for the note the tests store."""
    with SpatioTemporalMemory(str(directory), embedding_provider=HashingEmbedder(384)) as memory:
        return memory.semantic_search("keys in the blue bowl", layer="agent_notes")


# --- servers and clients -------------------------------------------------------------------


class ServerLog:
    """A server's stderr, read line by line in a thread."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    found = pattern.search(line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    raise AssertionError(f"no {pattern.pattern!r} in: {''.join(self.lines)}")
                self._changed.wait(left)

    @property
    def text(self) -> str:
        self._thread.join(5)
        return "".join(self.lines)


def start_http(directory: Path, *options: str, host: str = "127.0.0.1") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*COMMAND, "mcp", str(directory), "--embedder", "hashing", "--http", f"{host}:0", *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


@contextlib.contextmanager
def http_server(directory: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A streamable-HTTP server on a free port of 127.0.0.1: (process, its MCP URL)."""
    process = start_http(directory, *options)
    assert process.stderr is not None
    log = ServerLog(process.stderr)
    try:
        url = log.wait_for(SERVING, START_S).group(1)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        yield process, url
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(STOP_S)


@contextlib.asynccontextmanager
async def connect(
    transport: str, directory: Path, *options: str, log_file: Path | None = None
) -> AsyncIterator[Client[Any]]:
    """A client of a server of ``directory`` over ``transport`` ('stdio' or 'http')."""
    if transport == "stdio":
        stdio = StdioTransport(
            COMMAND[0],
            [*COMMAND[1:], "mcp", str(directory), "--embedder", "hashing", *options],
            env=ENV,
            keep_alive=False,
            log_file=log_file,
        )
        async with Client(stdio, timeout=START_S) as client:
            yield client
    else:
        with http_server(directory, *options) as (_process, url):
            async with Client(url, timeout=START_S) as client:
                yield client


def run(coroutine: Callable[[], Any]) -> Any:
    return asyncio.run(coroutine())


# --- the servers the reading tests share ---------------------------------------------------

Job = Callable[[Client[Any]], Awaitable[Any]]
"""What a reading test does with a connected client."""


@pytest.fixture(scope="module")
def shared_http(
    template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """One HTTP server of a copy of the template for the tests that only read: (process, its
    MCP URL, its memory directory). Each test connects a client of its own."""
    directory = tmp_path_factory.mktemp("shared-http") / "memory"
    shutil.copytree(template, directory)
    with http_server(directory) as (process, url):
        yield process, url, directory
        assert process.poll() is None, "the shared HTTP server stopped"


class StdioServer:
    """One stdio server and its client, in a thread with its own event loop, for the tests
    that only read: each hands it a job (a coroutine function of the client)."""

    def __init__(self, directory: Path) -> None:
        self._jobs: queue.Queue[tuple[Job, Future[Any]] | None] = queue.Queue()
        self._connected: Future[None] = Future()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(directory),))
        self._thread.start()
        self._connected.result()

    async def _serve(self, directory: Path) -> None:
        try:
            async with connect("stdio", directory) as client:
                self._connected.set_result(None)
                while (job := await asyncio.to_thread(self._jobs.get)) is not None:
                    work, answer = job
                    try:
                        answer.set_result(await work(client))
                    except Exception as exc:
                        answer.set_exception(exc)
        except Exception as exc:
            if not self._connected.done():
                self._connected.set_exception(exc)
            raise

    def ask(self, work: Job) -> Any:
        answer: Future[Any] = Future()
        self._jobs.put((work, answer))
        return answer.result()

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()


@pytest.fixture(scope="module")
def shared_stdio(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    directory = tmp_path_factory.mktemp("shared-stdio") / "memory"
    shutil.copytree(template, directory)
    server = StdioServer(directory)
    yield server
    server.close()


@pytest.fixture
def reader(transport: str, request: pytest.FixtureRequest) -> Callable[[Job], Any]:
    """Runs a job on the shared server of ``transport`` and answers what it returns."""
    if transport == "stdio":
        server: StdioServer = request.getfixturevalue("shared_stdio")
        return server.ask
    url = request.getfixturevalue("shared_http")[1]

    def ask(work: Job) -> Any:
        async def session() -> Any:
            async with Client(url, timeout=START_S) as client:
                return await work(client)

        return run(session)

    return ask


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def location(text: str) -> tuple[float, float]:
    found = LOCATION.search(text)
    assert found, text
    return float(found.group(1)), float(found.group(2))


TRANSPORTS = ["stdio", "http"]


# --- tools ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_tool_is_listed_with_its_one_definition_and_answers(
    transport: str, memory_dir: Path
) -> None:
    async def session() -> None:
        async with connect(transport, memory_dir) as client:
            tools = await client.list_tools()
            names = [tool.name for tool in tools]
            # The ten retrieval tools first; the capabilities' tools in the order their
            # capabilities registered (in this process, whichever test imported one first).
            assert names[: len(CORE_TOOLS)] == list(CORE_TOOLS)
            assert sorted(names) == sorted([*TOOL_SCHEMAS, *ACTION_SCHEMAS])
            assert set(names) == set(VALID_CALLS)
            for tool in tools:
                definition = ALL_SCHEMAS[tool.name]
                assert tool.inputSchema == definition["parameters"], tool.name
                assert tool.description == definition["description"], tool.name
                assert tool.annotations is not None
                assert tool.annotations.readOnlyHint is (tool.name not in ACTION_SCHEMAS)
            for name, arguments in VALID_CALLS.items():
                result = await client.call_tool(name, arguments, raise_on_error=False)
                answer = text_of(result)
                assert not result.is_error, f"{name}: {answer}"
                assert answer.strip() and not answer.startswith("Error"), name
                if name == "locate":
                    x, y = location(answer)
                    assert math.dist((x, y), (12.0, 9.0)) <= 1.0, answer
                    assert "Moved from" in answer, answer
                if name == "body_status":
                    assert "battery at 80 percent" in answer, answer
                if name == "store_specific_memory":
                    assert answer.startswith("Stored memory"), answer

    run(session)
    assert "the keys are in the blue bowl" in stored_notes(memory_dir)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_locate_takes_at_time_and_answers_where_the_thing_was_then(
    transport: str, reader: Callable[[Job], Any]
) -> None:
    async def session(client: Client[Any]) -> tuple[str, str, str]:
        tools = {tool.name: tool for tool in await client.list_tools()}
        assert "at_time" in tools["locate"].inputSchema["properties"]
        now = await client.call_tool("locate", {"concept": "red cup"})
        then = await client.call_tool("locate", {"concept": "red cup", "at_time": T + 600})
        words = await client.call_tool("locate", {"concept": "red cup", "at_time": "-3h"})
        return text_of(now), text_of(then), text_of(words)

    now, then, words = reader(session)
    assert math.dist(location(now), (12.0, 9.0)) <= 1.0, now
    assert math.dist(location(then), (1.1, 1.0)) <= 1.0, then
    assert math.dist(location(words), (1.1, 1.0)) <= 1.0, words


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_arguments_are_tool_errors_and_the_server_keeps_answering(
    transport: str, reader: Callable[[Job], Any]
) -> None:
    bad = [
        ("locate", {"concept": 5}, "argument 'concept'"),
        ("locate", {}, "missing required argument 'concept'"),
        ("semantic_search", {"query": "cup", "colour": "red"}, "unknown argument 'colour'"),
        ("spatial_query", {"x": "here", "y": 1.0}, "argument 'x'"),
        ("semantic_search", {"query": "cup", "n_results": 0}, "argument 'n_results'"),
        ("locate", {"concept": "cup", "at_time": "the day after never"}, "at_time"),
        ("temporal_query", {"time_after": True}, "time_after"),
        ("spatial_query", {"x": 1.0, "y": 1.0, "radius": -1.0}, "argument 'radius'"),
    ]

    async def session(client: Client[Any]) -> None:
        for name, arguments, expected in bad:
            result = await client.call_tool(name, arguments, raise_on_error=False)
            assert result.is_error, f"{name} {arguments}: {text_of(result)}"
            assert expected in text_of(result), text_of(result)
            # The server is still there and answers the next call.
            fine = await client.call_tool("locate", {"concept": "red cup"})
            assert not fine.is_error and text_of(fine).startswith("Location:")
        unknown = await client.call_tool("teleport", {}, raise_on_error=False)
        assert unknown.is_error, text_of(unknown)
        assert len(await client.list_tools()) == len(VALID_CALLS)

    reader(session)


def test_oversized_and_deeply_nested_requests_leave_the_http_server_answering(
    shared_http: tuple[subprocess.Popen[str], str, Path],
) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        f'"params": {{"name": "locate", "arguments": {{"concept": {nested}}}}}}}'
    )
    process, url, _directory = shared_http

    async def session() -> None:
        async with Client(url, timeout=START_S) as client:
            huge = await client.call_tool(
                "locate", {"concept": "a" * 2_000_000}, raise_on_error=False
            )
            assert huge.is_error and "the limit is" in text_of(huge), text_of(huge)
            deep = httpx.post(
                url,
                content=body,
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
                timeout=START_S,
            )
            assert deep.status_code >= 400, deep.text
            fine = await client.call_tool("locate", {"concept": "red cup"})
            assert text_of(fine).startswith("Location:")

    run(session)
    assert process.poll() is None


# --- read-only -----------------------------------------------------------------------------


def fingerprint(directory: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and directory under ``directory``: (size, mtime in ns, content hash)."""
    return {
        path.relative_to(directory).as_posix(): (
            path.stat().st_size if path.is_file() else 0,
            path.stat().st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir",
        )
        for path in sorted(directory.rglob("*"))
    }


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_read_only_server_lists_no_write_and_refuses_one(
    transport: str, memory_dir: Path
) -> None:
    before = fingerprint(memory_dir)

    async def session() -> None:
        async with connect(transport, memory_dir, "--read-only") as client:
            names = [tool.name for tool in await client.list_tools()]
            assert names[: len(CORE_TOOLS)] == list(CORE_TOOLS)
            assert sorted(names) == sorted(TOOL_SCHEMAS)
            for name in ACTION_SCHEMAS:
                result = await client.call_tool(name, VALID_CALLS[name], raise_on_error=False)
                assert result.is_error, text_of(result)
                assert "read-only" in text_of(result), text_of(result)
            for name in TOOL_SCHEMAS:
                result = await client.call_tool(name, VALID_CALLS[name], raise_on_error=False)
                assert not result.is_error, text_of(result)
            answer = await client.call_tool("locate", {"concept": "red cup"})
            assert text_of(answer).startswith("Location:")
            # The server holds the memory read-only, not only its tool list: another reader
            # opens it meanwhile (Kuzu keeps every process out of a memory held read-write).
            with SpatioTemporalMemory(
                str(memory_dir), embedding_provider=HashingEmbedder(384), read_only=True
            ) as reader:
                assert reader.locate("red cup") == text_of(answer)

    run(session)
    # Not a byte nor a time of any file changed: the session of every read tool wrote nothing.
    assert fingerprint(memory_dir) == before
    assert "blue bowl" not in stored_notes(memory_dir)


def test_a_read_only_server_of_no_memory_is_refused(tmp_path: Path) -> None:
    finished = subprocess.run(
        [*COMMAND, "mcp", str(tmp_path / "typo"), "--read-only", "--embedder", "hashing"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=START_S,
    )
    assert finished.returncode == 2, finished.stderr
    assert finished.stderr.startswith("emem-graph: error:"), finished.stderr
    assert not (tmp_path / "typo").exists()


# --- binding -------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "example.org", "[::]"])
def test_a_non_loopback_bind_is_refused_without_allow_remote(host: str, tmp_path: Path) -> None:
    finished = subprocess.run(
        [*COMMAND, "mcp", str(tmp_path / "memory"), "--http", f"{host}:0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=START_S,
    )
    assert finished.returncode == 2, finished.stderr
    assert "--allow-remote" in finished.stderr and "no authentication" in finished.stderr
    assert len(finished.stderr.strip().splitlines()) == 1, finished.stderr
    assert not (tmp_path / "memory").exists()  # refused before the memory is opened


def test_allow_remote_binds_and_warns(memory_dir: Path) -> None:
    process = start_http(memory_dir, "--allow-remote", host="0.0.0.0")
    assert process.stderr is not None
    log = ServerLog(process.stderr)
    try:
        url = log.wait_for(SERVING, START_S).group(1)
        assert url.startswith("http://0.0.0.0:"), url
        warnings = [line for line in log.lines if "warning:" in line]
        assert len(warnings) == 1 and "without authentication" in warnings[0], log.lines
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_S) == 0


def test_a_loopback_http_server_refuses_foreign_host_and_origin_headers(
    shared_http: tuple[subprocess.Popen[str], str, Path],
) -> None:
    """A web page the user visits cannot reach the memory through DNS rebinding."""
    initialize = INITIALIZE
    accept = JSON_OR_SSE
    url = shared_http[1]
    foreign_host = httpx.post(url, json=initialize, headers={**accept, "Host": "evil.example"})
    foreign_origin = httpx.post(
        url, json=initialize, headers={**accept, "Origin": "http://evil.example"}
    )
    local = httpx.post(url, json=initialize, headers=accept)
    assert foreign_host.status_code == 421, foreign_host.text
    assert foreign_origin.status_code == 403, foreign_origin.text
    assert local.status_code == 200, local.text


def test_a_busy_port_or_a_memory_in_use_is_one_error_line(
    shared_http: tuple[subprocess.Popen[str], str, Path], tmp_path: Path
) -> None:
    _process, url, memory_dir = shared_http
    port = url.rsplit(":", 1)[1].split("/")[0]
    attempts = {
        "busy port": [str(tmp_path / "other"), "--http", f"127.0.0.1:{port}"],
        "memory in use": [str(memory_dir), "--http", "127.0.0.1:0"],
    }
    for what, arguments in attempts.items():
        finished = subprocess.run(
            [*COMMAND, "mcp", *arguments, "--embedder", "hashing"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=ENV,
            timeout=START_S,
        )
        assert finished.returncode == 2, (what, finished.stderr)
        lines = finished.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("emem-graph: error:"), (what, lines)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "localhost", "[::1]"])
def test_loopback_addresses_need_no_flag(address: str) -> None:
    endpoint = parse_endpoint(f"{address}:8765")
    assert (endpoint.host, endpoint.port) == (address.strip("[]"), 8765)
    check_bind(endpoint.host, allow_remote=False)  # no error


@pytest.mark.parametrize(
    "text",
    ["127.0.0.1", "127.0.0.1:99999", ":8765", "127.0.0.1:http", "127.0.0.1:\u00b2", "[::1]:\u0668"],
)
def test_http_wants_host_colon_port(text: str) -> None:
    with pytest.raises(InvalidInputError, match="HOST:PORT"):
        parse_endpoint(text)


# --- sessions of clients that went away ----------------------------------------------------


def open_and_abandon(url: str) -> str:
    """What a client that crashes right after connecting leaves on the server: a session it
    initialized and never closes. Its id."""
    answer = httpx.post(url, json=INITIALIZE, headers=JSON_OR_SSE, timeout=START_S)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


def ping(url: str, session_id: str) -> int:
    """The HTTP status of a ping in session ``session_id``: 200 while the server holds it, 404
    once it is closed."""
    headers = {**JSON_OR_SSE, "mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}
    message = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return httpx.post(url, json=message, headers=headers, timeout=START_S).status_code


def test_sessions_abandoned_by_crashed_clients_stay_under_the_cap_and_a_new_client_is_answered(
    memory_dir: Path,
) -> None:
    """Twelve clients crash one after another, each leaving its session open, on a server that
    holds four: every one is still let in (no 503), each new session closing the one idle
    longest, and a well-behaved client that comes next is answered."""
    with http_server(memory_dir, "--max-sessions", "4") as (process, url):
        abandoned = [open_and_abandon(url) for _ in range(12)]

        async def session() -> list[int]:
            async with Client(url, timeout=START_S) as client:
                answer = await client.call_tool("locate", {"concept": "red cup"})
                assert text_of(answer).startswith("Location:")
                return [ping(url, session_id) for session_id in abandoned]

        held = run(session)
        assert process.poll() is None
    # The client's own session made room too: the three newest abandoned ones are left.
    assert held == [404] * 9 + [200] * 3


def test_a_session_with_no_request_for_the_idle_time_is_closed(memory_dir: Path) -> None:
    """A session left open expires after --session-idle; a connected client (its GET stream
    keeps a request in flight) does not, however long it waits between calls."""
    with http_server(memory_dir, "--session-idle", "2") as (_process, url):

        async def session() -> tuple[int, int]:
            async with Client(url, timeout=START_S) as client:
                abandoned = open_and_abandon(url)
                fresh = ping(url, abandoned)
                await asyncio.sleep(4)
                stale = ping(url, abandoned)
                answer = await client.call_tool("locate", {"concept": "red cup"})
                assert text_of(answer).startswith("Location:")
                return fresh, stale

        assert run(session) == (200, 404)


@pytest.mark.parametrize("limits", [{"idle_s": 0.0}, {"idle_s": math.inf}, {"max_sessions": 0}])
def test_session_limits_refuse_a_bound_that_bounds_nothing(limits: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match=r"--session-idle|--max-sessions"):
        SessionLimits(**limits)


# --- stopping ------------------------------------------------------------------------------


def test_sigterm_stops_an_http_server_with_status_0_and_keeps_what_was_stored(
    memory_dir: Path,
) -> None:
    with http_server(memory_dir) as (process, url):

        async def session() -> str:
            async with Client(url, timeout=START_S) as client:
                result = await client.call_tool(
                    "store_specific_memory", VALID_CALLS["store_specific_memory"]
                )
                return text_of(result)

        assert run(session).startswith("Stored memory")
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_S) == 0
        assert time.monotonic() - started < STOP_S
    assert "the keys are in the blue bowl" in stored_notes(memory_dir)


def test_every_note_acknowledged_over_http_survives_a_kill_9_right_after_the_answer(
    memory_dir: Path,
) -> None:
    notes = [f"spare key {i} is in the blue bowl" for i in range(5)]
    answers: list[str] = []
    with http_server(memory_dir) as (process, url):

        async def session() -> None:
            async with Client(url, timeout=START_S) as client:
                for note in notes:
                    result = await client.call_tool(
                        "store_specific_memory", {"content": note, "x": 2.0, "y": 2.0}
                    )
                    answers.append(text_of(result))
                process.kill()  # SIGKILL as soon as the last answer is in
                process.wait(STOP_S)

        with contextlib.suppress(Exception):  # the client's goodbye finds no server
            run(session)
        assert process.returncode == -signal.SIGKILL
    assert len(answers) == len(notes), answers
    assert all(answer.startswith("Stored memory ") for answer in answers), answers
    acknowledged = {answer.split()[2]: note for answer, note in zip(answers, notes, strict=True)}
    with SpatioTemporalMemory(str(memory_dir), embedding_provider=HashingEmbedder(384)) as memory:
        found = {note_id: memory.store.get_observation(note_id) for note_id in acknowledged}
    assert {note_id: o and o.text for note_id, o in found.items()} == acknowledged


def test_sigterm_stops_a_stdio_server_while_its_client_is_connected(
    memory_dir: Path, tmp_path: Path
) -> None:
    log_file = tmp_path / "server.log"

    async def session() -> None:
        async with connect("stdio", memory_dir, log_file=log_file) as client:
            result = await client.call_tool(
                "store_specific_memory", VALID_CALLS["store_specific_memory"]
            )
            assert text_of(result).startswith("Stored memory")
            found = SERVING.search(log_file.read_text(encoding="utf-8"))
            assert found, log_file.read_text(encoding="utf-8")
            os.kill(int(found.group(2)), signal.SIGTERM)
            deadline = time.monotonic() + STOP_S
            while "stopped" not in log_file.read_text(encoding="utf-8"):
                assert time.monotonic() < deadline, log_file.read_text(encoding="utf-8")
                await asyncio.sleep(0.1)

    run(session)
    assert "the memory is flushed and closed" in log_file.read_text(encoding="utf-8")
    assert "the keys are in the blue bowl" in stored_notes(memory_dir)


@pytest.mark.parametrize("how", ["sigterm", "stdin closed"])
def test_a_stdio_server_exits_0_on_sigterm_or_when_its_input_closes(
    how: str, memory_dir: Path
) -> None:
    process = subprocess.Popen(
        [*COMMAND, "mcp", str(memory_dir), "--embedder", "hashing"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert process.stderr is not None and process.stdin is not None
    log = ServerLog(process.stderr)
    try:
        log.wait_for(SERVING, START_S)
        started = time.monotonic()
        if how == "sigterm":
            process.send_signal(signal.SIGTERM)
        else:
            process.stdin.close()
        assert process.wait(STOP_S) == 0, log.text
        assert time.monotonic() - started < STOP_S
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "flushed and closed" in log.text
    assert process.stdout is not None and process.stdout.read() == ""  # nothing but MCP
