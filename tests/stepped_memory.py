"""SteppedMemory: the scripted memory that test_explore_export and test_migrate build, on a clock
that each write moves on, and the entities and profile both finish it with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory

START = 1_790_000_000.0
"""The clock's start (a fixed time: the tests compare timestamps)."""


class SteppedMemory:
    """A hashing-embedder memory at ``directory`` whose clock moves ten seconds (by default) at
    each write made through ``add`` and ``step``."""

    def __init__(self, directory: Path, start: float = START) -> None:
        self.now = start
        self.memory = SpatioTemporalMemory(
            config=MemoryConfig(db_path=str(directory), maintenance_interval=None),
            embedding_provider=HashingEmbedder(384),
            get_current_time=self.clock,
        )

    def clock(self) -> float:
        """The current simulated time."""
        return self.now

    def step(self, seconds: float = 10.0) -> float:
        """Move the clock on; returns the new time."""
        self.now += seconds
        return self.now

    def add(self, text: str, x: float, y: float, **kwargs: Any) -> str:
        """Add a vision observation one step later; returns its id."""
        return self.memory.add(text, x, y, timestamp=self.step(), layer_name="vision", **kwargs)

    def finish(self) -> None:
        """Entities added by hand (the two red doors merge), extract_entities over the
        detections, a profile fact and routine; then close the memory."""
        mem = self.memory
        mem.add_entity("red door", 5.0, 5.0, timestamp=self.step())
        mem.add_entity("red door", 5.1, 5.0, timestamp=self.step())
        mem.add_entity("charging dock", -10.0, -10.0, timestamp=self.step())
        mem.extract_entities()
        mem.profile.add_object_semantics("alice", "my favorite cup", ["yellow cup"])
        mem.profile.add_user_pattern(
            "alice", "my tea", ["put the kettle on the stove", "move the cup to the table"]
        )
        mem.close()
