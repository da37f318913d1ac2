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
    import json

    from emem_graph.bench import bench_ingest

    embedder = None if args.model == "none" else _embedder(args.model)
    result = bench_ingest(
        args.n, Path(args.out), embedder, args.batch_size, model_n=args.model_n, keep=args.keep
    )
    print(json.dumps(result, indent=2))
    return 0


# --- cypher / shell / query: _cmd_ functions above this line (emem_graph.explore.cypher) ------

# --- export / stats: _cmd_ functions above this line (emem_graph.explore.export, .stats) ----

# --- map: _cmd_ functions above this line (emem_graph.explore.mapping) ----------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``emem-graph``."""
    parser = argparse.ArgumentParser(
        prog="emem-graph", description="Spatio-temporal graph memory for robots."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars (for scripts and logs)"
    )
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

    bench = commands.add_parser(
        "bench", help="ingest throughput against the floor of this stack, same run"
    )
    bench.add_argument("--n", type=int, default=100_000, help="observations (default 100k)")
    bench.add_argument("--out", default="bench-memory", help="scratch directory")
    bench.add_argument("--batch-size", type=int, default=1000, help="flush batch size")
    bench.add_argument(
        "--model",
        default="none",
        help="also ingest through this embedder: a sentence-transformers model, or 'hashing'",
    )
    bench.add_argument("--model-n", type=int, default=None, help="observations for the model run")
    bench.add_argument("--keep", action="store_true", help="keep the scratch databases")
    bench.set_defaults(run=_cmd_bench)

    # --- cypher / shell / query parsers below this line ---------------------------------------

    # --- export / stats parsers below this line -----------------------------------------------

    # --- map parser below this line -----------------------------------------------------------

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
