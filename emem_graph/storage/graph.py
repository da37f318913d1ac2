"""GraphDB: the Kuzu property graph, the source of truth. The only module that imports kuzu."""

from __future__ import annotations

import importlib.util  # noqa: F401  (kuzu's COPY FROM <arrow> needs importlib.util loaded)
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kuzu
import pyarrow as pa

from emem_graph.errors import SchemaVersionError, StorageError
from emem_graph.resources import read_cypher

SCHEMA_NAME = "graph"
COPY_MIN_ROWS = 5_000
"""From this many rows a node batch is written with COPY FROM Arrow (fixed cost ~20 ms, then
~100k rows/s) instead of UNWIND ... CREATE (~22k rows/s): the crossover measured here."""

_VERSION_RE = re.compile(r"^//\s*schema_version:\s*(\d+)\s*$", re.MULTILINE)


def schema_version() -> int:
    """The schema version declared in the header of schema/graph.cypher."""
    match = _VERSION_RE.search(read_cypher("schema", SCHEMA_NAME))
    if match is None:
        raise StorageError("schema/graph.cypher has no '// schema_version: N' header")
    return int(match.group(1))


def _schema_statements() -> list[str]:
    lines = [
        line
        for line in read_cypher("schema", SCHEMA_NAME).splitlines()
        if not line.lstrip().startswith("//")
    ]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


class GraphTransaction:
    """A write transaction on the writer connection; use through GraphDB.write()."""

    def __init__(self, graph: GraphDB, connection: kuzu.Connection) -> None:
        self._graph = graph
        self._connection = connection

    def run(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named query from queries/ inside this transaction."""
        return self._graph._run(self._connection, read_cypher("queries", name), params)

    def copy_nodes(self, table: str, rows: pa.Table) -> None:
        """Bulk-insert node rows with COPY FROM Arrow; columns are reordered to the schema."""
        ordered = rows.select(self._graph.columns(table))
        self._connection.execute(f"COPY {table} FROM $rows", {"rows": ordered})

    def copy_edges(self, rel: str, edges: pa.Table, *, from_table: str, to_table: str) -> None:
        """Bulk-insert edges from an Arrow table whose first two columns are from/to ids."""
        self._connection.execute(
            f"COPY {rel} FROM $edges (from='{from_table}', to='{to_table}')", {"edges": edges}
        )


class GraphDB:
    """One Kuzu database: schema on open, named queries, one writer, per-thread readers.

    Kuzu allows a single write transaction at a time and loses writes when two Database objects
    share a path in one process, so this class holds the only Database and serialises writes with
    a lock. Reads run on a connection owned by the calling thread and see committed data.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = kuzu.Database(str(path), read_only=read_only)
        except RuntimeError as exc:
            raise StorageError(f"cannot open graph database {path}: {exc}") from exc
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[kuzu.Connection] = []
        self._connections_lock = threading.Lock()
        self._columns: dict[str, list[str]] = {}
        self._writer = None if read_only else self._new_connection()
        self._closed = False

    # --- lifecycle -----------------------------------------------------------------------------

    def ensure_schema(self, info: dict[str, str]) -> dict[str, str]:
        """Create the tables on a new database, or check the version of an existing one.

        Args:
            info: facts to record on a new database (e.g. embedding_dim); on an existing one
                each given key must match what is stored.

        Returns:
            The MemoryInfo facts as stored.

        Raises:
            SchemaVersionError: the database has another schema version or another value for
                one of ``info``'s keys.
        """
        version = str(schema_version())
        tables = {row["name"] for row in self.query_text("CALL show_tables() RETURN name")}
        if "MemoryInfo" not in tables:
            if self.read_only:
                raise SchemaVersionError(f"{self.path} is not an emem_graph database")
            for statement in _schema_statements():
                self._run(self._writer_connection(), statement, None)
            with self.write() as tx:
                for key, value in {"schema_version": version, **info}.items():
                    tx.run("set_memory_info", {"key": key, "value": value})
        stored = {row["key"]: row["value"] for row in self.query("get_memory_info")}
        if stored.get("schema_version") != version:
            raise SchemaVersionError(
                f"{self.path} was written with schema version {stored.get('schema_version')}, "
                f"this emem_graph reads version {version}; export it with the emem_graph that "
                "wrote it, or point db_path at a new directory"
            )
        for key, value in info.items():
            if key in stored and stored[key] != value:
                raise SchemaVersionError(
                    f"{self.path} was built with {key}={stored[key]}, not {value}; use the same "
                    "embedding model (or a new db_path)"
                )
        return stored

    def close(self) -> None:
        """Close every connection and the database (idempotent)."""
        if self._closed:
            return
        self._closed = True
        with self._connections_lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._db.close()

    # --- reads ---------------------------------------------------------------------------------

    def query(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named read query from queries/ on this thread's connection."""
        return self._run(self._reader(), read_cypher("queries", name), params)

    def query_text(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run Cypher text given by the developer (not built from user input) on a reader."""
        return self._run(self._reader(), cypher, params)

    def columns(self, table: str) -> list[str]:
        """Property names of a node table in schema order (COPY is positional)."""
        if table not in self._columns:
            rows = self.query_text(f"CALL table_info('{table}') RETURN name")
            self._columns[table] = [row["name"] for row in rows]
        return self._columns[table]

    # --- writes --------------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[GraphTransaction]:
        """One atomic write transaction: committed on exit, rolled back on an exception."""
        if self.read_only:
            raise StorageError("the graph is open read-only")
        connection = self._writer_connection()
        with self._write_lock:
            connection.execute("BEGIN TRANSACTION")
            try:
                yield GraphTransaction(self, connection)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    # --- internals -----------------------------------------------------------------------------

    def _writer_connection(self) -> kuzu.Connection:
        if self._closed or self._writer is None:
            raise StorageError("the graph database is closed")
        return self._writer

    def _new_connection(self) -> kuzu.Connection:
        connection = kuzu.Connection(self._db)
        with self._connections_lock:
            self._connections.append(connection)
        return connection

    def _reader(self) -> kuzu.Connection:
        if self._closed:
            raise StorageError("the graph database is closed")
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._new_connection()
            self._local.connection = connection
        return connection

    @staticmethod
    def _run(
        connection: kuzu.Connection, cypher: str, params: dict[str, Any] | None
    ) -> list[dict[str, Any]]:
        try:
            result = connection.execute(cypher, params or {})
        except RuntimeError as exc:
            raise StorageError(f"graph query failed: {exc}") from exc
        results = result if isinstance(result, list) else [result]
        last = results[-1]
        names = last.get_column_names()
        rows = [dict(zip(names, row, strict=True)) for row in last.get_all()]
        for each in results:
            each.close()
        return rows
