"""The areas and areas-eval commands: the area forest of a memory and its evaluation."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emem_graph.cli.common import make_embedder
from emem_graph.errors import InvalidInputError


def add_areas_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``areas`` and ``areas-eval``."""
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


def _cmd_areas(args: argparse.Namespace) -> int:
    from emem_graph.memory import SpatioTemporalMemory

    if not Path(args.directory).is_dir():
        raise InvalidInputError(f"{args.directory} is not a memory directory")
    embedder = make_embedder(args.embedder)
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

    from emem_graph.evals import areas as evaluate

    embedder = make_embedder(args.embedder)
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
