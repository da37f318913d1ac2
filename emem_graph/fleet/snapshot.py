"""Snapshot: what one robot's memory holds right now, as the fleet stores it: every graph
table's rows in the fleet frame with a key and a digest per row, and the records that have a
vector (observations, gists, entities) as rows of the shared table.

The memory is read with the graph export (explore/export.py: opened read-only, vectors joined
from LanceDB) into a scratch directory; nothing of the memory is changed.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import shapely
import shapely.affinity

from emem_graph.explore.export import VECTOR_KINDS, export_memory
from emem_graph.explore.selection import NODE_TABLES
from emem_graph.fleet.frame import Frame
from emem_graph.fleet.shared_table import record_schema

POSITIONED_TABLES = ("Observation", "Gist", "Entity", "Position", "Place")
"""Node tables with x, y columns: moved into the fleet frame."""
_EDGE_KEY_EXTRA = ("from_table", "to_table")


@dataclass
class Snapshot:
    """One robot's memory as the fleet stores it.

    ``tables``: every node and rel table, in the fleet frame, each with a ``key`` column (a
    node's id; an edge's ends) and a ``digest`` column (changes when anything of the row does,
    the frame included); node tables with vectors keep them in a ``vector`` column.
    """

    robot: str
    frame: Frame
    dim: int
    tables: dict[str, pa.Table]

    def digests(self) -> pa.Table:
        """(table, key, digest) of every row: the push state."""
        parts = [
            pa.table(
                {
                    "table": pa.array([name] * table.num_rows, pa.string()),
                    "key": table.column("key"),
                    "digest": table.column("digest"),
                }
            )
            for name, table in self.tables.items()
        ]
        return pa.concat_tables(parts) if parts else empty_state()


def empty_state() -> pa.Table:
    """The push state of a robot that never pushed."""
    return pa.table({name: pa.array([], pa.string()) for name in ("table", "key", "digest")})


def read_snapshot(directory: str | Path, robot: str, frame: Frame) -> Snapshot:
    """Read the memory in ``directory`` (read-only) as ``robot``'s fleet rows.

    Raises:
        InvalidInputError: the directory holds no memory.
        StorageError: the memory cannot be opened (e.g. another process writes it).
    """
    with tempfile.TemporaryDirectory(prefix="emem-fleet-") as scratch:
        summary = export_memory(
            directory, Path(scratch) / "export", "parquet", include_vectors=True, progress=False
        )
        tables = {Path(file).stem: pq.read_table(file) for file in summary.files}
    dim = 0
    for name in VECTOR_KINDS:
        dim = dim or tables[name].schema.field("vector").type.list_size
    fingerprint = json.dumps(frame.as_list())
    keyed = {
        name: _with_digest(_keyed(name, _in_fleet_frame(name, table, frame)), fingerprint)
        for name, table in tables.items()
    }
    return Snapshot(robot=robot, frame=frame, dim=dim, tables=keyed)


def _in_fleet_frame(name: str, table: pa.Table, frame: Frame) -> pa.Table:
    if name not in POSITIONED_TABLES or table.num_rows == 0:
        return table
    x = table.column("x").to_numpy(zero_copy_only=False).astype(np.float64)
    y = table.column("y").to_numpy(zero_copy_only=False).astype(np.float64)
    fx, fy = frame.apply(x, y)
    table = table.set_column(table.schema.get_field_index("x"), "x", pa.array(fx))
    table = table.set_column(table.schema.get_field_index("y"), "y", pa.array(fy))
    if name == "Gist" and "extent_wkt" in table.schema.names:
        moved = [_moved_wkt(text, frame) for text in table.column("extent_wkt").to_pylist()]
        index = table.schema.get_field_index("extent_wkt")
        table = table.set_column(index, "extent_wkt", pa.array(moved, pa.string()))
    return table


def _moved_wkt(text: str | None, frame: Frame) -> str | None:
    if not text:
        return text
    shape = shapely.from_wkt(text)
    shape = shapely.affinity.rotate(shape, frame.yaw, origin=(0.0, 0.0), use_radians=True)
    return str(shapely.affinity.translate(shape, frame.x, frame.y).wkt)


def _keyed(name: str, table: pa.Table) -> pa.Table:
    if name in NODE_TABLES:
        key = table.column("id")
    else:
        key = pc.binary_join_element_wise(
            table.column("from").cast(pa.string()), table.column("to").cast(pa.string()), ">"
        )
        for extra in _EDGE_KEY_EXTRA:
            if extra in table.schema.names:
                key = pc.binary_join_element_wise(key, table.column(extra), "|")
    return table.append_column("key", key)


def _with_digest(table: pa.Table, fingerprint: str) -> pa.Table:
    plain = table.drop_columns(["vector"]) if "vector" in table.schema.names else table
    rows = plain.to_pylist()
    vectors: np.ndarray | None = None
    if "vector" in table.schema.names and table.num_rows:
        column = table.column("vector").combine_chunks()
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        dim = column.type.list_size
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
        vectors = np.zeros((len(column), dim), dtype=np.float32)
        vectors[valid] = flat.reshape(-1, dim)
    digests = []
    for index, row in enumerate(rows):
        h = hashlib.blake2b(digest_size=16)
        h.update(fingerprint.encode())
        h.update(json.dumps(row, sort_keys=True, default=str).encode())
        if vectors is not None:
            h.update(vectors[index].tobytes())
        digests.append(h.hexdigest())
    return table.append_column("digest", pa.array(digests, pa.string()))


SHARED_COLUMNS: dict[str, dict[str, str]] = {
    "Observation": {"text": "text", "t": "timestamp", "t_end": "timestamp"},
    "Gist": {
        "text": "text",
        "t": "time_start",
        "t_end": "time_end",
        "count": "source_observation_count",
    },
    "Entity": {
        "text": "name",
        "t": "first_seen",
        "t_end": "last_seen",
        "count": "observation_count",
    },
}
"""Where a shared-table column comes from in each vector node table, when its name differs;
the columns a table lacks are null (count: 1 for an observation)."""


def shared_rows(robot: str, name: str, table: pa.Table, push: int, dim: int) -> pa.Table:
    """The shared-table rows of a vector node table's rows (those that have a vector)."""
    table = table.filter(table.column("vector").is_valid())
    n = table.num_rows
    ids = table.column("id").to_pylist()
    # A row is one version of one record of one robot: these columns say which, whatever
    # columns of the same names the snapshot carries (its own ``key`` is the bare id, which
    # two robots copied from one memory share).
    identity: dict[str, list[object]] = {
        "row_id": [f"{robot}/{i}@{push}" for i in ids],
        "key": [f"{robot}/{i}" for i in ids],
        "robot": [robot] * n,
        "kind": [VECTOR_KINDS[name]] * n,
        "push": [push] * n,
    }
    renamed = SHARED_COLUMNS[name]
    schema = record_schema(dim)
    arrays = []
    for target in schema:
        source = renamed.get(target.name, target.name)
        if target.name in identity:
            arrays.append(pa.array(identity[target.name], target.type))
        elif source in table.schema.names:
            arrays.append(table.column(source).cast(target.type))
        elif target.name == "count":
            arrays.append(pa.array([1] * n, target.type))
        else:
            arrays.append(pa.nulls(n, target.type))
    return pa.Table.from_arrays(arrays, schema=schema)
