"""The demo: a simulated patrol through a small house, remembered and then asked about."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.evals.house import ROOMS, ROUTE, START_TIME, THINGS, VIEW_RADIUS
from emem_graph.ingest.embeddings import EmbeddingProvider
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.outputs import claim_directory, record_entries


def _walk(route: list[str], step: float = 0.5) -> list[tuple[str, float, float]]:
    """Waypoints every ``step`` metres along the route, each tagged with the room it is in."""
    points: list[tuple[str, float, float]] = []
    for here, there in itertools.pairwise(route):
        (x0, y0), (x1, y1) = ROOMS[here], ROOMS[there]
        n = max(1, int(math.dist((x0, y0), (x1, y1)) / step))
        for i in range(n):
            f = i / n
            points.append((here if f < 0.5 else there, x0 + (x1 - x0) * f, y0 + (y1 - y0) * f))
    return points


def build_patrol_memory(
    memory: SpatioTemporalMemory,
    *,
    clock: Callable[[], float] | None = None,
    advance: Callable[[float], None] | None = None,
    rounds: int = 2,
    progress: bool = True,
) -> int:
    """Feed ``rounds`` patrols of the house into ``memory``; returns observations added."""
    added = 0
    battery = 100.0
    rng = np.random.default_rng(0)
    seen: set[str] = set()
    points = _walk(ROUTE) * rounds
    room = None
    for step, (where, x, y) in enumerate(tqdm(points, desc="patrol", disable=not progress)):
        if where != room:
            memory.start_episode(f"patrol {where}")
            room = where
        visible = [t for t in THINGS if math.dist((t.x, t.y), (x, y)) <= VIEW_RADIUS]
        if visible:
            # What a COCO-style detector publishes: "1 chair, 2 cups".
            counts: dict[str, int] = {}
            for thing in visible:
                counts[thing.label] = counts.get(thing.label, 0) + 1
            detection = ", ".join(
                f"{n} {label}{'s' if n > 1 else ''}" for label, n in sorted(counts.items())
            )
            memory.add(detection, x, y, layer_name="detections", source_type="detector")
            added += 1
        for thing in visible:
            if thing.name not in seen:
                seen.add(thing.name)
                memory.add_entity(thing.name, thing.x, thing.y, entity_type=thing.kind)
        if step % 3 == 0 and visible:
            # The captioner describes one visible thing per frame, in turn.
            described = visible[(step // 3) % len(visible)]
            memory.add(described.caption, x, y, layer_name="captions", source_type="vlm")
            added += 1
        if step % 10 == 0:
            battery -= float(rng.uniform(0.3, 0.8))
            memory.add_body_state(f"battery {battery:.0f}%", "battery", x=x, y=y)
            added += 1
        if advance is not None:
            advance(2.0)
    memory.end_episode(wait=True)  # the patrol's gists are written before anyone asks
    return added


def demo_questions() -> list[tuple[str, dict[str, object]]]:
    """What the demo asks the memory: every retrieval tool once (two multi-part requests),
    then the tools of the spatial, area and profile capabilities."""
    kitchen = ROOMS["kitchen"]
    return [
        ("semantic_search", {"query": "where is the coffee machine?", "n_results": 3}),
        ("semantic_search", {"query": "the red cup, then the laptop on the desk", "n_results": 4}),
        ("spatial_query", {"x": kitchen[0], "y": kitchen[1], "radius": 2.0, "n_results": 3}),
        ("temporal_query", {"last_n_minutes": 1, "n_results": 3}),
        ("episode_summary", {"last_n": 2}),
        ("get_current_context", {"radius": 3.0, "include_recent_minutes": 1.0}),
        ("search_gists", {"query": "appliances in the kitchen", "n_results": 2}),
        ("entity_query", {"name": "chair"}),
        ("locate", {"concept": "the red chair"}),
        ("recall", {"query": "the sofa and the television", "n_results": 3}),
        ("body_status", {}),
        # the capabilities' tools: spatial reasoning, areas, user profile
        ("route_query", {"target": "red cup", "start": "the sofa", "goal": "the fridge"}),
        ("directional_query", {"target": "chair", "anchor": "the desk", "direction": "east"}),
        ("navigate_to", {"concept": "the coffee machine"}),
        ("describe_area", {}),
        ("global_search", {"query": "where could I make a hot drink?", "n_results": 1}),
        ("user_profile", {"query": "bring me my favourite mug", "user": "Alex"}),
    ]


PROFILE_FACT = ("Alex", "my favourite mug", ["red cup"], "the cup Alex drinks coffee from")
"""What the demo's user has told the robot (user, alias, objects, description)."""


