"""The ros, ingest-bag and make-bag commands: the bridge live, a bag replayed, a patrol bag made."""

from __future__ import annotations

import argparse
from pathlib import Path

from emem_graph.cli.common import make_embedder
from emem_graph.errors import EmemGraphError, InvalidInputError


def add_ros_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ros``, ``ingest-bag`` and ``make-bag``."""
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


def _cmd_ros(args: argparse.Namespace) -> int:
    from ros_bridge.node import run

    return run(Path(args.config))


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
        embedding_provider=make_embedder(args.embedder) if args.embedder else None,
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
    from emem_graph.evals.patrol_bag import patrol_config_yaml, write_patrol_bag
    from emem_graph.outputs import claim_file, enclosing_memory, record_file

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
