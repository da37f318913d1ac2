"""The moves-eval command: objects moved, swapped, removed and brought back in a patrolled
house; locate's error to the true current position, wrong merges and missed moves."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emem_graph.cli.common import make_embedder


def add_moves_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``moves-eval``."""
    moves_eval = commands.add_parser(
        "moves-eval",
        help="evaluate objects that move: locate's error to where things are now, wrong merges, "
        "missed moves",
        description="A robot patrols a house for hours while objects are moved, swapped, "
        "removed and brought back; after every round locate(name) is asked for every object "
        "in the house. Reports the share of answers within 1 m of the true current position "
        "(p50, p90), the entities holding sightings of two objects, the moves the memory "
        "missed (a new entity while the old one still claims the old place) and, where the "
        "memory keeps position histories, whether they match the places each object was "
        "seen at.",
    )
    moves_eval.add_argument(
        "--quick", action="store_true", help="10 rounds instead of 24 (under a minute)"
    )
    moves_eval.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    moves_eval.add_argument(
        "--seed", type=int, default=0, help="the scenario's seed (events, noise, misses)"
    )
    moves_eval.add_argument(
        "--dir",
        metavar="DIR",
        help="keep the memory in DIR (to explore it afterwards) instead of a temporary directory",
    )
    moves_eval.add_argument(
        "--embedder", default="all-MiniLM-L6-v2", help="model name or path, or 'hashing'"
    )
    moves_eval.set_defaults(run=_cmd_moves_eval)


def _cmd_moves_eval(args: argparse.Namespace) -> int:
    from emem_graph.evals import moves_eval

    embedder = make_embedder(args.embedder)
    result = moves_eval.run(
        embedder, quick=args.quick, progress=not args.quiet, seed=args.seed, directory=args.dir
    )
    result["embedder"] = args.embedder
    print("\n".join(moves_eval.describe(result)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
