"""The demo and bench commands: a simulated patrol remembered, and the benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from emem_graph.cli.common import make_embedder
from emem_graph.evals.bench import command as bench_command


def add_demo_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``demo`` and ``bench``."""
    demo = commands.add_parser("demo", help="remember a simulated patrol and print what it knows")
    demo.add_argument("directory", nargs="?", default="demo-memory", help="memory directory")
    demo.add_argument(
        "--embedder",
        default="all-MiniLM-L6-v2",
        help="sentence-transformers model name or path, or 'hashing' (no model)",
    )
    demo.add_argument("--rounds", type=int, default=2, help="patrol rounds (default 2)")
    demo.add_argument(
        "--from-bag",
        action="store_true",
        help="record the patrol as a ROS bag and replay it through the ROS bridge's pipeline",
    )
    demo.set_defaults(run=_cmd_demo)

    bench = commands.add_parser("bench", help=bench_command.HELP)
    bench_command.add_arguments(bench)
    bench.set_defaults(run=_cmd_bench)


def _cmd_demo(args: argparse.Namespace) -> int:
    from emem_graph.evals.demo import run_demo

    run_demo(
        Path(args.directory),
        embedder=make_embedder(args.embedder),
        rounds=args.rounds,
        progress=not args.quiet,
        from_bag=args.from_bag,
    )
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    return bench_command.run_command(args, make_embedder)
