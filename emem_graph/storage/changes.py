"""GraphChange: one atomic multi-node change (graph statements plus the vector work they imply).

Consolidation writes several nodes at once: a gist, its SUMMARIZES edges, the promotion of its
observations and the episode's summary; or a batch of entity sightings with their OBSERVED_IN and
COOCCURS_WITH edges. A GraphChange lists those named-query steps and the vector-index work that
follows from them; ``MemoryStore.apply`` runs the steps and writes the VectorSync journal in ONE
graph transaction, then brings LanceDB up to date. A crash between the two leaves the journal,
which reconciliation redoes on the next open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from emem_graph.errors import StorageError

if TYPE_CHECKING:
    from emem_graph.models import Entity, EntityPosition
    from emem_graph.storage.graph import GraphTransaction
    from emem_graph.storage.vector_schema import VectorRow
    from emem_graph.storage.vectors import VectorStore

Rows = list[dict[str, Any]]


@dataclass
class _Step:
    query: str
    params: dict[str, Any] | None = None
    each: Sequence[dict[str, Any]] | None = None
    on_rows: Callable[[Rows], None] | None = None

    def run(self, tx: GraphTransaction) -> None:
        if self.each is not None:
            tx.run_each(self.query, self.each)
            return
        rows = tx.run(self.query, self.params)
        if self.on_rows is not None:
            self.on_rows(rows)


@dataclass
class GraphChange:
    """Named-query steps to run in one transaction, and the vector work they imply.

    Vector work, journalled in the same transaction and done after it commits:

    - ``upsert``: rows to insert or replace (new gists and entities, entities that moved or
      were renamed: their vector is replaced in place, never duplicated);
    - ``delete``: nodes whose vector row goes (archived observations);
    - ``retier``: nodes whose vector stays but whose tier prefilter column changes. Their journal
      entry carries no vector, so after a crash reconciliation re-embeds them from the graph.
    """

    steps: list[_Step] = field(default_factory=list)
    upserts: list[VectorRow] = field(default_factory=list)
    deletes: list[tuple[str, str]] = field(default_factory=list)
    retiers: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    entities: list[Entity] = field(default_factory=list)
    sightings: list[tuple[str, str]] = field(default_factory=list)
    stays: list[EntityPosition] = field(default_factory=list)
    dropped_stays: list[str] = field(default_factory=list)
    last_copy: tuple[str, pa.Table, str, str] | None = None

    def run(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        on_rows: Callable[[Rows], None] | None = None,
    ) -> GraphChange:
        """Add a named query. ``on_rows`` sees its rows inside the transaction: it may raise to
        roll the whole change back, or add vector work that depends on them."""
        self.steps.append(_Step(query, params, on_rows=on_rows))
        return self

    def run_each(self, query: str, rows: Sequence[dict[str, Any]]) -> GraphChange:
        """Add a named query run once per row of scalar parameters (edges by primary key)."""
        if rows:
            self.steps.append(_Step(query, each=list(rows)))
        return self

    def upsert(self, rows: Sequence[VectorRow]) -> GraphChange:
        """Insert or replace these vector rows after the commit."""
        self.upserts.extend(rows)
        return self

    def delete(self, ids: Sequence[str], kind: str) -> GraphChange:
        """Remove the vector rows of these nodes after the commit."""
        self.deletes.extend((i, kind) for i in ids)
        return self

    def retier(self, ids: Sequence[str], kind: str, tier: str) -> GraphChange:
        """Change the tier column of these nodes' vector rows after the commit."""
        self.retiers.setdefault(tier, []).extend((i, kind) for i in ids)
        return self

    def copy_edges_last(
        self, rel: str, edges: pa.Table, *, from_table: str, to_table: str
    ) -> GraphChange:
        """Bulk-insert edges (an Arrow table: from id, to id, properties) as the LAST statement
        of the transaction, after the steps and the journal: a rel-table COPY followed by a
        rollback loses every edge of its table (STORAGE-FACTS), so nothing may run after it.
        One per change.

        Raises:
            StorageError: the change has one already.
        """
        if self.last_copy is not None:
            raise StorageError("a change holds one rel-table COPY at most (it must run last)")
        if edges.num_rows:
            self.last_copy = (rel, edges, from_table, to_table)
        return self

    def follow_entities(
        self,
        entities: Sequence[Entity],
        sightings: Sequence[tuple[str, str]],
        stays: Sequence[EntityPosition] = (),
        dropped_stays: Sequence[str] = (),
    ) -> GraphChange:
        """Tell the store's in-process entity index what the steps write: the final state of
        the entities created or updated, the (entity id, observation id) OBSERVED_IN edges
        created, the final state of the stays (Position nodes) created or updated, and the
        ids of the stays deleted. Applied once the transaction commits."""
        self.entities.extend(entities)
        self.sightings.extend(sightings)
        self.stays.extend(stay.model_copy() for stay in stays)
        self.dropped_stays.extend(dropped_stays)
        return self

    @property
    def empty(self) -> bool:
        return not (self.steps or self.upserts or self.deletes or self.retiers or self.last_copy)

    def run_steps(self, tx: GraphTransaction) -> None:
        """Run every step in order inside ``tx`` (the caller owns the transaction)."""
        for step in self.steps:
            step.run(tx)

    def journal(self) -> pa.Table | None:
        """The VectorSync rows of this change (id, kind, op, vector), or None when none.

        A node listed twice keeps its last entry (a delete wins over an earlier retier).
        """
        entries: dict[str, tuple[str, str, np.ndarray | None]] = {}
        for tier_entries in self.retiers.values():
            for node_id, kind in tier_entries:
                entries[node_id] = (kind, "upsert", None)
        for row in self.upserts:
            entries[row.id] = (row.kind, "upsert", np.asarray(row.vector, dtype=np.float32))
        for node_id, kind in self.deletes:
            entries[node_id] = (kind, "delete", None)
        if not entries:
            return None
        ids = list(entries)
        vectors = [entries[i][2] for i in ids]
        lengths = [0 if v is None else int(v.size) for v in vectors]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        flat = [v.reshape(-1) for v in vectors if v is not None]
        values = np.concatenate(flat) if flat else np.zeros(0, dtype=np.float32)
        return pa.table(
            {
                "id": pa.array(ids, type=pa.string()),
                "kind": pa.array([entries[i][0] for i in ids], type=pa.string()),
                "op": pa.array([entries[i][1] for i in ids], type=pa.string()),
                "vector": pa.ListArray.from_arrays(
                    pa.array(offsets, type=pa.int32()), pa.array(values, type=pa.float32())
                ),
            }
        )

    def journal_ids(self) -> list[str]:
        """Ids of the nodes this change journals."""
        ids = {row.id for row in self.upserts}
        ids.update(i for i, _ in self.deletes)
        for tier_entries in self.retiers.values():
            ids.update(i for i, _ in tier_entries)
        return list(ids)

    def apply_vectors(self, vectors: VectorStore) -> None:
        """Do the vector work in LanceDB (after the graph commit).

        Raises:
            StorageError: LanceDB refused a write (the journal still holds the work).
        """
        if self.upserts:
            vectors.upsert(self.upserts)
        if self.deletes:
            vectors.delete([i for i, _ in self.deletes])
        deleted = {i for i, _ in self.deletes}
        for tier, tier_entries in self.retiers.items():
            ids = [i for i, _ in tier_entries if i not in deleted]
            if ids:
                vectors.set_tier(ids, tier)


def expect_count(expected: int, what: str, column: str = "n") -> Callable[[Rows], None]:
    """An ``on_rows`` check: the query's single row reports ``expected`` in ``column``, or the
    whole change rolls back (a gist must summarize exactly the observations it was made from)."""

    def check(rows: Rows) -> None:
        found = int(rows[0][column]) if rows else 0
        if found != expected:
            raise StorageError(f"{what}: expected {expected}, the graph had {found}")

    return check
