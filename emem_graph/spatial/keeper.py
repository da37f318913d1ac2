"""MapKeeper: keeps a memory's topological map current as observations are written.

It loads the map from the graph on open (placing the perception observations written while no
map was kept, when few), grows it in process from every written batch on the flush thread and
writes the growth to the graph in transactions of at least WRITE_LINKS observation links (and
before a tool reads the map, and at close), links entities to their nearest place before a
tool reads the map, and rebuilds the whole map on request.

Why the writes are gathered: the AT_PLACE links go in with a rel-table COPY, and Kuzu's commit
after one costs ~70-170 ms whatever its size (measured: 23 batches of 1,000 observations spent
3.9 s in those commits, 45% of a 30k ingest). The map is derived data: a crash loses at most the
unwritten links, and the next open places those observations again (catch_up). A lock
serialises the flush thread's growth with the tools' reads of the in-process PlaceMap.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from emem_graph.models import AGENT_NOTE, INTEROCEPTION
from emem_graph.spatial import places
from emem_graph.spatial.topology import MapUpdate, Place, PlaceMap, TrajectoryPoint

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.models import Observation
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

CATCH_UP_MAX = 50_000
"""At most this many unplaced observations are placed on open; more need a rebuild."""
WRITE_LINKS = 10_000
"""The map's growth is written once this many observation links wait (well under
CATCH_UP_MAX, so that a crash never leaves more unplaced than an open places)."""


class MapKeeper:
    """The topological map of one memory, in the graph and in process.

    Args:
        store: the memory's store (all writes go through it).
        config: place_spacing, place_link_radius, place_max_step.
    """

    def __init__(self, store: MemoryStore, config: MemoryConfig) -> None:
        self._store = store
        self._config = config
        self._lock = threading.RLock()
        self._map = places.load_map(store, config)
        self._entities: tuple[Any, ...] | None = None
        self._pending = MapUpdate()
        if store.read_only:
            # The observations a stopped writer left unplaced are placed in process only
            # (the map a read-write open would have, nothing written).
            places.catch_up(store, self._map, CATCH_UP_MAX, write=False)
        else:
            placed = places.catch_up(store, self._map, CATCH_UP_MAX)
            if placed is None:
                log.warning(
                    "the topological map misses more than %d observations: run "
                    "`emem-graph places DIR --rebuild` to build it",
                    CATCH_UP_MAX,
                )
            elif placed:
                log.info("placed %d observations written while no map was kept", placed)

    # --- growth --------------------------------------------------------------------------------

    def observations_written(self, observations: Sequence[Observation]) -> None:
        """Grow the map from a written batch: its perception observations, in time order (written
        to the graph once WRITE_LINKS links wait)."""
        points = [
            TrajectoryPoint(o.id, o.x, o.y, o.z, o.timestamp)
            for o in sorted(observations, key=lambda o: (o.timestamp, o.id))
            if o.source_type not in (INTEROCEPTION, AGENT_NOTE)
        ]
        if not points:
            return
        with self._lock:
            self._pending.merge(self._map.extend(points))
            if len(self._pending.links) >= WRITE_LINKS:
                self.write_pending()

    def write_pending(self) -> None:
        """Write the map's growth not yet in the graph (one transaction).

        Raises:
            StorageError: the graph refused it; the in-process map is reloaded from the graph
                and the observations it would have placed are placed at the next open.
        """
        with self._lock:
            if self._pending.empty:
                return
            update, self._pending = self._pending, MapUpdate()
            try:
                places.write_update(self._store, update)
            except BaseException:
                # The in-process map must not run ahead of the graph.
                self._map = places.load_map(self._store, self._config)
                raise

    def sync_entities(self) -> int:
        """Write the map's pending growth, then link entities added or moved since the last
        call to their nearest place (nothing on a read-only memory: the links are derived
        data no tool reads; the tools place entities with the in-process map)."""
        if self._store.read_only:
            return 0
        with self._lock:
            self.write_pending()
            signature = places.entity_signature(self._store)
            if signature == self._entities and len(self._map):
                return 0
            linked = places.link_entities(self._store, self._map)
            if len(self._map):
                self._entities = signature
            return linked

    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Build the map again from every perception observation; returns the place count."""
        with self._lock:
            self._pending = MapUpdate()  # the rebuild places every observation again
            self._map = places.rebuild(self._store, self._config, progress)
            self._entities = places.entity_signature(self._store)
            return len(self._map)

    # --- reads ---------------------------------------------------------------------------------

    def nearest(self, x: float, y: float) -> tuple[Place, float] | None:
        """The place nearest (x, y) and its distance, or None when the map is empty."""
        with self._lock:
            return self._map.nearest(x, y)

    def size(self) -> int:
        """How many places the map has."""
        with self._lock:
            return len(self._map)

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The map as arrays: place positions (n, 2), edge ends a, b (indexes), distances,
        and the place ids in index order (for the SciPy baseline and the picture)."""
        with self._lock:
            a, b, d = self._map.edge_arrays()
            return self._map.positions(), a, b, d, [p.id for p in self._map.places]

    @property
    def place_map(self) -> PlaceMap:
        """The in-process map (read it under no concurrent writes: tests, evaluation)."""
        return self._map
