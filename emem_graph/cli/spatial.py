"""The places and spatial-eval commands: the topological map of places and its evaluation."""

from __future__ import annotations

import argparse
from pathlib import Path

from emem_graph.cli.common import make_embedder


def add_spatial_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``places`` and ``spatial-eval``."""
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


def _cmd_places(args: argparse.Namespace) -> int:
    import json

    from emem_graph.spatial.places import map_counts

    if args.rebuild:
        from tqdm import tqdm

        from emem_graph.memory import SpatioTemporalMemory

        with SpatioTemporalMemory(
            db_path=args.directory, embedding_provider=make_embedder(args.embedder)
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

    from emem_graph.evals.spatial import bench_routes, evaluate_campus, memory_factory

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
        factory = memory_factory(Path(scratch) / "campus", make_embedder(args.embedder))
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
