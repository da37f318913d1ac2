"""ObservationSnapshot: the observation index's numeric columns as they were when a read began,
and the row arithmetic a read does on them (time windows by bisection, squared distances).

A snapshot holds the index's arrays, not copies: the index never writes into an array past a
reader's row count, and a tier change writes a new tier column (storage/observation_columns.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ObservationSnapshot:
    """The first ``n`` rows of the numeric columns, as they were when the read began."""

    n: int
    x: np.ndarray
    y: np.ndarray
    t: np.ndarray
    layer: np.ndarray
    body: np.ndarray
    tier: np.ndarray
    sorted: bool = False
    """Whether t never decreases from row to row (a robot writes in time order)."""
    offset: int = 0
    """Row of the whole index that row 0 here is (a time window's slice)."""

    rows_of_whole: np.ndarray | None = None
    """Rows of the whole index of each row here, when not a contiguous slice (take())."""

    def rows(self, local: np.ndarray) -> np.ndarray:
        """Rows of the whole index of these rows of the snapshot."""
        if self.rows_of_whole is not None:
            return self.rows_of_whole[local]
        return local + self.offset

    def take(self, local: np.ndarray) -> ObservationSnapshot:
        """These rows only (sorted row numbers of this snapshot)."""
        return ObservationSnapshot(
            int(local.size),
            self.x[local],
            self.y[local],
            self.t[local],
            self.layer[local],
            self.body[local],
            self.tier[local],
            False,
            0,
            self.rows(local),
        )

    def window(self, after: float | None, before: float | None) -> ObservationSnapshot:
        """The rows of [after, before] and maybe more: a slice found by bisection when the
        rows are in time order (the caller still filters by time), else every row."""
        if not self.sorted or (after is None and before is None):
            return self
        lo = 0 if after is None else int(np.searchsorted(self.t, after, side="left"))
        hi = self.n if before is None else int(np.searchsorted(self.t, before, side="right"))
        hi = max(lo, hi)
        return ObservationSnapshot(
            hi - lo,
            self.x[lo:hi],
            self.y[lo:hi],
            self.t[lo:hi],
            self.layer[lo:hi],
            self.body[lo:hi],
            self.tier[lo:hi],
            True,
            self.offset + lo,
        )


def squared_distance(snap: ObservationSnapshot, x: float, y: float) -> np.ndarray:
    """Squared distance of every row of ``snap`` to (x, y). Coordinates up to 1e308 are
    accepted: far apart, the square overflows to inf (never within a radius), quietly, as
    the graph's own arithmetic does."""
    with np.errstate(over="ignore", invalid="ignore"):
        d2: np.ndarray = (snap.x - x) ** 2 + (snap.y - y) ** 2
    return d2
