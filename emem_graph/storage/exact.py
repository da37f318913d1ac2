"""ExactVectors: every observation vector as float32, by observation-index row, for the exact
search of a small memory in process.

Below the size from which LanceDB builds its ANN index, its every search scans the whole table
(flat), and a flat LanceDB search of float16 vectors cost 35 ms at 20k rows on the 2-core
machine, where a matrix product over the same vectors in float32 took 2-7 ms (measured under the
same load). The store keeps this copy while the memory holds at most ``exact_search_max_rows``
observations and searches through it; past that size it drops the copy and LanceDB's index
takes over.

Scores are the cosine similarities of the vectors LanceDB holds (the stored values, float16 or
float32, as float32 unit rows), computed as every dense score is (row_vectors.unit_rows and
cosine): a vector scores the same bits here as in a LanceDB search, so a ranking does not depend
on whether this copy had finished loading. Memory: 4 x dim bytes per observation (1,536 bytes at 384
dimensions: 77 MB at 50k observations), none past the limit.
"""

from __future__ import annotations

import numpy as np

from emem_graph.storage.row_vectors import RowVectors, cosine, unit_query, unit_rows

_INITIAL_ROWS = 1024


class ExactVectors(RowVectors[tuple[np.ndarray, np.ndarray]]):
    """Unit float32 vectors by row with a flag per row (held or not), scored against a query
    in process. Thread-safe: writers (the store's writer, the loader at open) and readers
    take one lock."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._held = np.zeros(0, dtype=bool)
        self._gone = np.zeros(0, dtype=bool)
        """Rows whose vector was deleted: a late load must not bring them back."""

    def _encode(self, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # (unit rows, usable): a vector of norm 0 or not finite is not held.
        return unit_rows(matrix)

    def _write(
        self, rows: np.ndarray, encoded: tuple[np.ndarray, np.ndarray], only_missing: bool
    ) -> None:
        units, usable = encoded
        if only_missing:
            free = ~self._held[rows] & ~self._gone[rows]
            rows, units, usable = rows[free], units[free], usable[free]
        self._matrix[rows] = units
        self._held[rows] = usable

    def _forget(self, rows: np.ndarray) -> None:
        self._held[rows] = False
        self._gone[rows] = True

    def scores(self, query: np.ndarray, n_rows: int) -> np.ndarray:
        """Cosine similarity of ``query`` to the vector of each row in [0, n_rows), NaN for a
        row without one."""
        unit = unit_query(query)
        out = np.full(n_rows, np.nan, dtype=np.float32)
        with self._lock:
            m = min(n_rows, self._held.shape[0])
            if m:
                dots = cosine(self._matrix[:m], unit)
                out[:m] = np.where(self._held[:m], dots, np.nan)
        return out

    def scores_of(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``query`` to the vector of each of ``rows`` (index rows), NaN
        for a row without one."""
        rows = np.asarray(rows, dtype=np.int64)
        unit = unit_query(query)
        out = np.full(rows.size, np.nan, dtype=np.float32)
        with self._lock:
            inside = np.flatnonzero(rows < self._held.shape[0])
            chosen = rows[inside]
            dots = cosine(self._matrix[chosen], unit)
            out[inside] = np.where(self._held[chosen], dots, np.nan)
        return out

    def __len__(self) -> int:
        """Rows holding a vector."""
        with self._lock:
            return int(self._held.sum())

    @property
    def nbytes(self) -> int:
        """Bytes held (the matrix and the flags, capacity included)."""
        with self._lock:
            return int(self._matrix.nbytes + self._held.nbytes + self._gone.nbytes)

    def _reserve(self, rows: int) -> None:
        capacity = self._held.shape[0]
        if rows <= capacity:
            return
        capacity = max(rows, capacity + capacity // 2, _INITIAL_ROWS)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[: self._matrix.shape[0]] = self._matrix
        held = np.zeros(capacity, dtype=bool)
        held[: self._held.shape[0]] = self._held
        gone = np.zeros(capacity, dtype=bool)
        gone[: self._gone.shape[0]] = self._gone
        self._matrix, self._held, self._gone = matrix, held, gone
