"""close() against every other call: MemoryClosedError, never a store's error.

After close(), every public method of the memory and of its capabilities (places, areas,
profile) raises MemoryClosedError; the methods are found by introspection, so a new one is
covered without editing this file (it needs a sample value for a new parameter name, and an
entry in EXEMPT with a reason when it rightly works after close). While close() runs, threads
adding, flushing, asking and calling the capabilities' Python APIs either finish or get
MemoryClosedError, and every add that returned is in the memory after reopening.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import MemoryClosedError

# Names that rightly answer after close(), each with why (they read no store).
EXEMPT: dict[str, dict[str, str]] = {
    "memory": {
        "close": "idempotent: a second close() returns",
        "in_use": "returns the gate itself",
        "embed": "the memory's own flush and consolidation threads embed during close's last "
        "flush; it reads no store",
        "get_tool_definitions": "describes the tools; reads no store",
        "get_tools_for_registration": "returns the tool callables, which are gated themselves",
        "dispatch_tool_call": "never raises: answers 'Error: this memory is closed' (checked)",
        "active_episode_id": "property: in-process state, reads no store",
        "current_position": "property: in-process state, reads no store",
        "consolidation": "property: the engine object; its calls are internal",
        "rejected_observations": "property: counts lines of rejected.jsonl, reads no store",
        "tools": "property: the tool set; each of its tools is gated",
        "config": "attribute",
        "read_only": "attribute: how the memory was opened, reads no store",
        "embedder": "attribute",
        "llm_client": "attribute",
        "places": "attribute: the capability (its methods are checked below)",
        "areas": "attribute: the capability (its methods are checked below)",
        "profile": "attribute: the capability (its methods are checked below)",
    },
    "capability": {
        "close": "called by the memory's close(), before the stores close",
        "observations_written": "called by the memory's flush thread, also in close's last flush",
        "forest": "property: the forest in process memory",
        "built": "property: whether the forest in process memory is empty",
        "name": "attribute",
        "tool_names": "attribute",
        "keeper": "attribute",
        "llm": "attribute",
        "current_user": "attribute",
        "texts": "attribute",
        "thresholds": "attribute",
        "last_walk": "attribute",
    },
}

# A valid value for each required parameter name (a new name fails the test until added here).
SAMPLES: dict[str, Any] = {
    "text": "a red cup",
    "x": 0.0,
    "y": 0.0,
    "layer_name": "battery",
    "name": "red cup",
    "target": "red cup",
    "goal": "red cup",
    "anchor": "red cup",
    "direction": "north",
    "concept": "red cup",
    "query": "red cup",
    "content": "a note",
    "user": "ann",
    "alias": "my cup",
    "objects": ["red cup"],
    "steps": ["move the red cup to the table"],
    "instruction": "the red cup is my favorite cup",
    "radius": 1.0,
    "max_distance": 50.0,
    "route_goal": None,
    "start": None,
    "max_detour": 30.0,
}


def _public(owner: object, exempt: dict[str, str]) -> tuple[list[str], list[str]]:
    """The public methods and properties of ``owner``'s class (and attributes) not exempt."""
    methods: list[str] = []
    properties: list[str] = []
    for name, member in inspect.getmembers(type(owner)):
        if name.startswith("_") or name in exempt:
            continue
        if isinstance(member, property | cached_property):
            properties.append(name)
        elif callable(member):
            methods.append(name)
    unlisted = [n for n in vars(owner) if not n.startswith("_") and n not in exempt]
    assert not unlisted, f"public attributes {unlisted}: list them in EXEMPT with a reason"
    return methods, properties


