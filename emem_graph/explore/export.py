"""export_memory: a memory, or the part a filter selects, written for other tools.

Formats: ``graphml`` and ``json`` (node-link) write one graph file (graph_files.py);
``parquet`` and ``csv`` write one file per node table and per rel table into a directory, the
Parquet node files optionally with each node's vector from LanceDB. The memory is opened
read-only (readonly.py): an export never changes it, and body state is exported like any other
observation.

Rows are read from Kuzu as Arrow and written with pyarrow rather than with Kuzu's
``COPY (MATCH ...) TO 'file'`` (which does work on a read-only database): COPY TO takes its
target only as text inside the statement, so the user's output path would have to be pasted
into Cypher, and the vectors have to be joined in from LanceDB anyway.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from pydantic import BaseModel, Field
from tqdm import tqdm

from emem_graph.errors import InvalidInputError
from emem_graph.explore.graph_files import write_graphml, write_node_link
from emem_graph.explore.readonly import ReadOnlyMemory
from emem_graph.explore.selection import (
    NODE_TABLES,
    REL_TABLES,
    Area,
    ExportFilter,
    GraphSelection,
    select_graph,
)
from emem_graph.filters import VectorFilter
from emem_graph.outputs import claim_directory, claim_file, write_replacing
from emem_graph.retrieval.timeparse import parse_time_window
from emem_graph.storage.vectors import VectorStore

ExportFormat = Literal["graphml", "json", "parquet", "csv"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)
VECTOR_KINDS = {"Observation": "observation", "Gist": "gist", "Entity": "entity"}
"""Node tables that have vectors, and their kind in the vector table."""
PER_ID_MAX = 10_000
"""Up to this many nodes of a table get their vectors by id (1,000 per lookup, each a scan of
the id column); more read the whole kind in one scan."""
_LOOKUP_CHUNK = 1_000


class ExportSummary(BaseModel):
    """What an export wrote: its files and the nodes and edges per table.

    ``vectors`` counts the node rows that got a vector (``--vectors``; archived observations
    have none).
    """

    format: ExportFormat
    out: str
    files: list[str]
    nodes: dict[str, int]
    edges: dict[str, int]
    vectors: int = 0
    filter: dict[str, Any] = Field(default_factory=dict)

    def describe(self) -> str:
        """A few lines for the command line."""
        nodes = ", ".join(f"{name} {n}" for name, n in self.nodes.items())
        edges = ", ".join(f"{name} {n}" for name, n in self.edges.items())
        where = "the whole memory" if not self.filter else json.dumps(self.filter)
        lines = [
            f"exported {where} as {self.format} to {self.out} "
            f"({len(self.files)} file{'' if len(self.files) == 1 else 's'})",
            f"nodes: {sum(self.nodes.values())} ({nodes})",
            f"edges: {sum(self.edges.values())} ({edges})",
        ]
        if self.vectors:
            lines.append(f"vectors: {self.vectors} joined into the node files")
        return "\n".join(lines)


def export_memory(
    directory: str | Path,
    out: str | Path,
    format: str,
    *,
    time_after: str | float | None = None,
    time_before: str | float | None = None,
    area: Area | None = None,
    layer: str | None = None,
    episode_id: str | None = None,
    include_vectors: bool = False,
    progress: bool = True,
) -> ExportSummary:
    """Export the memory in ``directory`` (opened read-only) to ``out``.

    With no filter the whole graph is written. With filters, the observations that match all
    of them, and the nodes linked to those (the episodes they BELONG_TO, the gists that
    SUMMARIZE them, the entities OBSERVED_IN them) with every edge among the exported nodes.

    Args:
        directory: the memory's directory.
        out: a file for ``graphml`` and ``json``; a directory (created) for ``parquet`` and
            ``csv``, which get ``<Table>.parquet`` / ``<Table>.csv`` per node and rel table.
        format: ``graphml``, ``json``, ``parquet`` or ``csv``.
        time_after, time_before: observation time bounds (inclusive): a Unix timestamp or a
            phrase the tools take ("-10m", "yesterday"), counted back from the memory's newest
            observation (a memory may have been recorded on a simulation clock).
        area: a circle (x, y, radius) or a box (xmin, ymin, xmax, ymax), in metres.
        layer: only observations of this layer.
        episode_id: only the observations that belong to this episode.
        include_vectors: add each node's vector (``vector``: fixed-size list of float32) to
            the Parquet node files of observations, gists and entities.
        progress: show progress bars on stderr.

    Returns:
        The files written and the node and edge counts per table.

    Raises:
        InvalidInputError: an unknown format, vectors asked for another format than parquet,
            a bad filter (a TimeParseError for a time that cannot be parsed, or a window whose
            time_after is later than its time_before), a directory that holds no memory, an
            output that cannot be written;
            an output inside a memory directory (or the memory itself, also through a symlink
            or ``..``), a symbolic link, an existing file no export wrote (or one changed
            since, or one with other hard links; in a directory's export too, checked for
            every file before any is written), a non-empty directory no export created
            (outputs.py).
        StorageError: the memory cannot be opened (e.g. another process writes it).
    """
    if format not in FORMATS:
        raise InvalidInputError(f"unknown export format {format!r}; use one of {FORMATS}")
    if include_vectors and format != "parquet":
        raise InvalidInputError("vectors are exported into Parquet files only: use parquet")
    target = Path(out)
    # Claimed before the memory is opened: an export never writes into a memory, nor over a
    # file or into a directory it did not create (outputs.py).
    if format in ("graphml", "json"):
        claim_file(target, "export")
    else:
        _claim_table_files(target, format, (*NODE_TABLES, *REL_TABLES))
    with ReadOnlyMemory(directory) as memory:
        # A window that ends before it starts is refused as the tools refuse it (swap them).
        after, before = parse_time_window(time_after, time_before, _memory_now(memory))
        where = ExportFilter(
            time_after=after,
            time_before=before,
            area=area,
            layer=layer,
            episode_id=episode_id,
        )
        selection = select_graph(memory.graph, where, progress=progress)
        vector_count = 0
        try:
            if format in ("graphml", "json"):
                files = [_write_graph_file(selection, target, format, memory, where, progress)]
            else:
                columns: dict[str, pa.Array] = {}
                if include_vectors:
                    columns = _vector_columns(memory, selection, progress)
                    vector_count = sum(len(c) - c.null_count for c in columns.values())
                files = _write_table_files(selection, target, format, columns, progress)
        except OSError as exc:
            raise InvalidInputError(f"cannot write the export to {target}: {exc}") from exc
    return ExportSummary(
        format=format,
        out=str(target),
        files=[str(f) for f in files],
        nodes=selection.node_counts(),
        edges=selection.edge_counts(),
        vectors=vector_count,
        filter=where.describe(),
    )


def _memory_now(memory: ReadOnlyMemory) -> float:
    """The memory's "now" for relative times: its newest observation (else the wall clock)."""
    last = memory.graph.query("observation_time_span")[0]["last_time"]
    return time.time() if last is None else float(last)


