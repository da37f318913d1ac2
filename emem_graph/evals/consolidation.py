"""Measure consolidation: entity duplicate and false-merge rates, and time per 1,000 observations.

``python -m emem_graph.evals.consolidation [--embedder hashing] [--objects 60]
[--sightings 2000] [--dir DIR]`` plays the house scenario and a generated one through a fresh
memory with the no-LLM fallbacks and prints a JSON report. Definitions (over entity sightings,
i.e. OBSERVED_IN edges, attributed to the ground-truth object of the same head noun named by
that observation):

- duplicate_rate: (entities - distinct objects they stand for) / objects seen. An entity stands
  for the object most of its sightings belong to; 0 means one entity per object.
- false_merge_rate: sightings attributed to an entity that stands for another object, over all
  attributed sightings; merged_objects: objects none of whose entities stands for them (they
  were absorbed by another object's entity).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emem_graph.consolidation import reads
from emem_graph.evals.scenarios import Scenario, generated_scenario, house_scenario
from emem_graph.text.names import head

if TYPE_CHECKING:
    from emem_graph.memory import SpatioTemporalMemory


class ScenarioClock:
    """The simulated clock a scenario is played with (seconds, starts at 0)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Played:
    """A scenario played into a memory: ids and timings."""

    episode_ids: list[str] = field(default_factory=list)
    step_of: dict[str, int] = field(default_factory=dict)
    """observation id -> index in scenario.steps"""
    observations: int = 0
    ingest_seconds: float = 0.0
    consolidation_seconds: float = 0.0


@dataclass
class EntityReport:
    """How well sightings were resolved into entities."""

    objects_seen: int
    entities: int
    sightings: int
    attributed_sightings: int
    duplicate_rate: float
    false_merge_rate: float
    merged_objects: int
    entity_of: dict[str, list[str]]
    """object key -> the entities that stand for it"""
    counts: dict[str, int]
    """entity id -> observation_count"""


def play(memory: SpatioTemporalMemory, scenario: Scenario, clock: ScenarioClock) -> Played:
    """Add every step of ``scenario`` to ``memory`` episode by episode; each episode is ended
    with consolidation and waited for (timed apart from ingest)."""
    played = Played()
    steps = scenario.steps
    index = 0
    for episode in scenario.episodes:
        clock.now = episode.steps[0].t if episode.steps else clock.now
        played.episode_ids.append(memory.start_episode(episode.name))
        started = time.perf_counter()
        for step in episode.steps:
            clock.now = step.t
            if step.body_state:
                memory.add_body_state(step.text, step.layer, step.x, step.y, timestamp=step.t)
            else:
                oid = memory.add(step.text, step.x, step.y, timestamp=step.t, layer_name=step.layer)
                played.step_of[oid] = index
                played.observations += 1
            index += 1
        memory.flush()
        played.ingest_seconds += time.perf_counter() - started
        clock.now += 1.0
        started = time.perf_counter()
        memory.end_episode(consolidate=True, wait=True)
        played.consolidation_seconds += time.perf_counter() - started
    assert index == len(steps)
    return played


def entity_report(memory: SpatioTemporalMemory, scenario: Scenario, played: Played) -> EntityReport:
    """Compare the memory's entities with the scenario's objects (see the module docstring)."""
    store = memory.store
    steps = scenario.steps
    pairs = reads.entity_sightings(store)
    entity_ids = sorted({e for e, _ in pairs})
    entities = {e.id: e for e in map(store.get_entity, entity_ids) if e is not None}
    per_entity: dict[str, Counter[str]] = defaultdict(Counter)
    attributed = 0
    for entity_id, observation_id in pairs:
        if observation_id not in played.step_of or entity_id not in entities:
            continue
        step = steps[played.step_of[observation_id]]
        noun = head(entities[entity_id].name)
        owners = [k for k in step.objects if head(scenario.objects[k].label) == noun]
        if len(owners) == 1:
            per_entity[entity_id][owners[0]] += 1
            attributed += 1
    stands_for = {e: c.most_common(1)[0][0] for e, c in per_entity.items()}
    entity_of: dict[str, list[str]] = defaultdict(list)
    for entity_id, key in stands_for.items():
        entity_of[key].append(entity_id)
    objects_seen = {k for c in per_entity.values() for k in c}
    wrong = sum(n for e, c in per_entity.items() for k, n in c.items() if k != stands_for[e])
    return EntityReport(
        objects_seen=len(objects_seen),
        entities=len(per_entity),
        sightings=len(pairs),
        attributed_sightings=attributed,
        duplicate_rate=(len(per_entity) - len(entity_of)) / max(1, len(objects_seen)),
        false_merge_rate=wrong / max(1, attributed),
        merged_objects=len(objects_seen - set(entity_of)),
        entity_of=dict(entity_of),
        counts={e: entities[e].observation_count for e in per_entity},
    )


def evaluate(
    scenario: Scenario,
    memory_factory: Callable[[ScenarioClock], SpatioTemporalMemory],
) -> dict[str, Any]:
    """Play ``scenario`` into a new memory and report entity quality and consolidation time."""
    clock = ScenarioClock()
    memory = memory_factory(clock)
    try:
        played = play(memory, scenario, clock)
        report = entity_report(memory, scenario, played)
        counts = memory.store.counts()
    finally:
        memory.close()
    per_thousand = 1000.0 * played.consolidation_seconds / max(1, played.observations)
    summary = asdict(report)
    summary.pop("entity_of")
    summary.pop("counts")
    return {
        "objects": len(scenario.objects),
        "episodes": len(scenario.episodes),
        "observations": played.observations,
        "expected_sightings": sum(scenario.sightings().values()),
        **summary,
        "gists": counts["gists"],
        "consolidation_seconds": round(played.consolidation_seconds, 3),
        "consolidation_seconds_per_1000_observations": round(per_thousand, 3),
        "ingest_seconds": round(played.ingest_seconds, 3),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the JSON report for the house scenario and a generated one."""
    from emem_graph.config import MemoryConfig
    from emem_graph.ingest.embeddings import HashingEmbedder, SentenceTransformerEmbedder
    from emem_graph.memory import SpatioTemporalMemory

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2", help="model name or 'hashing'")
    parser.add_argument("--objects", type=int, default=60)
    parser.add_argument("--sightings", type=int, default=2000)
    parser.add_argument("--dir", default=None, help="where to build the memories (default: temp)")
    args = parser.parse_args(argv)
    embedder: Any = (
        HashingEmbedder(384)
        if args.embedder == "hashing"
        else SentenceTransformerEmbedder(args.embedder)
    )
    root = Path(args.dir or tempfile.mkdtemp(prefix="emem-eval-"))

    def factory(name: str) -> Callable[[ScenarioClock], SpatioTemporalMemory]:
        def build(clock: ScenarioClock) -> SpatioTemporalMemory:
            config = MemoryConfig(
                db_path=str(root / name),
                embedding_dim=embedder.dim,
                maintenance_interval=None,
                entity_extract_flush_interval=10_000,
                entity_extract_time_interval=1e9,
            )
            return SpatioTemporalMemory(
                config=config, embedding_provider=embedder, get_current_time=clock
            )

        return build

    results = {
        "embedder": args.embedder,
        "house": evaluate(house_scenario(), factory("house")),
        "generated": evaluate(
            generated_scenario(args.objects, args.sightings), factory("generated")
        ),
    }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
