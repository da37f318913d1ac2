"""A small remembered house for the retrieval-tool tests: two patrols (consolidated into gists
by the library), body state, entities, one hand-written gist. Positions and texts are chosen
so each tool has something definite to find."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from graph_writes import link_observed_in, write_gist

from emem_graph import SpatioTemporalMemory

START = 1_000_000.0
KITCHEN = (2.0, 2.0)
LIVING_ROOM = (18.0, 4.0)


class Clock(Protocol):
    """A clock the test moves (conftest.SimClock)."""

    def __call__(self) -> float: ...

    def advance(self, seconds: float) -> float: ...


@dataclass
class House:
    """The memory and the ids the tests look for."""

    memory: SpatioTemporalMemory
    clock: Clock
    kitchen_episode: str
    living_episode: str
    cup: str
    chair_caption: str
    chair_entity: str
    kitchen_gist: str


def build_house(memory: SpatioTemporalMemory, clock: Clock) -> House:
    """Fill ``memory`` (whose clock is ``clock``, at START) with the house."""
    kitchen = memory.start_episode("patrol kitchen")
    cup = memory.add("a red cup on the kitchen table", 2.0, 1.5, layer_name="captions")
    clock.advance(10)
    machine = memory.add("a silver coffee machine on the counter", 1.0, 3.0, layer_name="captions")
    memory.add("2 cups, 1 appliance", 2.2, 2.0, layer_name="detections")
    memory.add_body_state("battery 90%", "battery", x=2.0, y=2.0)
    memory.end_episode(wait=True)  # consolidated now: the tests see a settled memory
    clock.advance(600)
    living = memory.start_episode("patrol living room")
    chair = memory.add("a red chair by the balcony door", 18.5, 4.0, layer_name="captions")
    clock.advance(10)
    memory.add("a grey sofa with a blanket on it", 17.0, 5.0, layer_name="captions")
    memory.add("1 chair, 1 sofa", 18.0, 4.2, layer_name="detections")
    memory.add_body_state("battery 85%", "battery", x=18.0, y=4.0)
    memory.add_body_state("cpu 41C", "cpu_temp", x=18.0, y=4.0)
    chair_entity = memory.add_entity("red chair", 18.6, 4.1, entity_type="furniture")
    memory.add_entity("coffee machine", 1.0, 3.1, entity_type="appliance")
    memory.end_episode(wait=True)
    memory.extract_entities()
    link_observed_in(memory, chair_entity, [chair])
    gist = write_gist(
        memory,
        "the kitchen: a red cup and a coffee machine",
        KITCHEN[0],
        KITCHEN[1],
        time_start=START,
        time_end=START + 10,
        observation_ids=[cup, machine],
        layer="captions",
        episode_id=kitchen,
    )
    clock.advance(30)
    return House(memory, clock, kitchen, living, cup, chair, chair_entity, gist)
