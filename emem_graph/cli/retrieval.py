"""The retrieval-eval command: retrieval quality on hand-written evaluation sets, every section
reported for three rankers (a plain BM25, the dense memory, the hybrid memory) in one run."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from emem_graph.cli.common import make_embedder

SECTIONS: list[tuple[str, str]] = [
    ("requests", "emem_graph.evals.retrieval_eval"),
    ("dialogue", "emem_graph.evals.dialogue"),
    ("locate", "emem_graph.evals.locate_eval"),
]
"""(name, module) of every evaluation the command runs, in order; each module has
``run(embedder, *, quick, progress) -> dict`` and ``describe(result) -> list[str]``."""


def add_retrieval_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``retrieval-eval``."""
    names = [name for name, _module in SECTIONS]
    retrieval_eval = commands.add_parser(
        "retrieval-eval",
        help="evaluate retrieval: paraphrased requests among near-duplicate memories, a long "
        "dialogue history, locate's error; BM25 vs dense vs hybrid",
        description="Store hand-written memories in new memories and ask questions with known "
        "answers through the public tools. requests: R@1 / R@5 of paraphrased, word-sharing, "
        "two-part and time-word requests among near-duplicates; dialogue: evidence turns of "
        "two weeks of conversation in the top 5 / 10; locate: the distance of locate's answer "
        "to each object. Each for a plain BM25, the dense memory and the hybrid memory where "
        "it applies, with latency and whether a second run gives the same rankings. Sections: "
        f"{', '.join(names)}.",
    )
    retrieval_eval.add_argument(
        "--quick", action="store_true", help="a small subset of every section (under a minute)"
    )
    retrieval_eval.add_argument(
        "--json", metavar="FILE", help="also write every section's figures to FILE as JSON"
    )
    retrieval_eval.add_argument(
        "--only", nargs="+", metavar="NAME", choices=names, help="run only these sections"
    )
    retrieval_eval.add_argument(
        "--embedder", default="all-MiniLM-L6-v2", help="model name or path, or 'hashing'"
    )
    retrieval_eval.set_defaults(run=_cmd_retrieval_eval)


def _cmd_retrieval_eval(args: argparse.Namespace) -> int:
    embedder = make_embedder(args.embedder)
    results: dict[str, Any] = {}
    for name, module_name in SECTIONS:
        if args.only and name not in args.only:
            continue
        module = importlib.import_module(module_name)
        result = module.run(embedder, quick=args.quick, progress=not args.quiet)
        if "embedder" in result:
            result["embedder"] = args.embedder  # the name given, not the embedder's class
        results[name] = result
        if len(results) > 1:
            print()
        print("\n".join(module.describe(result)))
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
