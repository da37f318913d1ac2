"""BackgroundWorker: one daemon thread for consolidation jobs and scheduled upkeep.

Jobs (an episode to consolidate, a batch of entities to extract) run one at a time in the order
submitted; scheduled tasks (extraction by time, maintenance) run when their interval has passed
on the memory's injected clock, checked every ``poll`` wall-clock seconds so that a simulated
clock drives them. An exception in a job or task is logged and the thread carries on.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class _Scheduled:
    name: str
    interval: float
    action: Callable[[], Any]
    last_run: float


@dataclass
class _Job:
    name: str
    action: Callable[[], Any]
    future: Future[Any]


class BackgroundWorker:
    """Runs submitted jobs and scheduled tasks on one daemon thread.

    Args:
        clock: the memory's clock (seconds); schedules are measured on it.
        poll: wall-clock seconds between checks of the schedule.
        name: the thread's name.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        poll: float = 0.1,
        name: str = "emem-consolidation",
    ) -> None:
        self._clock = clock
        self._poll = poll
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._scheduled: list[_Scheduled] = []
        self._lock = threading.Lock()
        self._stopping = False
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(self, name: str, interval: float, action: Callable[[], Any]) -> None:
        """Run ``action`` every ``interval`` clock seconds (first run one interval from now)."""
        with self._lock:
            self._scheduled.append(_Scheduled(name, interval, action, self._clock()))

    def submit(self, name: str, action: Callable[[], Any]) -> Future[Any]:
        """Queue a job; its Future completes with the job's result or exception.

        Raises:
            RuntimeError: the worker is stopping.
        """
        future: Future[Any] = Future()
        with self._lock:
            if self._stopping:
                raise RuntimeError("the consolidation worker is stopped")
            self._jobs.put(_Job(name, action, future))
        return future

    def stop(self) -> None:
        """Run every job submitted before it (their Futures complete), then stop the thread
        (idempotent)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._jobs.put(None)
        self._thread.join()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._poll)
            except queue.Empty:
                # Only stop()'s None ends the loop: a job submitted between this look and
                # stop() is queued ahead of it, and is run.
                job = _IDLE
            if job is None:
                return
            if job is not _IDLE:
                self._run_job(job)
            self._run_due()

    def _run_job(self, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        try:
            result = job.action()
        except Exception as exc:
            self.failures += 1
            log.exception("consolidation job %s failed: %s", job.name, exc)
            job.future.set_exception(exc)
        else:
            job.future.set_result(result)

    def _run_due(self) -> None:
        with self._lock:
            if self._stopping:
                return
            try:
                now = self._clock()
            except Exception as exc:  # a clock that gives no time now: try again next round
                log.warning("scheduled work skipped: %s", exc)
                return
            due = [task for task in self._scheduled if now - task.last_run >= task.interval]
            for task in due:
                task.last_run = now
        for task in due:
            try:
                task.action()
            except Exception as exc:
                self.failures += 1
                log.exception("scheduled %s failed: %s", task.name, exc)


_IDLE = _Job("idle", lambda: None, Future())
