"""The fleet commands: push a robot's memory to a fleet location, ask the fleet, serve it."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from emem_graph.cli.common import make_embedder

if TYPE_CHECKING:
    from emem_graph.fleet import FleetLocation, FleetMemory


def add_fleet_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``fleet push``, ``fleet ask``, ``fleet replica``, ``fleet compact`` and ``fleet
    serve``."""
    fleet = commands.add_parser(
        "fleet",
        help="several robots' memories in one shared location (S3 or a shared disk)",
        description="Push robots' memories to a fleet location (s3://bucket/prefix with the "
        "AWS_* environment variables or the options below, file:///path or a path) and ask "
        "them together (docs/fleet.md).",
    )
    groups = fleet.add_subparsers(dest="fleet_command", required=True)

    push = groups.add_parser(
        "push",
        help="send what changed in a robot's memory since its last push",
        description="Send the rows new or changed in the memory in DIR since ROBOT's last push "
        "to URI: vectors into the fleet's shared LanceDB table, graph rows as Parquet, "
        "positions in the fleet frame. DIR is opened read-only. Pushing again with nothing "
        "changed sends nothing; a push cut before its end leaves nothing visible, and the next "
        "one completes it.",
    )
    push.add_argument("directory", metavar="DIR", help="the robot's memory directory (only read)")
    push.add_argument("uri", metavar="URI", help="the fleet: s3://bucket/prefix, file:// or path")
    push.add_argument("--robot", required=True, help="the robot's name in the fleet")
    push.add_argument(
        "--frame",
        metavar="X,Y,YAW",
        help="the robot's map frame in the fleet frame (metres, metres, radians); default: the "
        "last push's (identity for a first push)",
    )
    _add_s3_options(push)
    push.set_defaults(run=_cmd_push)

    ask = groups.add_parser(
        "ask",
        help="run one fleet tool (semantic_search, locate, ...) and print its answer",
        description="Ask the fleet at URI one retrieval tool with JSON arguments, e.g. "
        '`emem-graph fleet ask URI locate \'{"concept": "red toolbox"}\'`.',
    )
    ask.add_argument("uri", metavar="URI", help="the fleet")
    ask.add_argument("tool", help="the tool's name")
    ask.add_argument("arguments", nargs="?", default="{}", help="its arguments as JSON")
    ask.add_argument(
        "--embedder", default="all-MiniLM-L6-v2", help="the robots' embedder, or 'hashing'"
    )
    _add_s3_options(ask)
    ask.set_defaults(run=_cmd_ask)

    replica = groups.add_parser(
        "replica",
        help="build or update a read-only graph replica of the fleet for Cypher (cypher / "
        "shell DIR)",
        description="Build in the new directory DIR a graph holding every robot's committed "
        "graph rows (positions in the fleet frame), with a Robot node per robot and a "
        "REMEMBERED_BY edge from each observation, gist, entity and episode to its robot; "
        "query it with `emem-graph cypher DIR` or `shell DIR`. Run it again on the same DIR to "
        "bring the replica up to the robots' later pushes: only the rows they changed are "
        "written (it is rebuilt whole when most rows changed, or after an update was cut).",
    )
    replica.add_argument("uri", metavar="URI", help="the fleet")
    replica.add_argument(
        "directory", metavar="DIR", help="a new directory, or a replica of the same fleet"
    )
    _add_s3_options(replica)
    replica.set_defaults(run=_cmd_replica)

    compact = groups.add_parser(
        "compact",
        help="merge the fragments of the fleet's shared table and index its vectors and filter "
        "columns (from one place, e.g. nightly)",
        description="Merge the data fragments every push adds to the fleet's shared LanceDB "
        "table (LanceDB's optimize), so that a fleet query reads fewer objects, and once the "
        "table holds 50,000 rows build (or rebuild, when a tenth of the rows are outside it) "
        "the ANN index of its vectors and, the first time, the scalar indexes of the columns "
        "searches filter on (x, y, t, push, robot, kind). Run it from one place; pushes may go "
        "on meanwhile "
        "(LanceDB retries a commit that lost a race). Files of older table versions stay for "
        "LanceDB's default retention.",
    )
    compact.add_argument("uri", metavar="URI", help="the fleet")
    _add_s3_options(compact)
    compact.set_defaults(run=_cmd_compact)

    serve = groups.add_parser(
        "serve",
        help="serve the fleet's tools over MCP (stdio, or HTTP on loopback)",
        description="Serve the fleet's read-only retrieval tools to an MCP client, over stdio "
        "or with --http HOST:PORT over streamable HTTP (loopback unless --allow-remote).",
    )
    serve.add_argument("uri", metavar="URI", help="the fleet")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP on HOST:PORT")
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on an address other than loopback (no authentication)",
    )
    serve.add_argument(
        "--embedder", default="all-MiniLM-L6-v2", help="the robots' embedder, or 'hashing'"
    )
    _add_s3_options(serve)
    serve.set_defaults(run=_cmd_serve)


