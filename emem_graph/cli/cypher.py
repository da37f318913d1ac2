"""The cypher, shell and query commands: read-only Cypher on a memory (or over ROS)."""

from __future__ import annotations

import argparse
import sys

from emem_graph.errors import InvalidInputError


def add_cypher_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``cypher``, ``shell`` and ``query``."""
    cypher = commands.add_parser("cypher", help="run one read-only Cypher statement on a memory")
    cypher.add_argument("directory", help="memory directory (left out with --ros)")
    cypher.add_argument("cypher", nargs="?", help="one Cypher statement (writes are refused)")
    _add_query_options(cypher)
    cypher.add_argument(
        "--ros",
        action="store_true",
        help="ask the running ROS bridge's Query service instead of opening DIR (needs rclpy)",
    )
    cypher.add_argument(
        "--node", default="emem_graph", help="the bridge's node name (default emem_graph)"
    )
    cypher.set_defaults(run=_cmd_cypher)

    shell = commands.add_parser("shell", help="interactive read-only Cypher shell on a memory")
    shell.add_argument("directory", help="memory directory")
    _add_query_options(shell, params=False)
    shell.set_defaults(run=_cmd_shell)

    query = commands.add_parser("query", help="run a named query of queries/ (read-only)")
    query.add_argument("directory", nargs="?", help="memory directory")
    query.add_argument("name", nargs="?", help="the query's name (see --list)")
    query.add_argument(
        "--list", action="store_true", help="list the named queries with their parameters"
    )
    query.add_argument(
        "--all",
        action="store_true",
        help="with --list: also the store's internal queries (writes, export steps, plumbing)",
    )
    _add_query_options(query)
    query.set_defaults(run=_cmd_query)


def _add_query_options(parser: argparse.ArgumentParser, *, params: bool = True) -> None:
    from emem_graph.explore.cypher import (
        DEFAULT_LIMIT,
        DEFAULT_MAX_MEMORY_MB,
        DEFAULT_TIMEOUT_S,
        FORMATS,
    )

    if params:
        parser.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help='a $parameter; VALUE is read as JSON when it is JSON (5, true, [1,2], "007")',
        )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help=f"most rows (default {DEFAULT_LIMIT})"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop a statement after this long (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--max-memory-mb",
        type=int,
        default=DEFAULT_MAX_MEMORY_MB,
        metavar="MB",
        help="stop a statement whose sandboxed process passes this much memory "
        f"(default {DEFAULT_MAX_MEMORY_MB})",
    )


def _print_rows(text: str, *, truncated: bool) -> None:
    print(text)
    if truncated:
        print("emem-graph: more rows than --limit; only the first are shown", file=sys.stderr)


def _cmd_cypher(args: argparse.Namespace) -> int:
    from emem_graph.explore.cypher import format_result, parse_params, run_cypher

    params = parse_params(args.param)
    if args.ros:
        from ros_bridge.client import query_over_ros

        # `cypher --ros "MATCH ..."`: the one positional is the statement (no directory).
        statement = args.directory if args.cypher is None else args.cypher
        result = query_over_ros(
            statement, params, node=args.node, limit=args.limit, timeout_s=args.timeout
        )
    elif args.cypher is None:
        raise InvalidInputError("give the memory directory and a statement: cypher DIR 'MATCH ...'")
    else:
        result = run_cypher(
            args.directory,
            args.cypher,
            params,
            args.limit,
            args.timeout,
            max_memory_mb=args.max_memory_mb,
        )
    _print_rows(
        format_result(result, args.format), truncated=result.truncated and args.format != "table"
    )
    return 0


def _cmd_shell(args: argparse.Namespace) -> int:
    from emem_graph.explore.shell import shell

    shell(
        args.directory,
        limit=args.limit,
        timeout_s=args.timeout,
        output=args.format,
        max_memory_mb=args.max_memory_mb,
    )
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    from emem_graph.explore.cypher import (
        format_named_queries,
        format_result,
        list_named_queries,
        parse_params,
        run_named_query,
    )

    if args.list:
        queries = list_named_queries(include_internal=args.all)
        print(format_named_queries(queries))
        if not args.all:
            hidden = len(list_named_queries()) - len(queries)
            print(f"({len(queries)} queries; --all also lists {hidden} internal ones)")
        return 0
    if args.directory is None or args.name is None:
        raise InvalidInputError("give the memory directory and a query name (or --list)")
    params = parse_params(args.param)
    result = run_named_query(
        args.directory,
        args.name,
        params,
        args.limit,
        args.timeout,
        max_memory_mb=args.max_memory_mb,
    )
    _print_rows(
        format_result(result, args.format), truncated=result.truncated and args.format != "table"
    )
    return 0
