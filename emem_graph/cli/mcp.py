"""The mcp command: serve a memory's tools to MCP clients (stdio or streamable HTTP)."""

from __future__ import annotations

import argparse
import os
import sys

from emem_graph.cli.common import make_embedder
from emem_graph.mcp_server import MAX_SESSIONS, SESSION_IDLE_S


def add_mcp_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``mcp``."""
    mcp = commands.add_parser(
        "mcp",
        help="serve the memory's tools over the Model Context Protocol (stdio or HTTP)",
        description="Serve the retrieval tools of the memory in DIR, with store_specific_memory "
        "and start/end_episode unless --read-only, to an MCP client (an LLM agent, a desktop "
        "assistant). Over stdio by default (the client starts this command); with --http "
        "HOST:PORT over streamable HTTP at http://HOST:PORT/mcp. Stops when the client closes "
        "stdin, or on SIGTERM / Ctrl-C, after flushing the memory.",
    )
    mcp.add_argument("directory", metavar="DIR", help="memory directory")
    mcp.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8765; port 0 picks a free one) "
        "instead of stdio",
    )
    mcp.add_argument(
        "--read-only",
        action="store_true",
        help="open the memory read-only (the graph engine refuses any write; other read-only "
        "readers may open it too) and offer only the tools that cannot write (no "
        "store_specific_memory, start_episode, end_episode); a call to one is refused; DIR "
        "must hold a memory already",
    )
    mcp.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on an address other than loopback (there is no authentication: "
        "anyone who can reach it can use the memory)",
    )
    mcp.add_argument(
        "--session-idle",
        type=float,
        default=SESSION_IDLE_S,
        metavar="SECONDS",
        help="close an HTTP session with no request in flight for this long (a client that "
        f"went away without closing it; default {SESSION_IDLE_S:.0f})",
    )
    mcp.add_argument(
        "--max-sessions",
        type=int,
        default=MAX_SESSIONS,
        metavar="N",
        help="hold at most N HTTP sessions; a new one closes the session idle longest "
        f"(default {MAX_SESSIONS})",
    )
    mcp.add_argument(
        "--embedder",
        default="all-MiniLM-L6-v2",
        help="the memory's embedder: model name or path, or 'hashing' (for memories built with it)",
    )
    mcp.set_defaults(run=_cmd_mcp)


def _cmd_mcp(args: argparse.Namespace) -> int:
    from emem_graph.mcp_server import (
        Endpoint,
        SessionLimits,
        build_server,
        check_bind,
        is_loopback,
        open_socket,
        parse_endpoint,
        serve,
    )

    endpoint = parse_endpoint(args.http) if args.http else None
    if endpoint is not None:
        check_bind(endpoint.host, args.allow_remote)
    sessions = SessionLimits(idle_s=args.session_idle, max_sessions=args.max_sessions)
    from emem_graph.memory import SpatioTemporalMemory

    # The socket first: a busy port or a refused address fails before the memory is opened.
    sock = open_socket(endpoint) if endpoint is not None else None
    try:
        # --read-only opens the memory read-only: the graph engine itself refuses writes,
        # not only the tool list (and a directory holding no memory is refused, none made).
        memory = SpatioTemporalMemory(
            db_path=args.directory,
            embedding_provider=make_embedder(args.embedder),
            read_only=args.read_only,
        )
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    mode = "read-only" if args.read_only else "read-write"
    try:
        server = build_server(memory, read_only=args.read_only)
        where = "on stdio"
        if sock is not None:
            where = "at " + Endpoint(*sock.getsockname()[:2]).url
            if endpoint is not None and not is_loopback(endpoint.host):
                print(
                    f"emem-graph mcp: warning: serving {where[3:]} without authentication; "
                    "anyone who can reach this address can use the memory",
                    file=sys.stderr,
                )

        def ready() -> None:
            print(
                f"emem-graph mcp: serving {args.directory} ({mode}) {where}, pid {os.getpid()}",
                file=sys.stderr,
                flush=True,
            )

        ended = serve(
            server,
            "stdio" if sock is None else "http",
            sock=sock,
            ready=ready,
            sessions=sessions,
        )
    finally:
        if sock is not None:
            sock.close()
        memory.close()
    closed = "closed" if args.read_only else "flushed and closed"
    print(f"emem-graph mcp: stopped; the memory is {closed}", file=sys.stderr)
    if not ended:
        # A stdio server's reader is blocked on the client's open input and holds stdin's lock:
        # the interpreter's exit would abort on it. Everything is closed; leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
