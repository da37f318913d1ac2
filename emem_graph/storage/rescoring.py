"""Rescoring a vector search's rows in process, so that its n-th place is cut alike on every
path.

VectorStore.search with ``rescore`` reads a margin of rows past the n it answers, each with its
stored vector, and scores them again here with the arithmetic the in-process searches use
(row_vectors.cosine: the same bits), best first and ties by id. LanceDB's own distances differ
from that arithmetic in the last bits, enough to swap near-ties between two runs on one memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from emem_graph.models import VectorHit
from emem_graph.storage.row_vectors import cosine, unit_query, unit_rows

RESCORE_MARGIN = 8
"""Rows a vector search reads past the n it answers: they are scored again in process and cut
to n there, so the n-th place is decided by the same arithmetic on every path."""
RESCORE_TIE = 1e-6
"""LanceDB distances this close to the n-th are a tie for the rescored search's cut: rows of
equal vectors differ in LanceDB's arithmetic by no more than its last bits."""


def tie_reaches_the_end(rows: list[dict[str, Any]], n: int) -> bool:
    """Whether the last row a rescored search read ties with its n-th: LanceDB chose which
    rows of that tie group it returned, so the cut by id needs all of them (the group's rows
    have equal vectors; RESCORE_TIE allows for LanceDB's last bits)."""
    if n < 1 or len(rows) <= n:
        return False
    distances = sorted(float(r["_distance"]) for r in rows)
    return distances[-1] - distances[n - 1] <= RESCORE_TIE


def rescored_hits(
    rows: list[dict[str, Any]],
    query_vector: np.ndarray,
    n: int,
    observation_scores: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
) -> list[VectorHit]:
    """The ``n`` best of ``rows`` (each with its stored ``vector``) by cosine similarity to
    ``query_vector``, best first and ties by id; rows whose vector cannot be scored are left
    out. ``observation_scores`` scores the observation rows instead (NaN: the row is left
    out)."""
    if not rows:
        return []
    stacked = np.stack([r["vector"] for r in rows])
    units, usable = unit_rows(stacked)
    scored = cosine(units, unit_query(query_vector))
    if observation_scores is not None:
        observed = np.array([r["kind"] == "observation" for r in rows], dtype=bool)
        if observed.any():
            scored[observed] = observation_scores(stacked[observed], query_vector)
            usable = usable & ~(observed & np.isnan(scored))
    scores = scored.tolist()
    ranked = sorted(
        (
            (float(score), r["id"], r["kind"])
            for r, score, ok in zip(rows, scores, usable.tolist(), strict=True)
            if ok
        ),
        key=lambda hit: (-hit[0], hit[1]),
    )
    return [VectorHit(id=i, kind=kind, score=score) for score, i, kind in ranked[:n]]
