"""Vector-table recovery from the graph, at open: the graph holds every node's text, so the
vector table can always be rebuilt from it.

open_vectors opens the LanceDB table (a damaged one is moved aside and an empty one opened);
restore_vectors re-indexes every node the table lacks and reports the damage, and tells a
graph that lost committed observations from the rows LanceDB still holds for them. The
journal replay of unfinished vector writes (MemoryStore.reconcile) stays with the writer.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from emem_graph.config import MemoryConfig
from emem_graph.errors import RecoveryNeededError, VectorStoreDamagedError
from emem_graph.filters import VectorFilter
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.health import move_aside, report_damage
from emem_graph.storage.observation_index import ObservationIndex
from emem_graph.storage.records import vector_row, vector_text
from emem_graph.storage.vectors import TABLE, VectorStore

log = logging.getLogger(__name__)

REBUILD_BATCH = 8192
"""Nodes fetched, embedded and added per LanceDB commit when the vector table is rebuilt:
a rebuild of 100k rows (hashing embedder) took 21 s with 8,192, 62 s with 1,024 (each commit
counts towards a compaction)."""
_KINDS = ("observation", "gist", "entity")
ID_CHECK_MAX = 250_000
"""Observations up to which an open compares the vector table's observation ids with the
graph's (_observations_held: ~20 ms at 20k, ~1.4 s at 1M on a loaded 2-core machine); a
larger memory compares counts only."""


def open_vectors(
    path: Path, config: MemoryConfig, dim: int, *, read_only: bool
) -> tuple[VectorStore, str | None]:
    """The vector store at ``path``; a damaged one is moved aside (read-write only) and a new,
    empty one opened, to be filled from the graph by restore_vectors. Returns the store and
    what was damaged (None when nothing was).

    Raises:
        VectorStoreDamagedError: the table is damaged and the memory is open read-only.
        RecoveryNeededError: the table is missing and the memory is open read-only (opening
            it would create it).
    """
    if read_only and not (path / f"{TABLE}.lance").is_dir():
        raise RecoveryNeededError(
            f"the memory {path.parent} has no vector table ({path.name}/{TABLE}.lance), which "
            "a read-only open cannot rebuild: open it read-write once (it re-indexes the "
            "graph), then read-only"
        )
    try:
        return _vector_store(path, config, dim, read_only=read_only), None
    except VectorStoreDamagedError as exc:
        if read_only:
            raise
        aside = move_aside(path)
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        detail = " ".join(str(cause).split())[:300]
        log.info("%s; moved it to %s", exc, aside.name)
        return _vector_store(path, config, dim), (
            f"the vector table could not be read ({type(cause).__name__}: {detail}); it was "
            f"moved to {aside.name}"
        )


def _vector_store(
    path: Path, config: MemoryConfig, dim: int, *, read_only: bool = False
) -> VectorStore:
    return VectorStore(
        path,
        dim,
        compact_every=config.vector_compact_every,
        cleanup_after=timedelta(seconds=config.vector_cleanup_after_seconds),
        ann_min_rows=config.ann_index_min_rows,
        ann_reindex_growth=config.ann_reindex_growth,
        vector_dtype=config.vector_dtype,
        read_only=read_only,
        index_cache_mb=config.vector_index_cache_mb,
        metadata_cache_mb=config.vector_metadata_cache_mb,
    )


def restore_vectors(
    root: Path,
    graph: GraphDB,
    vectors: VectorStore,
    index: ObservationIndex,
    *,
    fetch: Callable[[str, Sequence[str]], dict[str, Any]],
    embed: Callable[[list[str]], list[np.ndarray]],
    damaged: str | None,
    marked: bool = True,
) -> int:
    """Re-index from the graph every node the vector table lacks (principle 1: the graph
    holds every node's text), after a damaged table was replaced by an empty one or when
    the table holds fewer rows than the graph's nodes (a lost version). Cheap when nothing
    is missing: one count in each store. Returns the rows re-indexed.

    Without a graph mark (``marked`` False: a memory from before it), a table holding
    more rows than the graph's nodes is searched for observations the graph lacks: LanceDB
    keeps the rows a damaged graph WAL dropped, so they tell that loss once.

    Args:
        root: the memory's directory (where the damage is reported).
        fetch: the records of one kind by id, as the store reads them.
        embed: the memory's embedder over a list of texts.
    """
    counts = graph.query("vector_node_counts")[0]
    expected = sum(int(n) for n in counts.values())
    rows = vectors.count()
    if damaged is None and rows > expected and not marked:
        _report_orphans(root, vectors, index)
    observations = int(counts["observations"])
    if (
        damaged is None
        and rows >= expected
        and (observations > ID_CHECK_MAX or _observations_held(vectors, index, observations))
    ):
        return 0
    wanted = graph.query_arrow("vector_node_ids")
    held = set(vectors.all_ids())
    missing: dict[str, list[str]] = {kind: [] for kind in _KINDS}
    for node_id, kind in zip(
        wanted.column("id").to_pylist(), wanted.column("kind").to_pylist(), strict=True
    ):
        if node_id not in held:
            missing[kind].append(node_id)
    total = sum(len(ids) for ids in missing.values())
    with tqdm(
        total=total, desc="rebuilding vectors", unit="node", disable=not sys.stderr.isatty()
    ) as bar:
        for kind, ids in missing.items():
            for start in range(0, len(ids), REBUILD_BATCH):
                nodes = fetch(kind, ids[start : start + REBUILD_BATCH])
                chosen = list(nodes.values())
                embedded = embed([vector_text(n) for n in chosen])
                vectors.add([vector_row(n, v) for n, v in zip(chosen, embedded, strict=True)])
                bar.update(len(ids[start : start + REBUILD_BATCH]))
    what = damaged or (
        f"the vector table held {expected - total} of the {expected} rows the graph's nodes need"
    )
    report_damage(
        root,
        what,
        f"re-indexed {total} nodes from the graph's text with the memory's embedder",
        counter="vector_rebuilds",
    )
    return total


def _observations_held(vectors: VectorStore, index: ObservationIndex, expected: int) -> bool:
    """Whether the vector table's observation rows name ``expected`` distinct observations
    of the graph. Equal counts are not enough: Lance keeps no checksums, and one flipped bit
    in a data file turned a row's id into an id no node has (found by the random byte flips
    of tests/reliability/test_damage.py), leaving its observation unsearchable. One scan of
    the id column (~30 ms at 100k rows)."""
    ids = vectors.all_ids(VectorFilter(kinds=("observation",)))
    rows = index.rows_of(ids) if ids else np.empty(0, dtype=np.int64)
    return int(np.unique(rows[rows >= 0]).size) >= expected


def _report_orphans(root: Path, vectors: VectorStore, index: ObservationIndex) -> None:
    """Report observation rows of the vector table whose node the graph lacks (the graph
    lost committed observations; their rows are left in LanceDB, text included)."""
    ids = vectors.all_ids(VectorFilter(kinds=("observation",)))
    orphans = int((index.rows_of(ids) < 0).sum()) if ids else 0
    if orphans:
        report_damage(
            root,
            f"the vector table holds {orphans} observations the graph does not: the graph "
            "lost committed observations (a damaged write-ahead log, graph.kuzu.wal)",
            "they are lost from the memory (their rows stay in the vector table, text "
            "included); restore the memory's directory from a backup to get them back",
            counter="graph_losses",
        )
