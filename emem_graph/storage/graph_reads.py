"""GraphReads: small graph reads kept until the graph's next write transaction
(MemoryStore.cached_read, and the gists the store fetches by id)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from emem_graph.models import Gist
    from emem_graph.storage.graph import GraphDB

T = TypeVar("T")

GRAPH_READS_MAX = 4096
"""Results GraphReads keeps at most between two writes (then it starts over)."""


class GraphReads:
    """Small graph reads kept until the graph's next write transaction (GraphDB.generation):
    between two writes (two flushes or consolidations) the same question gets the same answer
    without a round trip. Thread-safe; a read racing a write is kept under the generation
    taken before it, so it is dropped at the write's end (GraphDB.write)."""

    def __init__(self, graph: GraphDB) -> None:
        self._graph = graph
        self._lock = threading.Lock()
        self._generation = -1
        self._values: dict[tuple[Any, ...], Any] = {}
        self._gists: dict[str, Gist] = {}

    def _current(self) -> int:
        """The graph's generation, with the kept results cleared when it moved (under _lock)."""
        generation = self._graph.generation
        if generation != self._generation or len(self._values) > GRAPH_READS_MAX:
            self._values.clear()
            self._gists.clear()
            self._generation = generation
        return generation

    def get(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        """``read()``'s result under ``key``: the kept one, else read now (and kept)."""
        with self._lock:
            generation = self._current()
            if key in self._values:
                found: T = self._values[key]
                return found
        value = read()
        with self._lock:
            if self._current() == generation:
                self._values[key] = value
        return value

    def gists(
        self, ids: Sequence[str], fetch: Callable[[str, Sequence[str]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Gists by id (unknown ids left out): kept ones as copies, the others fetched."""
        with self._lock:
            generation = self._current()
            found = {i: self._gists[i].model_copy() for i in ids if i in self._gists}
        missing = [i for i in ids if i not in found]
        if missing:
            fetched = fetch("gist", missing)
            with self._lock:
                if self._current() == generation and len(self._gists) < GRAPH_READS_MAX:
                    self._gists.update({i: g.model_copy() for i, g in fetched.items()})
            found.update(fetched)
        return found
