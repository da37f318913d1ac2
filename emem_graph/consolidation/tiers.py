"""Tiers and archival: working -> short_term -> long_term -> archived.

An observation is ``working`` while it waits in the ingest buffer, ``short_term`` once written,
``long_term`` once a gist summarizes it, and ``archived`` once it is older than
archive_after_seconds: its raw text and its vector are dropped, the node and its edges stay, and
its gist keeps the content searchable. Body state is never summarized, so never archived: the
latest reading of each body layer always keeps its text.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from emem_graph.storage.changes import GraphChange, Rows

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

ARCHIVE_BATCH = 5_000
"""Observations archived per graph transaction (bounds how long one holds the writer)."""


def archive(store: MemoryStore, cutoff: float, *, batch: int = ARCHIVE_BATCH) -> int:
    """Archive the long-term observations perceived before ``cutoff``; returns how many.

    Each batch is one graph transaction (tier, text and the vector-deletion journal together),
    then one LanceDB delete.
    """
    total = 0
    while True:
        change = GraphChange()

        def journal_deletes(rows: Rows, change: GraphChange = change) -> None:
            change.delete([row["id"] for row in rows], "observation")

        change.run("archive_long_term", {"cutoff": cutoff, "limit": batch}, on_rows=journal_deletes)
        store.apply(change)
        archived = len(change.deletes)
        total += archived
        if archived < batch:
            break
    if total:
        log.info("archived %d long-term observations older than %.1f", total, cutoff)
    return total
