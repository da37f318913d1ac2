"""CellGrid (storage/cell_grid.py): rows filed by grid cell in bulk, one Python step per
cell, read back as a row-by-row filing would give them."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from emem_graph.storage.cell_grid import CELL, CellGrid

_COORDINATE = st.one_of(
    st.floats(-30.0, 30.0, allow_nan=False),
    st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.999999, 1e18, -1e18, 1e300, -1e300]),
)


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(_COORDINATE, _COORDINATE), min_size=0, max_size=60),
        min_size=1,
        max_size=5,
    )
)
def test_bulk_filing_equals_filing_row_by_row(batches: list[list[tuple[float, float]]]) -> None:
    """Batches of points (cells met again in later batches, a cell's rows split across
    batches, coordinates near cell edges, past int64's cells, -0.0) end up in the cells a
    row-by-row filing gives, each cell's rows ascending; ring() and covering() read them."""
    grid = CellGrid()
    expected: dict[tuple[int, int], list[int]] = {}
    start = 0
    for batch in batches:
        xs = np.array([p[0] for p in batch], dtype=np.float64)
        ys = np.array([p[1] for p in batch], dtype=np.float64)
        grid.add(start, xs, ys)
        for offset, (x, y) in enumerate(batch):
            key = (math.floor(x / CELL), math.floor(y / CELL))
            expected.setdefault(key, []).append(start + offset)
        start += len(batch)
    held = {key: rows.view().tolist() for key, rows in grid._cells.items()}
    assert held == expected
    assert len(grid) == len(expected)
    for (cx, cy), rows in expected.items():
        assert [r.tolist() for r in grid.ring(cx, cy, 0)] == [rows]
        assert rows in [r.tolist() for r in grid.covering(cx, cx, cy, cy)]