def _arguments(method: Callable[..., Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for parameter in inspect.signature(method).parameters.values():
        if parameter.default is inspect.Parameter.empty and parameter.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            assert parameter.name in SAMPLES, f"add a sample value for {parameter.name!r}"
            arguments[parameter.name] = SAMPLES[parameter.name]
    return arguments


def _filled(directory: Path) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(directory), maintenance_interval=None)
    memory = SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))
    for i in range(40):
        memory.add(f"a red cup number {i}", float(i % 8), float(i // 8))
    memory.add_entity("red cup", 1.0, 1.0)
    memory.start_episode("patrol")
    memory.profile.add_object_semantics("ann", "my cup", ["red cup"])
    memory.catch_up()  # the map, the area forest and the profile's grounding exist
    return memory


def test_after_close_every_public_method_raises_memory_closed(tmp_path: Path) -> None:
    memory = _filled(tmp_path / "mem")
    memory.close()
    owners: list[tuple[str, object, dict[str, str]]] = [("memory", memory, EXEMPT["memory"])]
    owners += [
        (name, getattr(memory, name), EXEMPT["capability"])
        for name in ("places", "areas", "profile")
    ]
    checked: list[str] = []
    for label, owner, exempt in owners:
        methods, properties = _public(owner, exempt)
        for name in methods:
            method = getattr(owner, name)
            with pytest.raises(MemoryClosedError):
                method(**_arguments(method))
            checked.append(f"{label}.{name}")
        for name in properties:
            with pytest.raises(MemoryClosedError):
                getattr(owner, name)
            checked.append(f"{label}.{name}")
    # Dispatch never raises: the tools of the core and of each capability answer one line.
    for tool in ("semantic_search", "navigate_to", "describe_area", "user_profile"):
        arguments = {"query": "cup"} if tool in ("semantic_search", "user_profile") else {}
        if tool == "navigate_to":
            arguments = {"concept": "cup"}
        assert memory.dispatch_tool_call(tool, arguments) == "Error: this memory is closed"
    assert len(checked) >= 50, checked  # 31 of the memory, 26 of the capabilities today
    memory.close()  # idempotent


# --- close() racing ----------------------------------------------------------------------------


class Race:
    """One memory; 4 writers (add, add_entity, flush, start_episode), 2 readers (dispatch, a
    direct tool call), one caller of the capabilities' tools and one of their Python APIs
    (profile, areas, places, get_recent); the main thread closes it once every thread is
    inside its loop."""

    THREADS = 8
    CYCLE = 6  # the most kinds of call one thread makes (api_caller)

    def __init__(self, config: MemoryConfig) -> None:
        self.memory = SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))
        self.memory.add("a red cup by the door", 1.0, 1.0)
        self.memory.profile.add_object_semantics("ann", "my cup", ["red cup"])
        self.acknowledged: list[str] = []
        self.closed = 0
        self.raw: list[str] = []
        self.lock = threading.Lock()
        self.loops = [0] * self.THREADS

    def loop(self, slot: int, label: str, step: Callable[[int], None]) -> None:
        """Run ``step(i)`` until MemoryClosedError (counted), then CYCLE more steps (each kind
        of call once more), each of which must raise it too; anything else is recorded."""
        after = 0  # steps since the first MemoryClosedError
        for i in range(100_000):
            try:
                step(i)
            except MemoryClosedError:
                with self.lock:
                    self.closed += 1
                after += 1
                if after > self.CYCLE:
                    return
                continue
            except BaseException as exc:  # every other error is a failure of the test
                self.raw.append(f"{label}: {type(exc).__name__}: {exc}")
                return
            if after:
                self.raw.append(f"{label}: step {i} succeeded after close()")
                return
            self.loops[slot] += 1

    def writer(self, k: int) -> Callable[[int], None]:
        def step(i: int) -> None:
            if i % 50 == 0:
                self.memory.flush()
            if i % 97 == 0:
                self.memory.add_entity(f"thing {k}", float(k), 0.0)
            if i % 211 == 0 and k == 0:
                self.memory.start_episode(f"episode {i}")
            text = f"writer {k} note {i}"
            self.memory.add(text, float(k), float(i % 50))
            with self.lock:
                self.acknowledged.append(text)

        return step

    def reader(self, i: int) -> None:
        self.answered("semantic_search", {"query": "note"})
        self.memory.spatial_query(0.0, float(i % 50), radius=3.0)

    def tool_caller(self, i: int) -> None:
        calls = [
            ("navigate_to", {"concept": "note"}),
            ("describe_area", {}),
            ("user_profile", {"query": "my cup"}),
            ("route_query", {"target": "note", "goal": "thing 1"}),
        ]
        self.answered(*calls[i % len(calls)])
        self.memory.locate("note")

    def api_caller(self, i: int) -> None:
        memory = self.memory
        calls: list[Callable[[], object]] = [
            lambda: memory.profile.search("my cup"),
            lambda: memory.profile.resolve_concept("my cup"),
            lambda: memory.profile.add_object_semantics("bob", f"my mug {i % 3}", ["mug"]),
            lambda: memory.areas.update(),
            lambda: memory.places.candidates("note"),
            lambda: memory.get_recent(5),
        ]
        calls[i % len(calls)]()

    def answered(self, tool: str, arguments: dict[str, Any]) -> None:
        answer = self.memory.dispatch_tool_call(tool, arguments)
        if answer == "Error: this memory is closed":
            raise MemoryClosedError(answer)
        if not isinstance(answer, str) or answer.startswith("Error"):
            raise AssertionError(f"dispatch {tool}: {answer!r}")

    def run(self, settle: float) -> None:
        steps: list[tuple[str, Callable[[int], None]]] = [
            (f"writer {k}", self.writer(k)) for k in range(4)
        ]
        steps += [("reader", self.reader), ("reader", self.reader)]
        steps += [("tools", self.tool_caller), ("api", self.api_caller)]
        threads = [
            threading.Thread(target=self.loop, args=(slot, label, step))
            for slot, (label, step) in enumerate(steps)
        ]
        for thread in threads:
            thread.start()
        # Close while every thread is inside its loop (calls in flight), not before they start.
        deadline = time.monotonic() + 30
        while min(self.loops) < 1 and not self.raw and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(settle)
        self.memory.close()
        for thread in threads:
            thread.join(timeout=60)
            assert not thread.is_alive()


def test_close_racing_writers_and_readers_raises_only_memory_closed_and_loses_nothing(
    tmp_path: Path, scale: Any, summary: list[str]
) -> None:
    # With the gate switched off (CallGate neither refusing nor waiting), every run fails
    # (measured): the capability APIs get "StorageError: the graph database is closed" after
    # close(), and in about a third of the runs a writer inside add() gets "RuntimeError: the
    # ingest buffer is stopped" (the call in flight when close() stops the buffer).
    runs = 40 if scale.long else 4
    raw: list[str] = []
    acknowledged_total = closed_total = 0
    for run in range(runs):
        config = MemoryConfig(db_path=str(tmp_path / f"race{run}"), maintenance_interval=None)
        race = Race(config)
        race.run(0.005 * (run % 4))
        with pytest.raises(MemoryClosedError):
            race.memory.add("after close", 0.0, 0.0)
        with SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384)) as again:
            rows = again.store.graph.query_text("MATCH (o:Observation) RETURN o.text AS t")
        stored = {row["t"] for row in rows}
        lost = [text for text in race.acknowledged if text not in stored]
        assert not lost, f"{len(lost)} acknowledged adds lost, e.g. {lost[:3]}"
        acknowledged_total += len(race.acknowledged)
        closed_total += race.closed
        raw += race.raw
    assert not raw, raw[:5]
    summary.append(
        f"close: raced by 4 writers + 2 readers + 2 capability callers x {runs} runs: "
        f"{acknowledged_total} adds acknowledged, 0 lost, {closed_total} MemoryClosedError, "
        "0 raw errors"
    )
