"""The export, stats and map commands: a memory read, written out, counted and drawn."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_explore_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``export``, ``stats`` and ``map``."""
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
    _add_region_options(export)
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
    _add_region_options(map_)
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


def _add_region_options(parser: argparse.ArgumentParser) -> None:
    """--near X Y R or --box XMIN YMIN XMAX YMAX (one of them): the region a command keeps."""
    region = parser.add_mutually_exclusive_group()
    region.add_argument(
        "--near", nargs=3, type=float, metavar=("X", "Y", "R"), help="only within R m of (X, Y)"
    )
    region.add_argument(
        "--box",
        nargs=4,
        type=float,
        metavar=("XMIN", "YMIN", "XMAX", "YMAX"),
        help="only inside this box (metres)",
    )


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
