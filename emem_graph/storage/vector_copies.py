"""VectorCopies: the observation vectors the store keeps in process (the vector sketch of
storage/sketch.py, and a small memory's exact copy, storage/exact.py): loaded in the background
at open, kept in step with every vector LanceDB commits.

A mixin of MemoryStore (storage/store.py), which sets the attributes declared here at open;
storage/vector_search.py searches these copies.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from contextlib import closing
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.errors import StorageError
from emem_graph.storage.exact import ExactVectors
from emem_graph.storage.layout import VECTOR_DIR
from emem_graph.storage.release import release_free_memory
from emem_graph.storage.sketch import VectorSketch

if TYPE_CHECKING:
    from pathlib import Path

    from emem_graph.config import MemoryConfig
    from emem_graph.storage.observation_index import ObservationIndex
    from emem_graph.storage.vectors import VectorRow, VectorStore

log = logging.getLogger(__name__)

RELEASE_EVERY_BATCHES = 1
"""The vector loader at open returns freed memory to the system every this many batches (of
vectors.SCAN_BATCH rows): the C library kept ~185 MB of the scan's batches at 1M otherwise."""


class VectorCopies:
    """Loading and following the in-process copies of the observation vectors."""

    config: MemoryConfig
    root: Path
    index: ObservationIndex
    vectors: VectorStore
    _exact: ExactVectors | None
    _exact_loaded: threading.Event
    _sketch_loaded: threading.Event
    _closing: threading.Event
    _loaders: list[threading.Thread]
    _loader_lock: threading.Lock
    _sketch_deferred: bool

    def _start_loads(self) -> None:
        """Load the in-process copies of the observation vectors in the background. A memory
        searched exactly in process (at most exact_search_max_rows observations) loads its
        exact copy only: its sketch answers nothing while that copy is held, and is loaded
        once the memory grows past the limit or a caller waits for it (wait_for_sketch).
        Loading both at open took ~250 ms of a 20k memory's two cores beside its first
        query; the exact copy alone ~150 ms."""
        sketch = self.index.sketch
        if self._exact is not None and len(self.index) > 0:
            self._sketch_deferred = sketch is not None
            self._start_loader([self._exact])
        else:  # a new memory's copies fill as it is written: nothing to defer
            self._start_loader([c for c in (self._exact, sketch) if c is not None])

    def _start_loader(self, copies: list[ExactVectors | VectorSketch]) -> None:
        if not copies:
            return
        thread = threading.Thread(
            target=self._load_copies, args=(copies,), name="emem-sketch", daemon=True
        )
        self._loaders.append(thread)
        thread.start()

    def _load_deferred_sketch(self) -> None:
        """Start loading the sketch if it was left for later (see _start_loads); once."""
        with self._loader_lock:
            if not self._sketch_deferred or self._closing.is_set():
                return
            self._sketch_deferred = False
            sketch = self.index.sketch
            if sketch is not None:
                self._start_loader([sketch])

    def wait_for_sketch(self, timeout: float | None = None) -> bool:
        """Wait until the vector sketch holds every observation vector of the open, and the
        exact copy of a small memory too (both are loaded in the background, a small memory's
        sketch only from this call or once the memory grows past exact_search_max_rows;
        LanceDB answers meanwhile). True when loaded, False on timeout or with the sketch
        off."""
        if self.index.sketch is None:
            return False
        self._load_deferred_sketch()
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._sketch_loaded.wait(timeout):
            return False
        if self._exact is None:
            return True
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        return self._exact_loaded.wait(left)  # the exact copy, loaded on its own

    def _follow_vectors(
        self, rows: Sequence[VectorRow], stored: np.ndarray | None, deleted: Sequence[str]
    ) -> None:
        """Keep the sketch and the exact copy with the observation vectors LanceDB holds (a
        VectorStore listener, in the writer's thread): the stored values, as the loader at
        open reads them. The exact copy is dropped once the memory has grown past
        exact_search_max_rows."""
        exact = self._exact
        if exact is not None and len(self.index) > self.config.exact_search_max_rows:
            self._exact = exact = None
            self._load_deferred_sketch()  # areas are searched with it from now on
        copies = [c for c in (self.index.sketch, exact) if c is not None]
        if not copies:
            return
        chosen = [at for at, r in enumerate(rows) if r.kind == "observation"]
        if chosen and stored is not None:
            placed = self.index.rows_of([rows[at].id for at in chosen])
            for copy in copies:
                copy.put(placed, stored[chosen])
        if deleted:
            gone = self.index.rows_of(list(deleted))
            for copy in copies:
                copy.clear(gone)

    def _load_copies(self, copies: list[ExactVectors | VectorSketch]) -> None:
        """Fill these copies (the sketch, the exact copy) with the observation vectors
        LanceDB holds (in the background: 4-5 s at 1M observations). Vectors the writer put
        meanwhile win."""
        sketch = next((c for c in copies if c is self.index.sketch), None)
        exact = next((c for c in copies if c is self._exact), None)
        copies = list(copies)
        batches_read = 0
        try:
            if copies:
                for copy in copies:
                    copy.reserve(len(self.index))  # once, not grown batch by batch
                with closing(self.vectors.scan_vectors("observation")) as batches:
                    for ids, vectors in batches:
                        if self._closing.is_set():
                            return
                        if exact is not None and self._exact is None:
                            copies.remove(exact)  # grown past the limit meanwhile
                            exact = None
                            if not copies:
                                return
                        finite = np.isfinite(vectors).all(axis=1)
                        if not finite.all():
                            # Bytes damaged inside a data file (Lance keeps no checksums):
                            # such rows are left to LanceDB, which ranks them last.
                            log.warning(
                                "%d stored vectors hold NaN or infinity (a damaged vector "
                                "file); delete %s to have them rebuilt from the graph",
                                int((~finite).sum()),
                                self.root / VECTOR_DIR,
                            )
                            ids = [i for i, ok in zip(ids, finite, strict=True) if ok]
                            vectors = vectors[finite]
                        placed = self.index.rows_of(ids)
                        for copy in copies:
                            copy.put(placed, vectors, only_missing=True)
                        batches_read += 1
                        if batches_read % RELEASE_EVERY_BATCHES == 0:
                            release_free_memory()  # the scan's batches, as it goes
                release_free_memory()
                if sketch is not None:
                    self._sketch_loaded.set()
                if exact is not None:
                    self._exact_loaded.set()
        except (StorageError, OSError, RuntimeError, ValueError) as exc:
            # Searches go on through LanceDB: slower in large areas, never wrong.
            log.warning("vector sketch not loaded, areas are searched by LanceDB: %s", exc)
