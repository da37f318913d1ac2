"""A note store_specific_memory answers "Stored memory <id>" for is durable when the answer is
given: a process killed (SIGKILL) right after the answer still has the note when the memory is
opened again, through dispatch_tool_call (a planner) and through the facade's method. A note
that cannot be written is answered with an error that says so, never "Stored"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import StorageError

WRITER = Path(__file__).with_name("note_writer.py")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
START_S = 60.0
NOTES = [f"note {i}: the spare key is in drawer {i}" for i in range(5)]
T = 1_700_000_000.0


def notes_found(db_path: Path, acknowledged: dict[str, str]) -> dict[str, str | None]:
    """What a fresh open of ``db_path`` holds for each acknowledged note id (its text)."""
    with SpatioTemporalMemory(str(db_path), embedding_provider=HashingEmbedder(384)) as memory:
        store = memory.store
        found = {note_id: store.get_observation(note_id) for note_id in acknowledged}
    return {note_id: None if o is None else o.text for note_id, o in found.items()}


@pytest.mark.parametrize("door", ["dispatch", "method"])
def test_every_note_answered_stored_survives_a_kill_right_after_the_answer(
    door: str, tmp_path: Path
) -> None:
    db_path = tmp_path / "mem"
    process = subprocess.Popen(
        [sys.executable, str(WRITER), str(db_path), door],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert process.stdin is not None and process.stdout is not None
    acknowledged: dict[str, str] = {}
    try:
        assert process.stdout.readline().strip() == "READY"
        for note in NOTES:
            process.stdin.write(note + "\n")
            process.stdin.flush()
            answer = process.stdout.readline().strip()
            assert answer.startswith("Stored memory "), answer
            acknowledged[answer.split()[2]] = note
        process.send_signal(signal.SIGKILL)  # as soon as the last answer is read
        process.wait(START_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    assert notes_found(db_path, acknowledged) == acknowledged


class Failing:
    """HashingEmbedder's vectors; fails every text once ``down``, or only texts naming
    "poison" (the storage works: such a note is refused alone)."""

    dim = 64

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.down = False

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.down or any("poison" in text for text in texts):
            raise ConnectionError("embedding server unreachable")
        return self.inner.embed(texts)


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[tuple[SpatioTemporalMemory, Failing]]:
    embedder = Failing()
    config = MemoryConfig(db_path=str(tmp_path / "mem"), maintenance_interval=None)
    memory = SpatioTemporalMemory(
        config=config, embedding_provider=embedder, get_current_time=lambda: T
    )
    yield memory, embedder
    embedder.down = False
    memory.close()


@pytest.mark.parametrize("door", ["dispatch", "method"])
def test_a_note_that_cannot_be_written_yet_is_answered_not_durable(
    door: str, failing: tuple[SpatioTemporalMemory, Failing]
) -> None:
    memory, embedder = failing
    embedder.down = True
    if door == "dispatch":
        answer = memory.dispatch_tool_call("store_specific_memory", {"content": "keys in the bowl"})
    else:
        with pytest.raises(StorageError) as raised:
            memory.store_specific_memory("keys in the bowl")
        answer = f"Error: {raised.value}"
    assert answer.startswith("Error: store_specific_memory: note "), answer
    assert "is not durable yet" in answer and "Stored" not in answer and "\n" not in answer
    embedder.down = False
    memory.flush()  # the note stayed queued: written once the embedder is back
    assert "keys in the bowl" in memory.semantic_search("keys in the bowl", layer="agent_notes")


def test_a_note_the_store_refuses_is_answered_not_stored(
    failing: tuple[SpatioTemporalMemory, Failing],
) -> None:
    memory, _ = failing
    answer = memory.dispatch_tool_call("store_specific_memory", {"content": "poison note"})
    assert answer.startswith("Error: store_specific_memory: note "), answer
    assert "was not stored" in answer and "rejected.jsonl" in answer, answer
    assert memory.rejected_observations == 1
    assert memory.dispatch_tool_call(
        "store_specific_memory", {"content": "a fine note"}
    ).startswith("Stored memory ")
