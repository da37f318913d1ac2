"""The demo and bench commands: a simulated patrol remembered, and the benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from emem_graph.cli.common import make_embedder
from emem_graph.errors import InvalidInputError
from emem_graph.limits import MAX_JSON_FILE_BYTES, load_json


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

    bench = commands.add_parser(
        "bench",
        help="benchmark a synthetic patrol: ingest, the ten tools, filtered search, reopen, "
        "disk, each beside a baseline measured in the same run",
    )
    bench.add_argument("--n", type=int, default=100_000, help="observations (default 100k)")
    bench.add_argument(
        "--out", default="bench-memory", help="scratch directory (default bench-memory)"
    )
    bench.add_argument("--queries", type=int, default=20, help="timed calls per tool (default 20)")
    bench.add_argument(
        "--batch-size", type=int, default=1000, help="adds between two flushes (default 1000)"
    )
    bench.add_argument(
        "--model",
        default="none",
        help="also ingest letting the memory embed with this sentence-transformers model "
        "(or 'hashing'), against the embedder alone plus the floor",
    )
    bench.add_argument("--model-n", type=int, default=None, help="observations for the model run")
    bench.add_argument(
        "--extract-n",
        type=int,
        default=20_000,
        help="observations of the ingest measured with entity extraction on (default 20k)",
    )
    bench.add_argument(
        "--compare",
        choices=["emem"],
        default=None,
        help="also drive eMEM (pip install 'emem==0.3.0') through the same workload",
    )
    bench.add_argument(
        "--scale-from",
        metavar="RUN.json",
        help="the --json output of a smaller run: add each figure's ratio to it, and check "
        "that p50 latencies grew at most 2x (issue 5: 1M against 100k)",
    )
    bench.add_argument(
        "--scale-with",
        type=int,
        metavar="N",
        help="also write a patrol of N (< --n) observations to a second memory and time every "
        "tool on both memories in turn: the p50 latency ratios to it measured in this run",
    )
    bench.add_argument("--json", action="store_true", help="print JSON instead of the table")
    bench.add_argument("--keep", action="store_true", help="keep the scratch databases")
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
    import json

    from emem_graph.evals.bench import run_bench, table, to_json
    from emem_graph.evals.bench.report import previous_run

    previous = None
    if args.scale_from and args.scale_with:
        raise SystemExit("emem-graph bench: --scale-from and --scale-with exclude each other")
    if args.scale_from:
        try:
            source = Path(args.scale_from)
            if source.stat().st_size > MAX_JSON_FILE_BYTES:
                raise InvalidInputError(
                    f"--scale-from {source}: over {MAX_JSON_FILE_BYTES:,} bytes; give the JSON "
                    "an earlier `bench --json` printed"
                )
            text = source.read_text(encoding="utf-8")
            previous = previous_run(load_json(text, "--scale-from", MAX_JSON_FILE_BYTES))
        except InvalidInputError:
            raise
        except (OSError, ValueError) as exc:
            raise SystemExit(f"emem-graph bench: --scale-from {args.scale_from}: {exc}") from exc
    result = run_bench(
        args.n,
        Path(args.out),
        repeats=args.queries,
        batch_size=args.batch_size,
        model=None if args.model == "none" else make_embedder(args.model),
        model_n=args.model_n,
        compare=args.compare,
        keep=args.keep,
        progress=not args.quiet,
        extract_n=args.extract_n,
        scale_n=args.scale_with,
    )
    if args.json:
        print(json.dumps(to_json(result.setup, result.figures, previous), indent=2))
    else:
        print(table(result.setup, result.figures, previous), end="")
    return 0
