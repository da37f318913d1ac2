"""The ``emem-graph`` command: argparse subcommands, each a thin layer over a library function."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from emem_graph.errors import EmemGraphError, InvalidInputError
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.limits import MAX_JSON_FILE_BYTES, check_cli_arguments, load_json


def _embedder(name: str) -> EmbeddingProvider:
    from emem_graph.ingest.embeddings import HashingEmbedder, SentenceTransformerEmbedder

    if name == "hashing":
        return HashingEmbedder(384)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEmbedder(name)


def _cmd_demo(args: argparse.Namespace) -> int:
    from emem_graph.demo import run_demo

    run_demo(
        Path(args.directory),
        embedder=_embedder(args.embedder),
        rounds=args.rounds,
        progress=not args.quiet,
        from_bag=args.from_bag,
    )
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    import json

    from emem_graph.bench import run_bench, table, to_json
    from emem_graph.bench.report import previous_run

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
        model=None if args.model == "none" else _embedder(args.model),
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
    from emem_graph.errors import InvalidInputError
    from emem_graph.explore.cypher import (
        format_named_queries,
        format_result,
        list_named_queries,
        parse_params,
        run_named_query,
    )

    if args.list:
        print(format_named_queries(list_named_queries()))
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


# --- cypher / shell / query: _cmd_ functions above this line (emem_graph.explore.cypher) ------


def _cmd_export(args: argparse.Namespace) -> int:
    from emem_graph.explore.export import export_memory

    area = args.near or args.box
    summary = export_memory(
        Path(args.directory),
        Path(args.out),
        args.format,
        time_after=args.after,
        time_before=args.before,
        area=tuple(area) if area else None,
        layer=args.layer,
        episode_id=args.episode,
        include_vectors=args.vectors,
        progress=not args.quiet,
    )
    print(summary.describe())
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from emem_graph.explore.stats import format_stats, memory_stats

    stats = memory_stats(Path(args.directory))
    print(stats.to_json() if args.json else format_stats(stats))
    return 0


# --- export / stats: _cmd_ functions above this line (emem_graph.explore.export, .stats) ----


def _cmd_map(args: argparse.Namespace) -> int:
    from emem_graph.explore.mapping import render_map

    area = args.near or args.box
    summary = render_map(
        Path(args.directory),
        Path(args.out),
        time_after=args.after,
        time_before=args.before,
        area=tuple(area) if area else None,
        layers=args.layer,
        dpi=args.dpi,
        progress=not args.quiet,
        places=args.places,
        route=tuple(args.route) if args.route else None,
    )
    print(summary.describe())
    return 0


# --- map: _cmd_ functions above this line (emem_graph.explore.mapping) ----------------------


def _cmd_ros(args: argparse.Namespace) -> int:
    from ros_bridge.node import run

    return run(Path(args.config))


# --- ros: _cmd_ functions above this line (ros_bridge.node) ----------------------------------


def _cmd_ingest_bag(args: argparse.Namespace) -> int:
    import json

    from ros_bridge.bag import read_rate, replay_bag
    from ros_bridge.config import load_config

    config = load_config(args.config)
    if args.memory:
        config = config.model_copy(update={"memory_dir": args.memory})
    summary = replay_bag(
        Path(args.bag),
        config,
        progress=not args.quiet,
        allow_missing=args.allow_missing,
        embedding_provider=_embedder(args.embedder) if args.embedder else None,
    )
    figures = summary.as_dict()
    if args.read_rate:
        figures["read_rate"] = read_rate(Path(args.bag), config)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(summary.describe())
    if args.read_rate:
        rate = figures["read_rate"]
        print(
            f"  rosbags alone reads and deserializes {rate:,.0f} messages/s of the same topics: "
            f"replay runs at {summary.messages_per_s / rate:.1%} of it"
        )
    return 0


def _cmd_make_bag(args: argparse.Namespace) -> int:
    from emem_graph.outputs import claim_file, enclosing_memory, record_file
    from ros_bridge.bag import patrol_config_yaml, write_patrol_bag

    out = Path(args.out)
    config_path = Path(args.config) if args.config else out.with_name(f"{out.stem}.bridge.yaml")
    memory = enclosing_memory(out)
    if memory is not None:
        raise InvalidInputError(
            f"{out} is inside the memory {memory}; make-bag never writes into a memory: give "
            "a path outside it"
        )
    if config_path.exists():
        raise EmemGraphError(f"{config_path} exists already; pass --config NEW.yaml")
    claim_file(config_path, "make-bag")  # never inside a memory
    info = write_patrol_bag(
        out,
        storage="mcap" if args.storage == "mcap" else "sqlite3",
        ros_version=1 if args.storage == "rosbag1" else 2,
        duration_s=args.duration,
        seed=args.seed,
    )
    config_path.write_text(patrol_config_yaml(args.memory), encoding="utf-8")
    record_file(config_path)
    print(
        f"Wrote {out} ({info.storage}, {info.messages} messages over {info.duration_s:.0f} s): "
        + ", ".join(f"{topic} {n}" for topic, n in info.counts.items())
    )
    print(f"Bridge config: {config_path} (memory_dir: {args.memory})")
    print(f"Replay it: emem-graph ingest-bag {out} --config {config_path}")
    return 0


# --- ingest-bag: _cmd_ functions above this line (ros_bridge.bag) ----------------------------


def _cmd_places(args: argparse.Namespace) -> int:
    import json

    from emem_graph.spatial.places import map_counts

    if args.rebuild:
        from tqdm import tqdm

        from emem_graph.memory import SpatioTemporalMemory

        with SpatioTemporalMemory(
            db_path=args.directory, embedding_provider=_embedder(args.embedder)
        ) as memory:
            total = map_counts(memory.store).trajectory_observations
            with tqdm(total=total, desc="places", unit="obs", disable=args.quiet) as bar:
                memory.places.rebuild(progress=bar.update)
            counts = map_counts(memory.store)
    else:
        from emem_graph.explore.readonly import ReadOnlyMemory

        with ReadOnlyMemory(Path(args.directory), with_vectors=False) as memory:
            counts = map_counts(memory.graph)
    if args.json:
        print(json.dumps(counts.__dict__, indent=2))
    else:
        print(
            f"{counts.places} places, {counts.connections} CONNECTS edges; "
            f"{counts.linked_observations} of {counts.trajectory_observations} perception "
            "observations linked to their place"
        )
    return 0


def _cmd_spatial_eval(args: argparse.Namespace) -> int:
    import tempfile

    from emem_graph.spatial.evaluate import bench_routes, evaluate_campus, memory_factory

    with tempfile.TemporaryDirectory(prefix="emem-spatial-") as scratch:
        if args.bench:
            from emem_graph.ingest.embeddings import HashingEmbedder

            factory = memory_factory(
                Path(scratch) / "bench", HashingEmbedder(384), flush_batch_size=1000
            )
            bench = bench_routes(
                factory, args.bench, queries=args.queries, seed=args.seed, progress=not args.quiet
            )
            print(bench.report())
            return 0
        factory = memory_factory(Path(scratch) / "campus", _embedder(args.embedder))
        evaluation = evaluate_campus(
            factory,
            columns=args.columns,
            rows=args.rows,
            instances_per_kind=args.instances,
            count=args.questions,
            seed=args.seed,
            progress=not args.quiet,
        )
    print(evaluation.report())
    return 0


# --- spatial (issue 8): _cmd_ functions above this line ---------------------------------------


def _cmd_areas(args: argparse.Namespace) -> int:
    from emem_graph.memory import SpatioTemporalMemory

    if not Path(args.directory).is_dir():
        raise InvalidInputError(f"{args.directory} is not a memory directory")
    embedder = _embedder(args.embedder)
    with SpatioTemporalMemory(
        args.directory,
        config={"embedding_dim": embedder.dim, "maintenance_interval": None},
        embedding_provider=embedder,
    ) as memory:
        memory.flush()
        report = memory.areas.build() if args.rebuild else memory.areas.update()
        if report is None:
            print("Areas are up to date." if memory.areas.built else "No memories to cluster.")
        else:
            print(("Rebuilt: " if args.rebuild else "Updated: ") + report.describe())
        if args.query:
            print(memory.global_search(args.query, n_walks=args.walks))
        elif args.near:
            x, y, radius = args.near
            print(memory.describe_area(near_x=x, near_y=y, spatial_radius=radius))
        elif args.concept:
            print(memory.describe_area(args.concept, n_walks=args.walks))
        else:
            print(memory.describe_area(n_results=args.top))
    return 0


def _cmd_areas_eval(args: argparse.Namespace) -> int:
    import json

    from emem_graph.areas import evaluate

    embedder = _embedder(args.embedder)
    say = (lambda _line: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    evaluations = evaluate.run(
        args.per_region, tuple(args.seeds), embedder=embedder, n_walks=args.walks
    )
    timing = evaluate.build_timing(args.timing, embedder, progress=say) if args.timing else []
    if args.json:
        print(json.dumps(evaluate.to_json(evaluations, timing), indent=2))
        return 0
    for seed, evaluation in zip(args.seeds, evaluations, strict=True):
        print(f"seed {seed}:")
        print("  " + evaluation.describe().replace("\n", "\n  "))
        for miss in evaluation.misses():
            print(f"    missed {miss}")
    figures = evaluate.summary(evaluations)
    print(
        f"mean over {len(evaluations)} scene(s), {figures['questions']:.0f} questions: "
        f"{figures['area_accuracy']:.1%} resolved to the right region (leaf "
        f"{figures['leaf_accuracy']:.1%}, flat baseline {figures['flat_accuracy']:.1%})"
    )
    for count, seconds, areas in timing:
        print(
            f"build of the whole forest: {count} observations -> {areas} area gists in "
            f"{seconds:.2f} s ({seconds / count * 10_000:.1f} s per 10k observations)"
        )
    return 0


# --- areas (issue 9): _cmd_ functions above this line -----------------------------------------


def _cmd_profile_eval(args: argparse.Namespace) -> int:
    from emem_graph.profile import evaluate

    print("\n".join(evaluate.main(progress=not args.quiet)))
    return 0


# --- profile (issue 10): _cmd_ functions above this line --------------------------------------


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

    # --- cypher / shell / query parsers below this line ---------------------------------------
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
    _add_query_options(query)
    query.set_defaults(run=_cmd_query)

    # --- export / stats parsers below this line -----------------------------------------------
    export = commands.add_parser(
        "export",
        help="write a memory (or part of it) as GraphML, node-link JSON, Parquet or CSV",
        description="Export the memory in DIR (opened read-only) to OUT: one file for graphml "
        "and json, a directory of one file per node and rel table for parquet and csv. With "
        "filters, the matching observations and the episodes, gists and entities linked to "
        "them. Relative times count back from the memory's newest observation.",
    )
    export.add_argument("directory", metavar="DIR", help="memory directory")
    export.add_argument(
        "--format", required=True, choices=("graphml", "json", "parquet", "csv"), help="format"
    )
    export.add_argument("out", metavar="OUT", help="file (graphml, json) or directory to write")
    export.add_argument(
        "--after",
        metavar="T",
        help="from this time: '-10m' or '10m' (ago), 'yesterday', a Unix timestamp",
    )
    export.add_argument("--before", metavar="T", help="until this time (same forms as --after)")
    export_area = export.add_mutually_exclusive_group()
    export_area.add_argument(
        "--near", nargs=3, type=float, metavar=("X", "Y", "R"), help="only within R m of (X, Y)"
    )
    export_area.add_argument(
        "--box",
        nargs=4,
        type=float,
        metavar=("XMIN", "YMIN", "XMAX", "YMAX"),
        help="only inside this box (metres)",
    )
    export.add_argument("--layer", metavar="L", help="only observations of this layer")
    export.add_argument("--episode", metavar="ID", help="only observations of this episode")
    export.add_argument(
        "--vectors", action="store_true", help="add each node's vector to the Parquet node files"
    )
    export.set_defaults(run=_cmd_export)

    stats = commands.add_parser(
        "stats", help="counts, time span, disk use and vector sync state of a memory"
    )
    stats.add_argument("directory", metavar="DIR", help="memory directory")
    stats.add_argument("--json", action="store_true", help="print JSON instead of text")
    stats.set_defaults(run=_cmd_stats)

    # --- map parser below this line -----------------------------------------------------------
    map_ = commands.add_parser(
        "map",
        help="draw a top-down map of a memory (trajectory, layers, entities, gists) as a PNG",
        description="Draw a top-down map of the memory in DIR into OUT.png (opened read-only). "
        "Relative times count back from the memory's newest observation.",
    )
    map_.add_argument("directory", metavar="DIR", help="memory directory")
    map_.add_argument("out", metavar="OUT.png", help="image to write")
    map_.add_argument(
        "--after", metavar="T", help="from this time: '-10m' (ago), 'yesterday', a Unix timestamp"
    )
    map_.add_argument("--before", metavar="T", help="until this time (same forms as --after)")
    where = map_.add_mutually_exclusive_group()
    where.add_argument(
        "--near", nargs=3, type=float, metavar=("X", "Y", "R"), help="only within R m of (X, Y)"
    )
    where.add_argument(
        "--box",
        nargs=4,
        type=float,
        metavar=("XMIN", "YMIN", "XMAX", "YMAX"),
        help="only inside this box (metres)",
    )
    map_.add_argument(
        "--layer", action="extend", nargs="+", metavar="L", help="only these layers (default all)"
    )
    map_.add_argument("--dpi", type=int, default=120, help="pixels per inch (default 120)")
    map_.add_argument(
        "--places", action="store_true", help="draw the topological map: places, CONNECTS edges"
    )
    map_.add_argument(
        "--route",
        nargs=4,
        type=float,
        metavar=("X1", "Y1", "X2", "Y2"),
        help="draw the shortest route over CONNECTS between the places nearest two points",
    )
    map_.set_defaults(run=_cmd_map)

    # --- ros parser below this line -----------------------------------------------------------
    ros = commands.add_parser(
        "ros",
        help="run the ROS 2 bridge node: ingest topics, serve the memory's tools as services",
        description="Run the ROS 2 bridge node until SIGINT/SIGTERM (needs rclpy and "
        "emem_interfaces: source ROS 2 and the interface package's colcon workspace).",
    )
    ros.add_argument(
        "--config", required=True, help="the bridge's YAML file (ros_bridge/example_bridge.yaml)"
    )
    ros.set_defaults(run=_cmd_ros)

    # --- ingest-bag parser below this line ----------------------------------------------------
    ingest_bag = commands.add_parser(
        "ingest-bag",
        help="build a memory from a recorded ROS bag through the bridge's pipeline",
        description="Replay a ROS 1 (.bag) or ROS 2 (sqlite3 or MCAP directory) bag: the "
        "config's layer, position and trigger topics in time order, triggers on bag time.",
    )
    ingest_bag.add_argument("bag", help="ROS 2 bag directory or ROS 1 .bag file")
    ingest_bag.add_argument("--config", required=True, help="the bridge's YAML file")
    ingest_bag.add_argument("--memory", help="memory directory (default: the config's memory_dir)")
    ingest_bag.add_argument(
        "--embedder", help="sentence-transformers model or 'hashing' (default: the memory's)"
    )
    ingest_bag.add_argument(
        "--allow-missing",
        action="store_true",
        help="replay even when configured topics are not in the bag",
    )
    ingest_bag.add_argument(
        "--read-rate",
        action="store_true",
        help="also time a rosbags-only read of the same topics (the throughput baseline)",
    )
    ingest_bag.add_argument("--json", action="store_true", help="the summary as JSON")
    ingest_bag.set_defaults(run=_cmd_ingest_bag)

    make_bag = commands.add_parser(
        "make-bag",
        help="write the simulated patrol as a ROS bag, with a bridge config to replay it",
    )
    make_bag.add_argument("out", help="new bag path (a directory; a .bag file for rosbag1)")
    make_bag.add_argument(
        "--storage", choices=["sqlite3", "mcap", "rosbag1"], default="sqlite3", help="bag format"
    )
    make_bag.add_argument("--duration", type=float, default=240.0, help="seconds (default 240)")
    make_bag.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    make_bag.add_argument(
        "--config", help="where to write the bridge config (default: OUT's name + .bridge.yaml)"
    )
    make_bag.add_argument(
        "--memory",
        default="patrol-memory",
        help="memory_dir in that config (default patrol-memory)",
    )
    make_bag.set_defaults(run=_cmd_make_bag)

    # --- spatial (issue 8) parsers below this line --------------------------------------------
    places = commands.add_parser(
        "places",
        help="the topological map of a memory (places, CONNECTS edges); --rebuild builds it again",
        description="Print the size of the map of places in DIR (read-only), or rebuild it from "
        "every perception observation (read-write: stop the process that holds the memory).",
    )
    places.add_argument("directory", metavar="DIR", help="memory directory")
    places.add_argument("--rebuild", action="store_true", help="delete the map and build it again")
    places.add_argument(
        "--embedder",
        default="all-MiniLM-L6-v2",
        help="the memory's embedder (for --rebuild; 'hashing' for memories built with it)",
    )
    places.add_argument("--json", action="store_true", help="print JSON instead of text")
    places.set_defaults(run=_cmd_places)

    spatial_eval = commands.add_parser(
        "spatial-eval",
        help="ask route and directional questions on a generated campus; or time route_query",
        description="Build a campus (buildings, corridors, landmarks, object instances), walk "
        "it into a new memory and ask questions with known answers; print the success figures. "
        "With --bench N: route_query latency at N observations next to SciPy's Dijkstra.",
    )
    spatial_eval.add_argument("--columns", type=int, default=3, help="building columns (3)")
    spatial_eval.add_argument("--rows", type=int, default=2, help="building rows (2)")
    spatial_eval.add_argument(
        "--instances", type=int, default=4, help="instances of every object kind (4)"
    )
    spatial_eval.add_argument("--questions", type=int, default=40, help="questions (40)")
    spatial_eval.add_argument("--seed", type=int, default=0, help="random seed (0)")
    spatial_eval.add_argument(
        "--embedder", default="all-MiniLM-L6-v2", help="model name or path, or 'hashing'"
    )
    spatial_eval.add_argument(
        "--bench", type=int, metavar="N", help="time route_query at N observations instead"
    )
    spatial_eval.add_argument(
        "--queries", type=int, default=30, help="route queries timed with --bench (30)"
    )
    spatial_eval.set_defaults(run=_cmd_spatial_eval)

    # --- areas (issue 9) parsers below this line ----------------------------------------------
    areas = commands.add_parser(
        "areas",
        help="build or update a memory's area forest (rooms, buildings, site) and describe it",
        description="Bring the area forest of the memory in DIR up to date (only the branches "
        "new memories fall in), or rebuild it whole; then print the top-level areas, the "
        "areas around a point, or a global search.",
    )
    areas.add_argument("directory", metavar="DIR", help="memory directory")
    areas.add_argument("--rebuild", action="store_true", help="rebuild the whole forest")
    areas_what = areas.add_mutually_exclusive_group()
    areas_what.add_argument("--query", metavar="Q", help="global search: chains memory -> site")
    areas_what.add_argument("--concept", metavar="C", help="the areas a concept belongs to")
    areas_what.add_argument(
        "--near", nargs=3, type=float, metavar=("X", "Y", "R"), help="the areas around (X, Y)"
    )
    areas.add_argument("--top", type=int, default=5, help="top-level areas shown (default 5)")
    areas.add_argument("--walks", type=int, default=3, help="walks side by side (default 3)")
    areas.add_argument(
        "--embedder",
        default="all-MiniLM-L6-v2",
        help="the memory's embedder: sentence-transformers model name or path, or 'hashing'",
    )
    areas.set_defaults(run=_cmd_areas)

    areas_eval = commands.add_parser(
        "areas-eval",
        help="evaluate the area forest on generated multi-building scenes (accuracy, cost)",
        description="Generate scenes with known regions, ask their implicit questions through "
        "the area walk and print how many resolve to the right region, the walk's latency and "
        "visited nodes, and (with --timing) the build time of the whole forest.",
    )
    areas_eval.add_argument(
        "--per-region", type=int, default=30, help="observations per region (default 30)"
    )
    areas_eval.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], help="scene seeds (default 0 1 2)"
    )
    areas_eval.add_argument("--walks", type=int, default=3, help="walks side by side (default 3)")
    areas_eval.add_argument(
        "--timing",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also time full builds of scenes of about N observations each (e.g. 1000 10000)",
    )
    areas_eval.add_argument(
        "--embedder", default="all-MiniLM-L6-v2", help="embedder (default MiniLM)"
    )
    areas_eval.add_argument("--json", action="store_true", help="figures as JSON")
    areas_eval.set_defaults(run=_cmd_areas_eval)

    # --- profile (issue 10) parsers below this line -------------------------------------------
    profile_eval = commands.add_parser(
        "profile-eval",
        help="evaluate the user profile: facts and routines told, changed and asked for later",
        description="Tell a new memory 30 personal facts and 25 routines of three users (by the "
        "structured API, then as plain-English instructions without an LLM), change 10 "
        "routines, reference 30 nodes by paraphrase and 15 near misses, then print how often "
        "the later underspecified requests find the right knowledge (top 1 / top 3), whether "
        "step order, updates, node reuse and grounding hold (all-MiniLM-L6-v2, ~2-4 min).",
    )
    profile_eval.set_defaults(run=_cmd_profile_eval)

    return parser


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


if __name__ == "__main__":
    raise SystemExit(main())
