"""RowVectors: observation vectors held in process by observation-index row.

What ExactVectors (float32, exact.py) and VectorSketch (int8, sketch.py) share: the rows a put
or clear takes (rows < 0 skipped), the order of work (encode outside the lock, then grow and write
under it) and the unit query a search scores with. Each subclass says how it encodes, writes,
forgets and grows.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

import numpy as np

Encoded = TypeVar("Encoded")
"""What a subclass makes of a batch of vectors before writing it (e.g. unit rows and flags)."""


class RowVectors(Generic[Encoded]):
    """Vectors by row with one lock: writers (the store's writer, the loader at open) and
    readers take it for the rows they touch."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._version = 0

    @property
    def version(self) -> int:
        """A number that changes with every put and clear: a score kept under it holds until
        the next write."""
        with self._lock:
            return self._version

    def put(self, rows: np.ndarray, vectors: np.ndarray, *, only_missing: bool = False) -> None:
        """Store the vectors of these rows (rows < 0 are skipped; a vector of norm 0 or not
        finite is not held).

        Args:
            rows: index rows, one per vector.
            vectors: the vectors as stored (any float type), one row each.
            only_missing: leave rows that already have a vector, or had one deleted (the
                loader at open: the writer's newer vectors win).
        """
        rows = np.asarray(rows, dtype=np.int64)
        matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        keep = rows >= 0
        rows, matrix = rows[keep], matrix[keep]
        if rows.size == 0:
            return
        encoded = self._encode(matrix)
        with self._lock:
            self._version += 1
            self._reserve(int(rows.max()) + 1)
            self._write(rows, encoded, only_missing)

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` rows now (a loader that knows how many will come)."""
        with self._lock:
            self._reserve(rows)

    def clear(self, rows: np.ndarray) -> None:
        """Forget the vectors of these rows (deleted from LanceDB; rows < 0 are skipped)."""
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[rows >= 0]
        if rows.size == 0:
            return
        with self._lock:
            self._version += 1
            self._reserve(int(rows.max()) + 1)
            self._forget(rows)

    def _encode(self, matrix: np.ndarray) -> Encoded:
        """The batch's (float32, one row per vector) form for ``_write``; runs outside the lock."""
        raise NotImplementedError

    def _write(self, rows: np.ndarray, encoded: Encoded, only_missing: bool) -> None:
        """Write an encoded batch to its rows (the lock held, the rows reserved)."""
        raise NotImplementedError

    def _forget(self, rows: np.ndarray) -> None:
        """Mark the rows deleted (the lock held, the rows reserved)."""
        raise NotImplementedError

    def _reserve(self, rows: int) -> None:
        """Grow to hold at least ``rows`` rows (the lock held)."""
        raise NotImplementedError


def unit_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(float32 unit rows, usable): each row divided by its norm; a row of norm 0 or not
    finite is not usable (left as it was). The one normalisation of every dense score, so that
    the same stored vector scores the same bits whichever path searched it (the exact copy, a
    LanceDB search, the gist and entity rows): a ranking then never depends on which path
    answered, which changes with background work (the exact copy loading after an open)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    usable = np.isfinite(norms) & (norms > 0)
    return matrix / np.where(usable, norms, 1.0)[:, None], usable


def cosine(units: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The cosine similarity of unit rows (unit_rows) to a unit query (unit_query), as
    ``units @ query`` on the calling thread (NumPy's own loop, not BLAS): a BLAS matrix-vector
    product wakes its threads, which on a busy 2-core machine took 8-12 ms for 5k-50k rows
    where one thread took 0.3-5 ms (measured side by side)."""
    product: np.ndarray = np.einsum("ij,j->i", units, query)
    return product


def unit_query(query: np.ndarray) -> np.ndarray:
    """The query as a float32 unit vector (a zero query stays zero)."""
    unit = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(unit))
    return unit / norm if norm > 0 else unit
