"""The ``emem-graph`` command: argparse subcommands, each a thin layer over a library function.

Each module of this package holds one group of commands: the function that adds their parsers
and the handlers they run. This module puts the groups together, reads the command line and turns
an error into one line and an exit status.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from emem_graph.cli.areas import add_areas_commands
from emem_graph.cli.cypher import add_cypher_commands
from emem_graph.cli.demo import add_demo_commands
from emem_graph.cli.explore import add_explore_commands
from emem_graph.cli.fleet import add_fleet_commands
from emem_graph.cli.mcp import add_mcp_commands
from emem_graph.cli.migrate import add_migrate_commands
from emem_graph.cli.moves import add_moves_commands
from emem_graph.cli.profile import add_profile_commands
from emem_graph.cli.retrieval import add_retrieval_commands
from emem_graph.cli.ros import add_ros_commands
from emem_graph.cli.spatial import add_spatial_commands
from emem_graph.errors import EmemGraphError
from emem_graph.limits import check_cli_arguments


class _Parser(argparse.ArgumentParser):
    """argparse with a suggestion for a mistyped command (``qurey`` -> did you mean query?);
    its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        found = _INVALID_CHOICE.search(message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            close = difflib.get_close_matches(found.group(1), choices, n=3, cutoff=0.6)
            if close:
                message += f"; did you mean {' or '.join(close)}?"
        super().error(message)


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``emem-graph``."""
    parser: argparse.ArgumentParser = _Parser(
        prog="emem-graph", description="Spatio-temporal graph memory for robots."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars (they are only drawn on a terminal anyway)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_demo_commands(commands)
    add_cypher_commands(commands)
    add_explore_commands(commands)
    add_ros_commands(commands)
    add_spatial_commands(commands)
    add_areas_commands(commands)
    add_profile_commands(commands)
    add_retrieval_commands(commands)
    add_moves_commands(commands)
    add_mcp_commands(commands)
    add_migrate_commands(commands)
    add_fleet_commands(commands)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand's ``--help`` a description line: its own, or the one-line help
    the command list shows for it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if not sub.description and helps.get(name):
                    text = str(helps[name])
                    sub.description = text[0].upper() + text[1:] + "."
                _describe(sub)


TIME_OPTIONS = ("--after", "--before")
_RELATIVE_TIME = re.compile(r"-\d")


def _join_negative_times(argv: Sequence[str]) -> list[str]:
    """``--after -10m`` -> ``--after=-10m``: argparse would take ``-10m`` for an option."""
    joined: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        if args[i] in TIME_OPTIONS and i + 1 < len(args) and _RELATIVE_TIME.match(args[i + 1]):
            joined.append(f"{args[i]}={args[i + 1]}")
            i += 2
        else:
            joined.append(args[i])
            i += 1
    return joined


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``emem-graph`` console script."""
    argv = _join_negative_times(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    # Progress bars only on a terminal: a log or a pipe gets the results, not bar redraws.
    args.quiet = args.quiet or not sys.stderr.isatty()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        check_cli_arguments(vars(args))
        return int(args.run(args))
    except EmemGraphError as exc:
        print(f"emem-graph: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except (RecursionError, OverflowError, MemoryError, UnicodeError) as exc:
        # An input the bounds (limits.py) did not foresee: one line, never a traceback.
        what = "too deeply nested" if isinstance(exc, RecursionError) else "too large"
        if isinstance(exc, UnicodeError):
            what = "not valid text"
        print(
            f"emem-graph: error: an input is {what} ({type(exc).__name__}: "
            f"{_one_line(str(exc))[:200]}); make it smaller or simpler",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:
        # The reader went away (`emem-graph query --list | head`): stop quietly, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        # A path that cannot be read or written (permissions, a full disk): one line.
        print(f"emem-graph: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2


def _one_line(message: str) -> str:
    return " ".join(message.split())
