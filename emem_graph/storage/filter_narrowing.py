"""Filtered searches run under a cheaper predicate and finished in process.

A search under a filter that only excludes (source types, tiers) runs unfiltered; one under a
circle runs prefiltered by the circle's bounding box; each cuts its rows to the filter here,
falling back to the filter's own prefilter only when that cut leaves too few rows. Used by
VectorStore's vector and keyword searches (``run(predicate, limit, columns)`` is the search).
"""

from __future__ import annotations

from typing import Any

from emem_graph.filters import VectorFilter

OVERSAMPLE_MARGIN = 10
"""An exclusions-only search reads n + n/4 + this many rows unfiltered (excluding); each extra
row costs a refine read of its full vector."""


def narrowed(
    where: VectorFilter | None, n: int, run: Any, columns: list[str]
) -> list[dict[str, Any]]:
    """The rows of a search ``run(predicate, limit, columns)`` under ``where``: run under a
    cheaper predicate and finished here where that gives the same rows (excluding,
    in_area), else prefiltered by ``where`` itself."""
    if where is None:
        rows: list[dict[str, Any]] = run(None, n, columns)
        return rows
    found = excluding(where, n, lambda k, c: run(None, k, c), columns)
    if found is None:
        found = in_area(where, n, run, columns)
    if found is None:
        found = run(where.to_sql(), n, columns)
    return found


def excluding(
    where: VectorFilter,
    n: int,
    search: Any,
    columns: list[str],
) -> list[dict[str, Any]] | None:
    """A search under an exclusions-only filter, run unfiltered for ``n`` + a margin rows
    and filtered here: the n best rows that pass, or None when fewer than n of those rows
    pass while more exist (the caller then runs the prefiltered search).

    Unfiltered searches are 2-3x faster than prefiltered ones here (measured at 100k rows:
    the prefilter evaluates the predicate over every row), and the rows that pass among
    the best n + margin are exactly the best rows that pass."""
    if not where.exclusions_only:
        return None
    limit = n + n // 4 + OVERSAMPLE_MARGIN
    rows: list[dict[str, Any]] = search(limit, [*columns, "source_type", "tier"])
    kept = [r for r in rows if where.admits(r["source_type"], r["tier"])]
    if len(kept) >= n or len(rows) < limit:
        return kept[:n]
    return None


def in_area(
    where: VectorFilter, n: int, run: Any, columns: list[str]
) -> list[dict[str, Any]] | None:
    """A search under a filter with a circle, prefiltered by the circle's bounding box for
    ``n`` + n/2 + a margin rows and cut to the circle here: the n best rows in the circle,
    or None when fewer than n of those rows are in it while more exist (the caller then
    runs the circle's own prefilter). The circle covers 79% of its box, and the rows in
    the circle among the best rows in the box are the best rows in the circle."""
    loose = where.area_relaxed()
    if loose is None:
        return None
    limit = n + n // 2 + OVERSAMPLE_MARGIN
    rows: list[dict[str, Any]] = run(loose.to_sql(), limit, [*columns, "x", "y"])
    kept = [r for r in rows if where.in_circle(r["x"], r["y"])]
    if len(kept) >= n or len(rows) < limit:
        return kept[:n]
    return None
