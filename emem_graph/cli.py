"""The ``emem-graph`` command: argparse subcommands, each a thin layer over a library function."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from emem_graph.errors import EmemGraphError
from emem_graph.ingest.embeddings import EmbeddingProvider


def _embedder(name: str) -> EmbeddingProvider:
    from emem_graph.ingest.embeddings import HashingEmbedder, SentenceTransformerEmbedder

    if name == "hashing":
        return HashingEmbedder(384)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEmbedder(name)


def _cmd_demo(args: argparse.Namespace) -> int:
    from emem_graph.demo import run_demo

    run_demo(Path(args.directory), embedder=_embedder(args.embedder), rounds=args.rounds)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from emem_graph.bench import main as bench_main

    return bench_main(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``emem-graph``."""
    parser = argparse.ArgumentParser(
        prog="emem-graph", description="Spatio-temporal graph memory for robots."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="remember a simulated patrol and print what it knows")
    demo.add_argument("directory", nargs="?", default="demo-memory", help="memory directory")
    demo.add_argument(
        "--embedder",
        default="all-MiniLM-L6-v2",
        help="sentence-transformers model name or path, or 'hashing' (no model)",
    )
    demo.add_argument("--rounds", type=int, default=2, help="patrol rounds (default 2)")
    demo.set_defaults(run=_cmd_demo)

    bench = commands.add_parser("bench", help="measure ingest throughput against the floor")
    bench.add_argument("--n", type=int, default=100_000, help="observations (default 100k)")
    bench.add_argument("--out", default="bench-memory", help="scratch directory")
    bench.add_argument(
        "--embedder",
        default="none",
        help="'none' (vectors given), 'hashing', or a sentence-transformers model",
    )
    bench.add_argument("--batch-size", type=int, default=1000, help="flush batch size")
    bench.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``emem-graph`` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.run(args))
    except EmemGraphError as exc:
        print(f"emem-graph: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
