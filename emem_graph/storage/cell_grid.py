"""CellGrid: row numbers filed by square grid cell, so that an area read looks at the cells a
circle covers instead of at every row (the observation index's spatial index).

A cell is (floor(x / CELL), floor(y / CELL)); cells exist only where rows are, and each holds
its rows in ascending order. The grid holds no lock: its owner (ObservationIndex) adds and
reads under its own.
"""

from __future__ import annotations

import math

import numpy as np

CELL = 1.0
"""Metres per side of the grid cells that area reads gather their candidate rows from. Cells
exist only where observations are. Nearest-10 within 5 m on the benchmark's patrol (index
alone, p50): 1 m cells 0.13 ms at 100k rows and 0.18 ms at 1M; 2 m 0.11 / 0.34 ms; 4 m
0.06 / 0.53 ms (a cell on the patrol route holds ten times the rows at 1M)."""
_INT64_CELLS = float(2**62)
"""Cell numbers from this magnitude on are not held as int64 (_add_far)."""


class CellGrid:
    """Rows by grid cell: filled in row order, read as arrays of row numbers per cell."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], _Rows] = {}

    def __len__(self) -> int:
        """How many cells hold a row."""
        return len(self._cells)

    def add(self, start: int, x: np.ndarray, y: np.ndarray) -> None:
        """File rows ``start``, ``start + 1``... at coordinates (x, y) under their cells."""
        if x.size == 0:
            return
        fx, fy = np.floor(x / CELL), np.floor(y / CELL)
        if max(float(np.abs(fx).max()), float(np.abs(fy).max())) >= _INT64_CELLS:
            self._add_far(start, x, y)
            return
        kx, ky = fx.astype(np.int64), fy.astype(np.int64)
        x0, y0 = int(kx.min()), int(ky.min())
        span = int(ky.max()) - y0 + 1
        if (int(kx.max()) - x0 + 1) * span < 2**62:
            keys = (kx - x0) * span + (ky - y0)  # one integer per cell: a 1-D sort
        else:
            pairs = np.stack([kx, ky], axis=1)
            keys = np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)
        order = np.argsort(keys, kind="stable")  # rows stay ascending within a cell
        ordered = keys[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        rows = order + start
        firsts = starts.tolist()
        cells = self._cells
        # One Python step per cell (a 20k patrol fills ~2,000), its rows a slice of ``rows``.
        for cx, cy, first, end in zip(
            kx[order[starts]].tolist(),
            ky[order[starts]].tolist(),
            firsts,
            [*firsts[1:], order.size],
            strict=True,
        ):
            cell = cells.get((cx, cy))
            if cell is None:
                cells[(cx, cy)] = _Rows(rows[first:end])
            else:
                cell.extend(rows[first:end])

    def ring(self, cx: int, cy: int, ring: int) -> list[np.ndarray]:
        """The rows of each non-empty cell at Chebyshev distance ``ring`` from cell (cx, cy)."""
        cells = [self._cells.get(key) for key in _ring_keys(cx, cy, ring)]
        return [cell.view() for cell in cells if cell is not None]

    def covering(self, x0: int, x1: int, y0: int, y1: int) -> list[np.ndarray]:
        """The rows of each non-empty cell from (x0, y0) to (x1, y1), both ends included."""
        return [
            cell.view()
            for kx in range(x0, x1 + 1)
            for ky in range(y0, y1 + 1)
            if (cell := self._cells.get((kx, ky))) is not None
        ]

    def _add_far(self, start: int, x: np.ndarray, y: np.ndarray) -> None:
        """add() for a batch with cells beyond int64 (coordinates past about 1e19 m are
        accepted, e.g. 1e308): each row filed under Python-int cells, as reads compute them."""
        for at, (px, py) in enumerate(zip(x.tolist(), y.tolist(), strict=True)):
            key = (math.floor(px / CELL), math.floor(py / CELL))
            cell = self._cells.get(key)
            if cell is None:
                cell = self._cells[key] = _Rows()
            cell.extend(np.array([start + at], dtype=np.int64))


def _ring_keys(cx: int, cy: int, ring: int) -> list[tuple[int, int]]:
    """The grid cells at Chebyshev distance ``ring`` from cell (cx, cy)."""
    if ring == 0:
        return [(cx, cy)]
    side = range(-ring, ring + 1)
    keys = [(cx + d, cy - ring) for d in side] + [(cx + d, cy + ring) for d in side]
    keys += [(cx - ring, cy + d) for d in side[1:-1]] + [(cx + ring, cy + d) for d in side[1:-1]]
    return keys


class _Rows:
    """A growing array of row numbers (a grid cell's). Readers keep the array they took:
    growing makes a new one."""

    def __init__(self, rows: np.ndarray | None = None) -> None:
        if rows is None:
            self._rows = np.empty(16, dtype=np.int64)
            self._n = 0
        else:  # a copy, grown as extend() grows
            self._rows = np.empty(max(16, rows.size), dtype=np.int64)
            self._rows[: rows.size] = rows
            self._n = rows.size

    def extend(self, rows: np.ndarray) -> None:
        end = self._n + rows.size
        if end > self._rows.size:
            grown = np.empty(max(end, 2 * self._rows.size), dtype=np.int64)
            grown[: self._n] = self._rows[: self._n]
            self._rows = grown
        self._rows[self._n : end] = rows
        self._n = end

    def view(self) -> np.ndarray:
        return self._rows[: self._n]
