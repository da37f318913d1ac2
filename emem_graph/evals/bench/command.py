"""The benchmark's command line: its options, the run they ask for, and ``python -m
emem_graph.evals.bench`` (the same options, with ``-q``/``-v`` accepted anywhere)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from emem_graph.errors import EmemGraphError, InvalidInputError
from emem_graph.evals.bench.day import EMBEDDERS
from emem_graph.evals.bench.report import previous_run, table, to_json
from emem_graph.evals.bench.run import run_bench
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.limits import MAX_JSON_FILE_BYTES, check_cli_arguments, load_json

HELP = (
    "benchmark a synthetic patrol: ingest, the ten tools, filtered search, reopen, "
    "disk, each beside a baseline measured in the same run; --day: a robot's whole day "
    "through one open memory (rates, memory and descriptors over time)"
)
"""What the benchmark does, in one line (the subcommand's help)."""

_GLOBAL = ("-q", "--quiet", "-v", "--verbose")
DEFAULT_OUT = "bench-memory"
DAY_OBSERVATIONS = 200_000
_NOT_WITH_DAY = ("fleet", "scales", "scale_from", "scale_with")


def add_arguments(bench: argparse.ArgumentParser) -> None:
    """Add the benchmark's options to ``bench`` (a parser or a subcommand's parser)."""
    bench.add_argument("--n", type=int, default=100_000, help="observations (default 100k)")
    bench.add_argument(
        "--out",
        default=None,
        help=f"scratch directory (default {DEFAULT_OUT}; with --day a new temporary directory)",
    )
    bench.add_argument("--queries", type=int, default=20, help="timed calls per tool (default 20)")
    bench.add_argument(
        "--batch-size", type=int, default=1000, help="adds between two flushes (default 1000)"
    )
    bench.add_argument(
        "--model",
        default="none",
        help="also ingest letting the memory embed with this sentence-transformers model "
        "(or 'hashing'), on distinct texts, against the embedder alone on the same texts",
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
        "that p50 latencies grew at most 2x (e.g. 1M against 100k)",
    )
    bench.add_argument(
        "--scale-with",
        type=int,
        metavar="N",
        help="also write a patrol of N (< --n) observations to a second memory and time every "
        "tool on both memories in turn: the p50 latency ratios to it measured in this run",
    )
    bench.add_argument(
        "--scales",
        metavar="N,N,...",
        help="one run at each of these sizes (e.g. 20000,100000,1000000), each in a process of "
        "its own: every figure against the floor and eMEM (when installed), the memory's peak "
        "RSS and bytes per observation, disk, and each p50 against the previous size "
        "(--n, --scale-from and --scale-with do not apply)",
    )
    bench.add_argument(
        "--fleet",
        type=int,
        metavar="ROBOTS",
        help="the fleet benchmark instead: ROBOTS robots of --n observations each pushed to "
        "one fleet location; push throughput, bytes, fleet semantic_search p50 against one "
        "embedded memory of the same total size",
    )
    bench.add_argument(
        "--fleet-uri",
        metavar="URI",
        help="with --fleet: the fleet location (s3://bucket/prefix with the AWS_* variables, "
        "or a path; default a folder of --out); 'moto' starts a local S3-compatible server "
        "and counts its requests",
    )
    bench.add_argument(
        "--day",
        action="store_true",
        help="a robot's day instead: --observations add() calls into one memory of the default "
        "configuration, open throughout, an episode ended every 500 without waiting, a tool "
        "call every 50; ingest rate, RSS and open/deleted descriptors every 5%% of the run, "
        "tool p50 at the start and the end, warnings logged, what was consolidated, "
        "descriptors after close (and eMEM's rate, when installed)",
    )
    bench.add_argument(
        "--observations",
        type=int,
        default=None,
        metavar="N",
        help=f"with --day: observations of the day (default {DAY_OBSERVATIONS})",
    )
    bench.add_argument(
        "--engine",
        choices=["ladybug", "kuzu"],
        default=None,
        help="with --day: the graph engine (default: the configuration's, ladybug unless "
        "EMEM_GRAPH_ENGINE says otherwise)",
    )
    bench.add_argument(
        "--embedder",
        choices=list(EMBEDDERS),
        default="vectors",
        help="with --day: 'vectors' gives the patrol's vectors with each add (default); "
        "'model' gives text only, embedded by the memory's all-MiniLM-L6-v2",
    )
    bench.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="the figures as JSON: printed instead of the table, or written to PATH (the "
        "table still printed)",
    )
    bench.add_argument("--keep", action="store_true", help="keep the scratch databases")


