"""Rows of a schema table changed in place by primary key, for a graph kept up to date from
elsewhere (the fleet's replica, fleet/replica.py): set the properties of nodes that exist,
delete nodes, delete edges.

The statements are made from the schema's own table and column names, checked against the
open graph's tables first; every value travels as a parameter. Each row is one prepared
statement through the primary-key index (GraphTransaction.run_each: ~1 ms a row at 1M
observations, where a batched ``UNWIND ... MATCH`` plans a scan).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import pyarrow as pa

from emem_graph.resources import read_cypher
from emem_graph.storage.graph import GraphTransaction
from emem_graph.storage.graph_schema import schema_tables


def set_nodes(tx: GraphTransaction, table: str, rows: pa.Table) -> int:
    """Give the existing nodes of ``table`` whose ids ``rows`` names the other columns' values
    (the columns ``rows`` lacks are left as they are); returns the rows run."""
    names = [c for c in tx.columns(_known(table)) if c != "id" and c in rows.schema.names]
    if not names or rows.num_rows == 0:
        return 0
    assignments = ", ".join(f"n.`{c}` = $p{i}" for i, c in enumerate(names))
    statement = f"MATCH (n:`{table}` {{id: $id}}) SET {assignments}"
    values = rows.select(["id", *names]).to_pylist()
    params = [{"id": row["id"], **{f"p{i}": row[c] for i, c in enumerate(names)}} for row in values]
    return tx.run_each_statement(statement, params, name=f"set {table}")


_KEYS = {"Robot": "name"}
"""Primary keys other than ``id`` (schema/fleet_replica.cypher)."""
_ARROW_TYPES = {
    "STRING": pa.string(),
    "DOUBLE": pa.float64(),
    "INT64": pa.int64(),
    "FLOAT[]": pa.list_(pa.float32()),
}


def with_all_columns(tx: GraphTransaction, table: str, rows: pa.Table) -> pa.Table:
    """``rows`` with a null column for each property of ``table`` it lacks (an export leaves
    the user profile's vectors out), ready for COPY."""
    missing = {
        name: kind
        for name, kind in tx.column_types(_known(table)).items()
        if name not in rows.schema.names
    }
    for name, kind in missing.items():
        rows = rows.append_column(name, pa.nulls(rows.num_rows, _ARROW_TYPES.get(kind, pa.null())))
    return rows


def delete_nodes(tx: GraphTransaction, table: str, ids: Sequence[str]) -> int:
    """Delete the nodes of ``table`` with these ids, and their edges (absent ids: nothing)."""
    statement = f"MATCH (n:`{_known(table)}` {{id: $id}}) DETACH DELETE n"
    return tx.run_each_statement(statement, [{"id": i} for i in ids], name=f"delete {table}")


def delete_edges(
    tx: GraphTransaction, rel: str, from_table: str, to_table: str, ends: Sequence[tuple[str, str]]
) -> int:
    """Delete the ``rel`` edges from each (from key, to key) of ``ends`` (absent ones:
    nothing); a node's key is its id (a replica's Robot: its name)."""
    statement = (
        f"MATCH (a:`{_known(from_table)}` {{{_KEYS.get(from_table, 'id')}: $a}})"
        f"-[e:`{_known(rel)}`]->(b:`{_known(to_table)}` {{{_KEYS.get(to_table, 'id')}: $b}}) "
        "DELETE e"
    )
    params = [{"a": a, "b": b} for a, b in ends]
    return tx.run_each_statement(statement, params, name=f"delete {rel}")


def _known(table: str) -> str:
    if table not in _tables():
        raise ValueError(f"{table!r} is not a table of the schema")
    return table


@functools.cache
def _tables() -> frozenset[str]:
    """The tables of schema/graph.cypher and of schema/fleet_replica.cypher (a replica's)."""
    created = re.compile(r"CREATE\s+(?:NODE|REL)\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.I)
    return frozenset(schema_tables() | set(created.findall(read_cypher("schema", "fleet_replica"))))
