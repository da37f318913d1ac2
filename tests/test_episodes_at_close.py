"""Work accepted is work done: an episode ended without waiting (end_episode(wait=False)) and
the memory closed at once is summarised by the close, which finishes the queued consolidation
(with the built-in fallback when an LLM is still thinking), however the close meets the
consolidation worker: idle, between jobs or in the middle of one. An episode with nothing to
summarise (no perception observation) is closed with no gist (NULL), never left waiting."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

from sim_clock import SimClock

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.consolidation.worker import BackgroundWorker

ROUNDS = 6
EPISODES = 8


def _open(path: Path, clock: SimClock, **kwargs: Any) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(path), embedding_dim=384)
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=clock, **kwargs
    )


def _end_episodes(mem: SpatioTemporalMemory, clock: SimClock, round_: int) -> dict[str, bool]:
    """End EPISODES episodes without waiting; returns each id and whether it has something to
    summarise (every fourth holds only body state)."""
    ended: dict[str, bool] = {}
    for i in range(EPISODES):
        episode_id = mem.start_episode(f"patrol {round_}.{i}")
        perceived = i % 4 != 3
        for j in range(3):
            clock.advance(5.0)
            if perceived:
                mem.add(f"a chair in room {i}, look {j}", float(i), float(j))
            mem.add_body_state(f"battery {90 - j}%", "battery")
        assert mem.end_episode(consolidate=True, wait=False) == episode_id
        ended[episode_id] = perceived
    return ended


def _assert_summarised(path: Path, clock: SimClock, ended: dict[str, bool]) -> None:
    # A read-only open refuses a memory holding an episode whose consolidation never ran: the
    # close finished every one.
    with _open(path, clock, read_only=True) as mem:
        assert mem.store.needs_recovery() is None
        for episode_id, perceived in ended.items():
            episode = mem.store.get_episode(episode_id)
            assert episode is not None and episode.status == "completed"
            if perceived:
                assert episode.gist, (episode_id, episode.gist)
            else:
                assert episode.gist is None, (episode_id, episode.gist)


def test_episodes_ended_without_waiting_are_summarised_by_an_immediate_close(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mem"
    clock = SimClock(1_000_000.0)
    ended: dict[str, bool] = {}
    for round_ in range(ROUNDS):
        mem = _open(path, clock)
        ended.update(_end_episodes(mem, clock, round_))
        mem.close()
        _assert_summarised(path, clock, ended)


class _ThinkingLLM:
    """An LLM that never answers a summary (the guard abandons it at close); says when the
    worker is in the middle of one."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self._never = threading.Event()

    def summarize(self, texts: list[str]) -> str:
        self.asked.set()
        self._never.wait(60.0)
        return "too late"

    def synthesize(self, texts_by_layer: dict[str, list[str]]) -> str:
        return self.summarize([])

    def extract_entities(self, texts: list[str]) -> list[Any]:
        return []


def test_episodes_queued_behind_a_job_in_progress_are_summarised_by_the_close(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mem"
    clock = SimClock(1_000_000.0)
    ended: dict[str, bool] = {}
    for round_ in range(ROUNDS // 2):
        llm = _ThinkingLLM()
        mem = _open(path, clock, llm_client=llm)
        ended.update(_end_episodes(mem, clock, round_))
        assert llm.asked.wait(30.0)  # the worker is in the middle of an episode's summary
        mem.close()
        _assert_summarised(path, clock, ended)


class _QueueHeldWhenEmpty(queue.Queue[Any]):
    """The worker's job queue; the first time the worker finds it empty, the worker is held
    right there until stop() has begun: the submit and the stop of a close fall between the
    worker's look at its queue and what it does next."""

    def __init__(self, worker: BackgroundWorker) -> None:
        super().__init__()
        self._worker = worker
        self.found_empty = threading.Event()

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        try:
            return super().get(block, timeout)
        except queue.Empty:
            if not self.found_empty.is_set():
                self.found_empty.set()
                deadline = time.monotonic() + 30.0
                while not self._worker._stopping and time.monotonic() < deadline:
                    time.sleep(0.001)  # a wait for stop() to begin, not for a result
            raise


def test_a_job_submitted_as_the_worker_finds_its_queue_empty_runs_before_it_stops() -> None:
    worker = BackgroundWorker(lambda: 0.0, poll=0.01)
    held = _QueueHeldWhenEmpty(worker)
    worker._jobs = held  # taken at the worker's next look (the old queue is empty)
    assert held.found_empty.wait(30.0)
    job = worker.submit("consolidate episode", lambda: "gist")
    worker.stop()
    assert job.done() and job.result() == "gist"