def _write_graph_file(
    selection: GraphSelection,
    target: Path,
    format: str,
    memory: ReadOnlyMemory,
    where: ExportFilter,
    progress: bool,
) -> Path:
    resolved = claim_file(target, "export")  # again: selecting took a while
    resolved.parent.mkdir(parents=True, exist_ok=True)
    graph_data: dict[str, Any] = {
        "exported_by": "emem_graph",
        "schema_version": memory.info.get("schema_version", ""),
    }
    with write_replacing(resolved) as part:
        if format == "graphml":
            if where.describe():
                graph_data["filter"] = json.dumps(where.describe())
            write_graphml(selection, part, graph_data=graph_data, progress=progress)
        else:
            if where.describe():
                graph_data["filter"] = where.describe()
            write_node_link(selection, part, graph_data=graph_data, progress=progress)
    return target


def _write_table_files(
    selection: GraphSelection,
    target: Path,
    format: str,
    vectors: dict[str, pa.Array],
    progress: bool,
) -> list[Path]:
    tables = {**selection.nodes, **selection.edges}
    paths = _claim_table_files(target, format, tables)  # again: selecting took a while
    claim_directory(target, "export")
    files: list[Path] = []
    for name, table in tqdm(
        tables.items(), desc=f"writing {format}", unit="file", disable=not progress
    ):
        if name in vectors:
            table = table.append_column("vector", vectors[name])
        with write_replacing(paths[name]) as part:
            if format == "parquet":
                pq.write_table(table, part)
            else:
                pa_csv.write_csv(table, part)
        files.append(target / f"{name}.{format}")
    return files


def _claim_table_files(target: Path, format: str, tables: Iterable[str]) -> dict[str, Path]:
    """Check the directory ``target`` and every table's file in it before any is written:
    only an export's own unchanged earlier files may be replaced (outputs.py). Returns the
    resolved path of each table's file."""
    directory = claim_directory(target, "export", create=False)
    return {name: claim_file(directory / f"{name}.{format}", "export") for name in tables}


def _vector_columns(
    memory: ReadOnlyMemory, selection: GraphSelection, progress: bool
) -> dict[str, pa.Array]:
    """The vector of each exported observation, gist and entity, null where LanceDB has none."""
    vector_type = pa.list_(pa.float32(), memory.embedding_dim)
    columns: dict[str, pa.Array] = {}
    for table_name, kind in VECTOR_KINDS.items():
        ids = selection.nodes[table_name].column("id").combine_chunks()
        if memory.vectors is None or len(ids) == 0:
            columns[table_name] = pa.nulls(len(ids), type=vector_type)
            continue
        if len(ids) <= PER_ID_MAX:
            stored = _vectors_by_id(
                memory.vectors, ids.to_pylist(), vector_type, table_name, progress
            )
        else:
            stored = memory.vectors.id_vectors(VectorFilter(kinds=(kind,)))
        positions = pc.index_in(ids, value_set=stored.column("id").combine_chunks())
        columns[table_name] = (
            stored.column("vector").combine_chunks().take(positions).cast(vector_type)
        )
    return columns


def _vectors_by_id(
    store: VectorStore,
    ids: list[str],
    vector_type: pa.FixedSizeListType,
    table_name: str,
    progress: bool,
) -> pa.Table:
    found: dict[str, np.ndarray] = {}
    chunks = range(0, len(ids), _LOOKUP_CHUNK)
    for start in tqdm(chunks, desc=f"vectors {table_name}", unit="chunk", disable=not progress):
        found.update(store.vectors_of(ids[start : start + _LOOKUP_CHUNK]))
    matrix = (
        np.stack(list(found.values())).astype(np.float32)
        if found
        else np.zeros((0, vector_type.list_size), dtype=np.float32)
    )
    flat = pa.array(matrix.reshape(-1), type=pa.float32())
    return pa.table(
        {
            "id": pa.array(list(found), type=pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vector_type.list_size),
        }
    )
