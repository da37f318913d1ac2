"""moto's S3 server as a stand-in for S3 in the fleet's tests and benchmark, with S3's one
guarantee the fleet relies on that moto lacks: a conditional put is atomic.

LanceDB commits a table version by putting its manifest with ``If-None-Match: *`` (create
only if absent); of two writers committing the same version, S3 lets one through and refuses
the other (412), which then retries on the newer version. moto 5.2 checks the condition and
stores the object in two steps on a threaded server, so two concurrent commits of one version
can both succeed there: the later manifest replaces the earlier, and the rows of the earlier
commit vanish from the table. That is moto's race, not the fleet's (measured: with a 30 ms
pause between moto's check and its store, 6 rounds of four robots racing to create and append
lost rows in all 6; with the same pause and conditional puts made atomic, 8 of 8 kept every
row), and it made test_robots_creating_and_appending_at_once_lose_no_row fail about once in
twenty CI runs. ``atomic_conditional_puts`` serialises moto's conditional puts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

CONDITIONS = ("If-None-Match", "If-Match")
"""The headers that make a put conditional."""


@contextmanager
def atomic_conditional_puts() -> Iterator[None]:
    """While open, moto's S3 server (in this process) checks a conditional put's condition
    and stores the object as one step, as S3 does: one of several concurrent
    ``If-None-Match: *`` puts of a key succeeds, the others get 412."""
    from moto.s3 import responses

    original: Callable[[Any], Any] = responses.S3Response.put_object
    lock = threading.Lock()

    def put_object(self: Any) -> Any:
        if any(self.headers.get(name) for name in CONDITIONS):
            with lock:
                return original(self)
        return original(self)

    responses.S3Response.put_object = put_object  # type: ignore[method-assign]
    try:
        yield
    finally:
        responses.S3Response.put_object = original  # type: ignore[method-assign,assignment]
