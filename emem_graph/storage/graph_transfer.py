"""A memory's graph as Parquet files and back, table by table: how ``emem-graph migrate`` moves
a memory between graph engines (kuzu and ladybug files are incompatible both ways), each side in
its own process (the two engine modules cannot share one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from emem_graph.errors import StorageError
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.graph_schema import schema_statements

MANIFEST = "manifest.json"


def export_tables(graph: GraphDB, directory: Path) -> dict[str, Any]:
    """Write every table to Parquet in the new ``directory``: one file per node table and
    per (rel table, from table, to table), rels as ``from``/``to`` primary keys then their
    properties. The engines' own EXPORT DATABASE is not the format: LadybugDB 0.22 refuses
    a rel table with several node pairs (SUMMARIZES, AT_PLACE).

    Returns:
        The manifest written beside them (``manifest.json``): per file its table, kind,
        node pair and row count.
    """
    directory.mkdir(parents=True)
    files: list[dict[str, Any]] = []
    for row in graph.query_text("CALL show_tables() RETURN name, type"):
        name, kind = row["name"], row["type"]
        info = graph.query_text(f"CALL table_info('{name}') RETURN name")
        props = [each["name"] for each in info]
        if kind == "NODE":
            returns = ", ".join(f"n.`{p}` AS `{p}`" for p in props)
            parts: list[tuple[str, str, dict[str, str]]] = [
                (f"{name}.parquet", f"MATCH (n:`{name}`) RETURN {returns}", {})
            ]
        else:
            parts = []
            for pair in graph.query_text(f"CALL show_connection('{name}') RETURN *"):
                a, b = pair["source table name"], pair["destination table name"]
                a_key = pair["source table primary key"]
                b_key = pair["destination table primary key"]
                returns = ", ".join(
                    [f"a.`{a_key}` AS `from`", f"b.`{b_key}` AS `to`"]
                    + [f"r.`{p}` AS `{p}`" for p in props]
                )
                cypher = f"MATCH (a:`{a}`)-[r:`{name}`]->(b:`{b}`) RETURN {returns}"
                parts.append((f"{name}_{a}_{b}.parquet", cypher, {"from": a, "to": b}))
        for file, cypher, pair in parts:
            table = graph.query_arrow_text(cypher)
            pq.write_table(table, directory / file)
            files.append(
                {"file": file, "table": name, "kind": kind, "rows": table.num_rows, **pair}
            )
    manifest = {"engine": graph.engine, "files": files}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def import_tables(graph: GraphDB, directory: Path) -> None:
    """Load an export_tables directory into this new graph: the schema's tables are created
    (schema/graph.cypher), then each file is copied in, node tables first, in one
    transaction (a failure leaves the graph without rows; migrate then drops it).

    Raises:
        StorageError: the graph is not new, or a file does not fit the schema.
    """
    if graph.query_text("CALL show_tables() RETURN name"):
        raise StorageError(f"{graph.path} is not empty: tables are imported into a new graph")
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    ordered = sorted(manifest["files"], key=lambda f: f["kind"] != "NODE")
    with graph.write() as tx:
        for statement in schema_statements():
            tx.run_text(statement)
    # A second transaction: copy_nodes reads the column order on a reader connection, which
    # sees committed tables only.
    with graph.write() as tx:
        for each in ordered:
            if not each["rows"]:
                continue
            rows = pq.read_table(directory / each["file"])
            if each["kind"] == "NODE":
                tx.copy_nodes(each["table"], rows)
            else:
                tx.copy_edges(each["table"], rows, from_table=each["from"], to_table=each["to"])