def run_demo(
    directory: Path,
    *,
    embedder: EmbeddingProvider | None = None,
    rounds: int = 2,
    fresh: bool = True,
    echo: Callable[[str], None] = print,
    progress: bool = True,
    from_bag: bool = False,
) -> SpatioTemporalMemory:
    """Build the patrol memory in ``directory`` and ask it every retrieval tool, printing the
    answers. Returns the (closed) memory object for inspection.

    With ``from_bag`` the patrol is recorded as a ROS bag (odometry, captions, detections,
    battery, temperature) and replayed through the ROS bridge's pipeline instead.

    ``directory`` must be new, empty, or an earlier demo's (``fresh`` removes what that demo
    made there first): the demo never deletes what it did not create, nor builds inside
    another memory. What it makes there is recorded in the directory's marker, even when it
    fails (outputs.record_entries).

    Raises:
        InvalidInputError: ``directory`` is a file, a non-empty directory no demo created, a
            memory, or inside one; an earlier demo's directory that holds anything that demo
            did not make (outputs.claim_directory).
        DatabaseLockedError: the earlier demo's memory is open in a process.
    """
    target = claim_directory(directory, "demo", replace=fresh, becomes_memory=True)
    before = {entry.name for entry in target.iterdir()}
    try:
        return _remember_and_ask(directory, embedder, rounds, echo, progress, from_bag)
    finally:
        record_entries(target, "demo", {entry.name for entry in target.iterdir()} - before)


def _remember_and_ask(
    directory: Path,
    embedder: EmbeddingProvider | None,
    rounds: int,
    echo: Callable[[str], None],
    progress: bool,
    from_bag: bool,
) -> SpatioTemporalMemory:
    """run_demo's work in the directory it claimed: the patrol remembered, the tools asked."""
    now = [START_TIME]

    def clock() -> float:
        return now[0]

    def advance(seconds: float) -> None:
        now[0] += seconds

    config = MemoryConfig(db_path=str(directory))
    with SpatioTemporalMemory(
        config=config, embedding_provider=embedder, get_current_time=clock
    ) as memory:
        if from_bag:
            from emem_graph.evals.patrol_bag import replay_patrol

            summary = replay_patrol(
                memory, rounds=rounds, set_time=lambda t: now.__setitem__(0, t), progress=progress
            )
            echo(summary.describe())
            added = summary.observations
        else:
            added = build_patrol_memory(
                memory, clock=clock, advance=advance, rounds=rounds, progress=progress
            )
        store = memory.store
        counts = store.counts()
        echo(f"\nRemembered {added} observations in {directory}")
        echo(
            f"  {counts['observations']} observations, {counts['episodes']} episodes, "
            f"{counts['entities']} entities, {counts['pending_vectors']} vectors pending"
        )
        position = memory.current_position
        assert position is not None
        echo(f"Position: ({position[0]:.1f}, {position[1]:.1f})")
        user, alias, objects, description = PROFILE_FACT
        memory.profile.add_object_semantics(user, alias, objects, description)
        echo(f"{user} said: {objects[0]} is {alias}")
        for tool, arguments in demo_questions():
            shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
            echo(f"\n>>> {tool}({shown})")
            echo(memory.dispatch_tool_call(tool, arguments))
    return memory