def embedder(name: str) -> EmbeddingProvider:
    """The embedder a model name asks for: ``hashing`` (no model) or a sentence-transformers
    model name or path (loaded offline)."""
    from emem_graph.ingest.embeddings import HashingEmbedder, SentenceTransformerEmbedder

    if name == "hashing":
        return HashingEmbedder(384)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEmbedder(name)


def run_command(
    args: argparse.Namespace, make_embedder: Callable[[str], EmbeddingProvider] = embedder
) -> int:
    """Run the benchmark the parsed options ask for and print its table (or JSON)."""
    _check_json_path(args.json)
    if args.day:
        return _run_day(args)
    if args.observations is not None:
        raise SystemExit("emem-graph bench: --observations is the size of a --day run; use --n")
    args.out = args.out or DEFAULT_OUT
    if getattr(args, "fleet", None):
        from emem_graph.evals.bench.fleet import describe, run_fleet_bench

        if args.fleet < 1:
            raise InvalidInputError(f"--fleet takes a number of robots >= 1, got {args.fleet}")
        figures = run_fleet_bench(
            args.fleet,
            args.n,
            Path(args.out),
            uri=args.fleet_uri,
            queries=args.queries,
            keep=args.keep,
            progress=not args.quiet,
        )
        _print(args, figures, describe(figures) + "\n")
        return 0
    if getattr(args, "scales", None):
        return _run_scales(args)
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
    _print(
        args,
        to_json(result.setup, result.figures, previous),
        table(result.setup, result.figures, previous),
    )
    return 0


def _run_day(args: argparse.Namespace) -> int:
    """``--day``: a robot's day through one open memory (day.py), its table (or JSON)."""
    from emem_graph.evals.bench.day import run_day
    from emem_graph.evals.bench.day_report import day_figures, day_table

    given = [f"--{name.replace('_', '-')}" for name in _NOT_WITH_DAY if getattr(args, name)]
    if args.model != "none":
        given.append("--model")
    if given:
        raise SystemExit(f"emem-graph bench: --day excludes {', '.join(given)}")
    result = run_day(
        DAY_OBSERVATIONS if args.observations is None else args.observations,
        args.out,
        engine=args.engine,
        embedder=args.embedder,
        compare=True if args.compare == "emem" else None,
        keep=args.keep,
        # Progress bars only on a terminal: never in a log or a captured test output.
        progress=not args.quiet and sys.stderr.isatty(),
    )
    _print(args, day_figures(result), day_table(result))
    return 0


def _check_json_path(path: str | None) -> None:
    """Refuse a --json PATH that cannot be written before a run of minutes, not after it."""
    if path is None or path == "-":
        return
    parent = Path(path).resolve().parent
    if not parent.is_dir() or Path(path).is_dir():
        raise InvalidInputError(f"--json {path}: not a file in an existing directory")


def _print(args: argparse.Namespace, figures: object, text: str) -> None:
    """The table on stdout; with --json the JSON instead, or beside it in --json's file."""
    if args.json is None:
        print(text, end="")
    elif args.json == "-":
        print(json.dumps(figures, indent=2))
    else:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(text, end="")


def _run_scales(args: argparse.Namespace) -> int:
    """``--scales``: the benchmark at each size in a child process, combined (scales.py)."""
    from emem_graph.evals.bench.compare import emem_version
    from emem_graph.evals.bench.scales import parse_scales, run_scales, scales_table

    if args.scale_from or args.scale_with:
        raise SystemExit("emem-graph bench: --scales excludes --scale-from and --scale-with")
    scales = parse_scales(args.scales)
    compare = args.compare or ("emem" if emem_version() is not None else None)
    options = [
        *("--queries", str(args.queries)),
        *("--batch-size", str(args.batch_size)),
        *("--extract-n", str(args.extract_n)),
        *(("--compare", compare) if compare else ()),
        *(("--model", args.model) if args.model != "none" else ()),
        *(("--model-n", str(args.model_n)) if args.model_n else ()),
    ]
    quiet = args.quiet or args.json == "-"

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    combined = run_scales(
        scales, Path(args.out), options, keep=args.keep, progress=None if quiet else say
    )
    _print(args, combined, scales_table(combined))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m emem_graph.evals.bench [options]``: the options of ``emem-graph bench``;
    the global flags ``-q`` and ``-v`` may come anywhere."""
    given = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m emem_graph.evals.bench", description=HELP)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars (for scripts and logs)"
    )
    add_arguments(parser)
    flags = [a for a in given if a in _GLOBAL]
    options = [a for a in given if a not in _GLOBAL]
    args = parser.parse_args([*flags, *options])
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        check_cli_arguments(vars(args))
        return run_command(args)
    except (EmemGraphError, OSError) as exc:
        print(f"emem-graph: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
