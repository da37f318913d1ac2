"""The migrate command: copy a memory to another graph engine (kuzu <-> ladybug)."""

from __future__ import annotations

import argparse
from pathlib import Path

from emem_graph.storage.graph_engine import ENGINES


def add_migrate_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``migrate``."""
    migrate = commands.add_parser(
        "migrate",
        help="copy a memory to another graph engine (kuzu or ladybug), checked",
        description="Copy the memory in SRC to the new directory DST on another graph engine "
        "(the engines' files are incompatible both ways): the graph through Parquet, each "
        "engine in its own process; the vectors and other files as they are. The copy must "
        "have the same rows per table, the same vector files and the same answers to a sample "
        "of tools, or DST is not created. SRC is only read (a writer cannot open it meanwhile).",
    )
    migrate.add_argument("source", metavar="SRC", help="the memory's directory (only read)")
    migrate.add_argument("destination", metavar="DST", help="a new directory (must not exist)")
    migrate.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="the engine of the copy (default: the one SRC is not on)",
    )
    migrate.set_defaults(run=_cmd_migrate)


def _cmd_migrate(args: argparse.Namespace) -> int:
    from emem_graph.migrate import migrate

    report = migrate(Path(args.source), Path(args.destination), args.engine)
    print(f"migrated {args.source} -> {args.destination}")
    print("\n".join(report.lines()))
    return 0
