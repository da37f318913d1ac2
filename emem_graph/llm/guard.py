"""LLMGuard: calls to the LLM that are bounded in time, abandoned at shutdown, and never raise.

Every call runs on its own short-lived daemon thread while the caller waits, so a hung or slow
server cannot hold the consolidation worker past ``timeout`` nor block close(): the caller gives
up and uses the fallback; the abandoned call ends with its own request timeout. Within one job,
the first failure (other than a malformed answer) sends the remaining calls of that job straight
to the fallback: an unreachable server costs its timeout once per job, not once per gist.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from emem_graph import validation
from emem_graph.llm.client import LLMClient, MalformedAnswerError

log = logging.getLogger(__name__)


class LLMGuard:
    """Wraps an optional LLMClient; ``call`` returns None whenever the fallback must be used.

    Args:
        client: the LLM, or None (fallbacks only).
        timeout: seconds a call may take in all (its retries included).
    """

    def __init__(self, client: LLMClient | None, *, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        self._stopping = threading.Event()
        self._local = threading.local()
        self.calls = 0
        self.failures = 0

    @property
    def enabled(self) -> bool:
        """True while there is an LLM to ask (none configured, or shutting down: False)."""
        return self.client is not None and not self._stopping.is_set()

    @contextmanager
    def job(self) -> Iterator[None]:
        """Scope of one job: a failure inside it disables the LLM for the rest of the job
        (nested scopes belong to the outermost one)."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.failed = False
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                self._local.failed = False

    def stop(self) -> None:
        """Stop asking the LLM (calls in flight are abandoned; the fallback answers)."""
        self._stopping.set()

    def call(self, method: str, *args: Any) -> Any | None:
        """``client.method(*args)``, or None when there is no LLM, it failed earlier in this
        job, it raised, it ran past ``timeout``, or the memory is closing."""
        if not self.enabled or getattr(self._local, "failed", False):
            return None
        function = getattr(self.client, method, None)
        if function is None:
            return None
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["value"] = function(*args)
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        self.calls += 1
        threading.Thread(target=target, name=f"emem-llm-{method}", daemon=True).start()
        deadline = time.monotonic() + self.timeout
        while not done.wait(0.05):
            if self._stopping.is_set() or time.monotonic() >= deadline:
                break
        if not done.is_set():
            why = "closing" if self._stopping.is_set() else f"no answer in {self.timeout:.1f} s"
            self._failed(method, why)
            return None
        if "error" not in box:
            bad = validation.unstorable(box["value"])
            if bad is not None:  # it would fail every write it went into, retried forever
                box["error"] = MalformedAnswerError(f"the answer holds {bad}")
        if "error" in box:
            error = box["error"]
            # A malformed answer says nothing about the next request; anything else (timeouts,
            # refused connections, server errors) will fail again in this job.
            self._failed(method, f"{type(error).__name__}: {error}")
            if isinstance(error, MalformedAnswerError):
                self._local.failed = False
            return None
        return box["value"]

    def _failed(self, method: str, why: str) -> None:
        """Count the failure and switch this job to the fallback."""
        self.failures += 1
        self._local.failed = True
        log.warning("LLM %s failed (%s); using the built-in fallback", method, why)
        return None