def _add_s3_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("object storage (each defaults to its AWS_* variable)")
    group.add_argument("--endpoint-url", help="S3 endpoint, e.g. http://127.0.0.1:9000 (MinIO)")
    group.add_argument("--region", help="AWS region (default us-east-1)")
    group.add_argument(
        "--allow-http", action="store_true", default=None, help="allow a plain-HTTP endpoint"
    )


def _location(args: argparse.Namespace) -> FleetLocation:
    from emem_graph.fleet.location import FleetLocation, S3Settings

    settings = S3Settings(
        endpoint_url=args.endpoint_url, region=args.region, allow_http=args.allow_http
    )
    return FleetLocation(args.uri, settings)


def _cmd_push(args: argparse.Namespace) -> int:
    from emem_graph.fleet import Frame, push_memory

    frame = Frame.parse(args.frame) if args.frame else None
    report = push_memory(args.directory, _location(args), args.robot, frame=frame)
    print(report.describe())
    return 0


def _fleet(args: argparse.Namespace) -> FleetMemory:
    from emem_graph.fleet import FleetMemory

    return FleetMemory(_location(args), embedding_provider=make_embedder(args.embedder))


def _cmd_ask(args: argparse.Namespace) -> int:
    fleet = _fleet(args)
    answer = fleet.dispatch_tool_call(args.tool, args.arguments)
    print(answer)
    return 1 if answer.startswith("Error: ") else 0


def _cmd_replica(args: argparse.Namespace) -> int:
    from emem_graph.fleet.replica_update import replicate

    print(replicate(_location(args), args.directory).describe())
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    from emem_graph.fleet.shared_table import SharedTable

    table = SharedTable(_location(args))
    before, after = table.compact()
    print(f"fleet table compacted: {before} fragments -> {after}")
    indexed = table.indexed_rows()
    if indexed:
        print(f"vector index over {indexed} of {table.count()} rows")
    columns = table.index_columns()
    if columns:
        print(f"scalar indexes on {', '.join(columns)}")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from emem_graph.mcp_server import (
        Endpoint,
        build_server,
        check_bind,
        open_socket,
        parse_endpoint,
        serve,
    )

    endpoint = parse_endpoint(args.http) if args.http else None
    if endpoint is not None:
        check_bind(endpoint.host, args.allow_remote)
    fleet = _fleet(args)
    sock = open_socket(endpoint) if endpoint is not None else None
    try:
        server = build_server(
            fleet,
            read_only=True,
            instructions="A fleet of robots' spatio-temporal memories: what each robot "
            "perceived, where (in the fleet frame) and when. Every answer line names its robot.",
        )
        where = "on stdio" if sock is None else "at " + Endpoint(*sock.getsockname()[:2]).url

        def ready() -> None:
            print(
                f"emem-graph fleet serve: serving {args.uri} {where}, pid {os.getpid()}",
                file=sys.stderr,
                flush=True,
            )

        ended = serve(server, "stdio" if sock is None else "http", sock=sock, ready=ready)
    finally:
        if sock is not None:
            sock.close()
    print("emem-graph fleet serve: stopped", file=sys.stderr)
    if not ended:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
