"""GraphDB: the property graph, the source of truth. The only module that loads the graph
engine, LadybugDB 0.22 (``ladybug``, the default) or Kuzu 0.11.3 (``kuzu``, archived upstream;
LadybugDB is its maintained fork), by the name the configuration chooses (statement_runner.py
names kuzu's types only, for type checking).

It opens the database, creates or checks the schema, runs named reads, serialises write
transactions, and gives a developer statement its own connection, worker thread and watchdog.
Which engine runs is chosen in storage/graph_engine.py, the schema's text is read in
storage/graph_schema.py, the engine's errors (its open failures among them) become emem_graph
errors in storage/graph_errors.py; what runs on a developer statement's connection, and how its
plan is checked, is storage/statement_runner.py."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util  # (kuzu's COPY FROM <arrow> needs importlib.util loaded)
import logging
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from emem_graph.errors import (
    BackendUnavailableError,
    EmemGraphError,
    ReadOnlyMemoryError,
    RecoveryNeededError,
    SchemaVersionError,
    StorageError,
)
from emem_graph.resources import read_cypher
from emem_graph.storage import open_registry, probe
from emem_graph.storage.graph_engine import ENGINES, refuse_other_engine, resolve_engine
from emem_graph.storage.graph_errors import (
    CHECKPOINT_DEFERRED,
    ENGINE_ERRORS,
    QUERY_ERRORS,
    damaged_values,
    engine_error,
    open_error,
)
from emem_graph.storage.graph_schema import (
    schema_statements,
    schema_tables,
    schema_version,
    upgradable_versions,
)
from emem_graph.storage.release import release_free_memory
from emem_graph.storage.statement_runner import CypherResult, run_read_only, statement_error

if TYPE_CHECKING:
    import kuzu  # ladybug has the same API (a fork); only its types are named here

log = logging.getLogger(__name__)

_ENGINE_OPTIONS: dict[str, dict[str, Any]] = {"ladybug": {"throw_on_wal_replay_failure": False}}
"""Options of one engine's Database. LadybugDB refuses to open a database whose write-ahead log
is damaged unless told otherwise; Kuzu replays the log up to the damage and drops the rest,
and the memory reports what was lost (its high-water mark, health.py) instead of refusing the
whole memory: the same on both engines."""


def load_engine(name: str) -> ModuleType:
    """Import the engine module ``name`` (one of ENGINES) into this process.

    Raises:
        BackendUnavailableError: it is not installed, or the other engine is already loaded in
            this process (both register the same native types: the process would crash).
    """
    # One thread at a time: LadybugDB marks its native module as tried before the import
    # ends, and a second thread opening a memory meanwhile was told "not installed".
    with _ENGINE_LOAD:
        return _load_engine(name)


_ENGINE_LOAD = threading.Lock()


def _load_engine(name: str) -> ModuleType:
    others = [other for other in ENGINES if other != name and other in sys.modules]
    if others:
        raise BackendUnavailableError(
            f"graph engine {name} cannot be loaded: this process already runs {others[0]} (the "
            "two cannot share a process); open memories of one engine per process"
        )
    try:
        module = importlib.import_module(name)
        # LadybugDB loads its native module at the first Database, and falls back to a C-API
        # module when that fails: loaded now, so that a process that may read no more files
        # afterwards (the Cypher sandbox under Landlock) has it.
        warm_up = getattr(module, "get_pybind_module", None)
        if warm_up is not None and warm_up() is None:
            raise ImportError(f"{name}'s native module did not load")
        return module
    except ImportError as exc:
        raise BackendUnavailableError(
            f"graph engine {name} is not installed ({exc}); pip install 'emem-graph' (it "
            "depends on both engines)"
        ) from exc


def rows_as_list(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters with each Arrow table given as a list of row dicts, for ``UNWIND``.

    Callers build their batches as Arrow tables (the schema fixes every column's type); the
    engine reads them through ``UNWIND $rows AS r``. Not through ``LOAD FROM $rows``:
    LadybugDB 0.22.0 keeps memory for every statement that reads an Arrow parameter, about
    300 KB a statement plus about 0.7 KB a row, never given back (2,000 statements of 5 rows
    grew the resident memory by 600 MB, measured here; the same rows through ``UNWIND`` by
    5 MB, 2.4x faster). A robot's memory flushing every few seconds all day would grow
    without bound. (``UNWIND ... WITH *`` is no way around it: its plan joined 5,000 rows to
    3,000 entities in 18 s and 2.4 GB, against 1.8 s and 64 MB with the row's fields read in
    place.)
    """
    if not any(isinstance(value, pa.Table) for value in params.values()):
        return params
    return {
        key: value.to_pylist() if isinstance(value, pa.Table) else value
        for key, value in params.items()
    }


CHECKPOINT_WAL_BYTES = 512 * 1024
"""Size of the write-ahead log from which the writer checkpoints the graph after a commit and
hands the freed memory back to the system. Both engines keep memory for what was committed
since their last checkpoint, about 65 times the log's size (a robot's day on LadybugDB: a
1 MB log held 68 MB; 20,000 one-row updates held 640 MB on either engine, measured here),
and checkpoint by themselves only when the log reaches their own, much larger, threshold.
A checkpoint at 512 KB takes tens of milliseconds."""

COPY_MIN_ROWS = 5_000
"""From this many rows a node batch is written with COPY FROM Arrow (fixed cost ~20 ms, then
~100k rows/s) instead of UNWIND ... CREATE (~22k rows/s): the crossover measured here."""

PK_LOOKUP_MAX = 256
"""Up to this many ids are fetched with one primary-key lookup each. Kuzu plans
``UNWIND $ids AS i MATCH (n {id: i})`` as a scan of the whole table plus a hash join: 38-64 ms
for 1-500 ids at 100k observations, 530-840 ms at 1M. A lookup with a scalar parameter uses the
primary-key index: 1.4 ms for 1 id, 8 ms for 10, ~0.6 ms per further id, at any table size.
Longer lists use the join."""
_PK_LOOKUP_CHUNK = 32
_PK_TABLES = frozenset({"Observation", "Episode", "Gist", "Entity"})


def _arrow_of(result: Any, name: str) -> pa.Table:
    """A query result's rows as one Arrow table; the engine failing while it hands them over
    (damaged pages) is a StorageError, as a failing statement is."""
    try:
        table: pa.Table = result.get_as_arrow()
    except UnicodeDecodeError as exc:
        raise damaged_values(None, f"graph query {name}", exc) from exc
    except ENGINE_ERRORS as exc:
        raise engine_error(f"graph query {name} failed reading its rows", exc) from exc
    return table


STATEMENT_GRACE_S = 0.25
"""A developer statement's caller gets QueryTimeoutError this long after its timeout at the
latest: Kuzu's own timeout usually stops it first; the watchdog covers binding, which Kuzu's
timeout does not."""


class GraphTransaction:
    """A write transaction on the writer connection; use through GraphDB.write()."""

    def __init__(self, graph: GraphDB, connection: kuzu.Connection) -> None:
        self._graph = graph
        self._connection = connection

    def run(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named query from queries/ inside this transaction."""
        return self._graph._run(self._connection, read_cypher("queries", name), params)

    def run_text(self, cypher: str) -> list[dict[str, Any]]:
        """Run Cypher text given by the developer (the schema DDL) inside this transaction."""
        return self._graph._run(self._connection, cypher, None)

    def copy_nodes(self, table: str, rows: pa.Table) -> None:
        """Bulk-insert node rows with COPY FROM Arrow; columns are reordered to the schema."""
        ordered = rows.select(self._graph.columns(table))
        self._connection.execute(f"COPY {table} FROM $rows", {"rows": ordered})

    def run_each(self, name: str, rows: Sequence[dict[str, Any]]) -> int:
        """Run the named query once per row of scalar parameters, prepared once; returns the
        number of rows run.

        The way to write edges between nodes bound by primary key, at any table size: a lookup
        with scalar parameters uses the primary-key index (~0.8 ms a row at 1M observations),
        where ``UNWIND $rows ... MATCH (o {id: r.id})`` plans a table scan and a join (6.8 s for
        500 rows at 1M), and a rel-table COPY is unsafe in a transaction that may roll back
        (see copy_edges).
        """
        return self.run_each_statement(read_cypher("queries", name), rows, name=name)

    def run_each_statement(
        self, cypher: str, rows: Sequence[dict[str, Any]], *, name: str = "statement"
    ) -> int:
        """run_each for a statement the storage layer made from the schema's own table and
        column names (graph_rows.py), never from input: values travel as parameters."""
        if not rows:
            return 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                statement = self._connection.prepare(cypher)
            except QUERY_ERRORS as exc:
                raise engine_error(f"graph query {name} failed to prepare", exc) from exc
            for row in rows:
                try:
                    result = self._connection.execute(statement, row)
                except QUERY_ERRORS as exc:
                    raise engine_error(f"graph query {name} failed", exc) from exc
                for each in result if isinstance(result, list) else [result]:
                    each.close()
        return len(rows)

    def columns(self, table: str) -> list[str]:
        """Property names of a schema table (node or rel) in schema order."""
        return self._graph.columns(table)

    def column_types(self, table: str) -> dict[str, str]:
        """Property name -> the engine's type name (STRING, DOUBLE, INT64, FLOAT[]...)."""
        rows = self._graph.query_text(f"CALL table_info('{table}') RETURN name, type")
        return {row["name"]: str(row["type"]) for row in rows}

    def copy_edges(self, rel: str, edges: pa.Table, *, from_table: str, to_table: str) -> None:
        """Bulk-insert edges from an Arrow table whose first two columns are from/to ids.

        Caution (Kuzu 0.11.3, measured): when a transaction that ran a successful rel-table
        COPY is rolled back (explicitly, or by Kuzu after a later statement fails), every edge
        of that rel table is lost, committed ones included. Use it only as the last statement
        of a transaction, or use run_each.
        """
        self._connection.execute(
            f"COPY {rel} FROM $edges (from='{from_table}', to='{to_table}')", {"edges": edges}
        )


class GraphDB:
    """One graph database: schema on open, named queries, one writer, per-thread readers.

    Kuzu allows a single write transaction at a time and loses writes when two Database objects
    share a path in one process, so this class holds the only Database and serialises writes with
    a lock. Reads run on a connection owned by the calling thread and see committed data.
    """

    def __init__(
        self,
        path: Path,
        *,
        read_only: bool = False,
        buffer_pool_mb: int = 0,
        max_db_size: int = 0,
        engine: str | None = None,
        probe_first: bool = True,
    ) -> None:
        """``probe_first=False`` opens the file in this process at once: for a caller that is
        itself the child process the probe would start (storage/probe.py). Such a caller may be
        reading a replayed log the probe has not checked, whose checkpoint may damage it (Kuzu
        0.11.3): when it replays a log, nothing checkpoints it before close, neither at open
        nor automatically (a new file, as the rebuild's import writes, checkpoints as usual)."""
        self.path = path
        self.read_only = read_only
        self.engine = resolve_engine(engine)
        """The engine's module name (kuzu or ladybug)."""
        refuse_other_engine(path, self.engine)
        self._engine = load_engine(self.engine)
        path.parent.mkdir(parents=True, exist_ok=True)
        # One open per database file in this process (Kuzu would take a second and lose
        # writes): claimed before opening, given back on close, on a failed open, or when this
        # object is collected unclosed. Claimed before the probe too, which copies the file and
        # may rebuild it: never while another process holds it.
        claim = open_registry.claim(path, read_only=read_only)
        self._release = weakref.finalize(self, claim.release)
        try:
            # Kuzu kills the process on some damage: a file not sealed by a clean close is
            # opened in a child process first (storage/probe.py).
            if probe_first:
                probe.check_graph(path, read_only=read_only, engine=self.engine)
            if not read_only:
                probe.break_seal(path)
            # buffer_pool_mb, max_db_size (the address space Kuzu reserves for its buffer
            # pool): 0 is Kuzu's default (80% of RAM, 8 TB); the Cypher sandbox bounds both.
            self._options: dict[str, Any] = {
                "read_only": read_only,
                "buffer_pool_size": buffer_pool_mb << 20,
                "max_db_size": max_db_size or 1 << 43,
                **_ENGINE_OPTIONS.get(self.engine, {}),
            }
            wal = probe.wal_path(path)
            replays_log = not read_only and wal.exists() and wal.stat().st_size > 0
            if replays_log and not probe_first:  # a log no probe checked: never checkpointed
                self._options["auto_checkpoint"] = False
            self._db = self._engine.Database(str(path), **self._options)
        except BaseException as exc:
            self._release()
            if isinstance(exc, EmemGraphError) or not isinstance(exc, ENGINE_ERRORS):
                raise
            raise open_error(path, exc, read_only=read_only, engine=self.engine) from exc
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[kuzu.Connection] = []
        self._connections_lock = threading.Lock()
        # Developer statements still running on their worker threads (run_statement).
        self._statements: dict[threading.Thread, kuzu.Connection] = {}
        self._columns: dict[str, list[str]] = {}
        self._writer = None if read_only else self._new_connection()
        self._wal = probe.wal_path(path)
        self._closed = False
        self._generation = 0
        if replays_log and probe_first and self._writer is not None:
            # The replayed log written into the file now, before any new write: the very
            # checkpoint the probe read back on a copy (probe.check_graph).
            try:
                self._writer.execute("CHECKPOINT")
            except ENGINE_ERRORS as exc:
                log.warning("checkpoint of the replayed log of %s deferred: %s", path, exc)

    @property
    def generation(self) -> int:
        """A number that changes after every write transaction of this object (committed or
        not): a read made at one generation holds until it changes, so callers may keep what
        they read for as long as it is the same. Only this object writes the file (one
        read-write process per database, one Database per path in it: see the class)."""
        return self._generation

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
        stored = (
            {row["key"]: row["value"] for row in self.query("get_memory_info")}
            if "MemoryInfo" in tables
            else {}
        )
        if not stored:
            # New, or its creation was interrupted (tables without facts, from a version that
            # created them outside the transaction): every statement is IF NOT EXISTS.
            if self.read_only:
                raise SchemaVersionError(f"{self.path} is not an emem_graph database")
            # One transaction for the tables and the facts: a process killed while creating the
            # memory leaves nothing or all of it, never tables without a schema_version.
            with self.write() as tx:
                for statement in schema_statements():
                    tx.run_text(statement)
                for key, value in {"schema_version": version, **info}.items():
                    tx.run("set_memory_info", {"key": key, "value": value})
            stored = {row["key"]: row["value"] for row in self.query("get_memory_info")}
        upgrade = stored.get("schema_version") in upgradable_versions() or (
            stored.get("schema_version") == version and not schema_tables() <= tables
        )
        if upgrade and self.read_only:
            raise RecoveryNeededError(
                f"{self.path} was written with schema version {stored.get('schema_version')} "
                f"and needs an upgrade to version {version}, which a read-only open cannot "
                "write: open the memory read-write once (it upgrades on open), then read-only"
            )
        if upgrade:
            # Additive upgrade: every statement is IF NOT EXISTS, so only new tables appear;
            # one transaction, so a crash leaves the old version intact. (A memory of this
            # version lacking tables was made by a development build of it.)
            with self.write() as tx:
                for statement in schema_statements():
                    tx.run_text(statement)
                # Version 3: each entity of an older memory gets one open position.
                tx.run("migrate_entity_positions")
                tx.run("set_memory_info", {"key": "schema_version", "value": version})
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
        with self._connections_lock:
            # Under the lock run_statement registers its statement: one registered before
            # this is stopped below, one after it finds the graph closed.
            if self._closed:
                return
            self._closed = True
        if not self._stop_statements():
            # Closing a database under a running statement can crash Kuzu: leave it to the end
            # of the process (its lock goes with it).
            log.warning("a Cypher statement is still running; the graph closes at exit")
            return
        with self._connections_lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        try:
            self._db.close()
            if not self.read_only:
                probe.write_seal(self.path)
        finally:
            self._release()

    def drop_page_cache(self) -> None:
        """Give the engine's buffer pool back to the system: close the database and open it
        again. The engine keeps every page a read brought in until the pool (80% of RAM by
        default) is full: the store's read of every observation at open left ~310 MB resident
        at 1M observations, held for pages no later read wants. Costs
        ~0.1 s at 1M. Only while no other thread uses this object (the store's open)."""
        if self._closed:
            raise StorageError("the graph database is closed")
        with self._connections_lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()
        try:
            self._db.close()
            self._db = self._engine.Database(str(self.path), **self._options)
        except ENGINE_ERRORS as exc:
            self._closed = True
            self._release()
            what = f"graph database {self.path} could not be opened again"
            raise engine_error(what, exc) from exc
        self._writer = None if self.read_only else self._new_connection()

    # --- reads ---------------------------------------------------------------------------------

    def query(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named read query from queries/ on this thread's connection."""
        return self._run(self._reader(), read_cypher("queries", name), params)

    def query_text(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run Cypher text given by the developer (not built from user input) on a reader."""
        return self._run(self._reader(), cypher, params)

    def query_arrow(self, name: str, params: dict[str, Any] | None = None) -> pa.Table:
        """Run the named read query from queries/ and return its rows as one Arrow table, typed
        columns also when it has no row (bulk reads: export)."""
        try:
            result = self._reader().execute(read_cypher("queries", name), params or {})
        except QUERY_ERRORS as exc:
            raise engine_error(f"graph query {name} failed", exc) from exc
        results = result if isinstance(result, list) else [result]
        try:
            return self._valid(_arrow_of(results[-1], name), f"graph query {name}")
        finally:
            for each in results:
                each.close()

    def nodes_by_id(self, table: str, ids: Sequence[str], many_query: str) -> list[dict[str, Any]]:
        """One-column rows holding the nodes of ``table`` whose id is in ``ids`` (any order).

        Up to PK_LOOKUP_MAX ids go through the primary-key index (UNION ALL of single-id
        matches, 32 per statement); more ids run the named ``many_query`` (one table scan).
        """
        if table not in _PK_TABLES:
            raise ValueError(f"no primary-key lookup for table {table!r}")
        unique = list(dict.fromkeys(ids))
        if len(unique) > PK_LOOKUP_MAX:
            return self.query(many_query, {"ids": unique})
        rows: list[dict[str, Any]] = []
        for start in range(0, len(unique), _PK_LOOKUP_CHUNK):
            chunk = unique[start : start + _PK_LOOKUP_CHUNK]
            cypher = " UNION ALL ".join(
                f"MATCH (n:{table} {{id: $i{k}}}) RETURN n" for k in range(len(chunk))
            )
            rows.extend(self.query_text(cypher, {f"i{k}": i for k, i in enumerate(chunk)}))
        return rows

    def columns(self, table: str) -> list[str]:
        """Property names of a node table in schema order (COPY is positional)."""
        if table not in self._columns:
            rows = self.query_text(f"CALL table_info('{table}') RETURN name")
            self._columns[table] = [row["name"] for row in rows]
        return self._columns[table]

    def run_statement(
        self,
        cypher: str,
        params: dict[str, Any] | None = None,
        *,
        limit: int,
        timeout_s: float,
        max_path_depth: int | None = None,
        check_plan: bool = True,
    ) -> CypherResult:
        """Run one Cypher statement typed by a developer (the explore surface, the ROS bridge's
        Query service) so that it cannot change the memory or anything else.

        Layers (each refuses on its own): on a graph opened read-only Kuzu refuses every write,
        and on a live read-write graph the statement runs inside ``BEGIN TRANSACTION READ
        ONLY``, where Kuzu refuses every write too; then Kuzu's own plan of the statement
        (EXPLAIN) must consist of reading operators only (statement_runner.plan_refusal):
        COPY ... TO, EXPORT, settings (``CALL threads=1``), ATTACH, file-reading table
        functions (LOAD FROM) and any operator not known to read are refused. The caller must
        have refused such text first (explore.cypher.query_graph): EXPLAIN binds the
        statement, and binding EXPORT DATABASE already creates its directory.

        The statement runs on a worker thread with Kuzu's query timeout; a watchdog interrupts
        it at ``timeout_s`` and the caller gets QueryTimeoutError then, even while Kuzu is still
        binding (constant folding, which its timeout does not cover); the worker ends when Kuzu
        stops. Only the first ``limit`` rows are kept.

        Args:
            cypher: exactly one statement (a trailing ``;`` is fine).
            params: values of its ``$parameters``.
            limit: the most rows to keep (>= 1).
            timeout_s: stop the statement after this many seconds.
            max_path_depth: raise the connection's limit on variable-length path hops (Kuzu's
                default 30) to this, for statements whose paths go deeper (the route queries).
            check_plan: refuse plans with other than reading operators (tests turn it off to
                show the layers below it alone).

        Returns:
            The columns, the rows and whether rows were left out.

        Raises:
            StorageError: the graph is closed.
            ReadOnlyQueryError: the statement writes, or its plan does more than read; nothing
                changed.
            QueryTimeoutError: it ran longer than ``timeout_s``.
            InvalidInputError: several statements, or Kuzu refused it (syntax, unknown table...).
        """
        outcome: dict[str, Any] = {}
        finished = threading.Event()

        def work() -> None:
            try:
                outcome["result"] = run_read_only(
                    connection,
                    cypher,
                    params,
                    limit=limit,
                    timeout_s=timeout_s,
                    max_path_depth=max_path_depth,
                    check_plan=check_plan,
                    read_only=self.read_only,
                )
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc
            finally:
                with self._connections_lock:
                    self._statements.pop(threading.current_thread(), None)
                connection.close()
                finished.set()

        worker = threading.Thread(target=work, name="emem-graph-statement", daemon=True)
        with self._connections_lock:
            # Checked and registered under the lock close() takes: the bridge's Query runs
            # statements from its callers' threads while the owner's thread may close the graph.
            if self._closed:
                raise StorageError("the graph database is closed")
            connection = self._engine.Connection(self._db)
            self._statements[worker] = connection
        worker.start()
        if not finished.wait(timeout_s + STATEMENT_GRACE_S):
            connection.interrupt()  # the worker ends when Kuzu next looks; nobody waits for it
            raise statement_error("Interrupted.", timeout_s)
        if "error" in outcome:
            raise outcome["error"]
        result: CypherResult = outcome["result"]
        return result

    def running_statements(self) -> int:
        """How many developer statements (run_statement) are still running, counting those
        whose caller was answered at the timeout while Kuzu had not yet stopped them."""
        with self._connections_lock:
            return len(self._statements)

    def _stop_statements(self, wait_s: float = 10.0) -> bool:
        """Interrupt the developer statements still running and wait for them; False when one
        is still running after ``wait_s`` seconds."""
        with self._connections_lock:
            running = dict(self._statements)
        for connection in running.values():
            with contextlib.suppress(RuntimeError):
                connection.interrupt()
        for worker in running:
            worker.join(wait_s)
        return not any(worker.is_alive() for worker in running)

    def table_counts(self) -> dict[str, int]:
        """The number of rows of every node and rel table, by table name."""
        counts: dict[str, int] = {}
        for row in self.query_text("CALL show_tables() RETURN name, type"):
            name, kind = row["name"], row["type"]
            pattern = f"(n:`{name}`)" if kind == "NODE" else f"()-[n:`{name}`]->()"
            counts[name] = int(self.query_text(f"MATCH {pattern} RETURN count(*) AS n")[0]["n"])
        return counts

    def query_arrow_text(self, cypher: str) -> pa.Table:
        """Run Cypher text given by the developer on a reader; its rows as one Arrow table."""
        try:
            result = self._reader().execute(cypher)
        except QUERY_ERRORS as exc:
            raise engine_error("graph query failed", exc) from exc
        results = result if isinstance(result, list) else [result]
        try:
            return self._valid(_arrow_of(results[-1], "given"), "graph query")
        finally:
            for each in results:
                each.close()

    def _valid(self, table: pa.Table, what: str) -> pa.Table:
        """``table`` once its every value is checked (text must be UTF-8): the engine hands on
        what its pages hold, and a bit flipped inside a stored text reached the caller as a
        UnicodeDecodeError from Arrow (found by tests/reliability/test_damage.py's random flips:
        a raw error at open). ~50 ms for the observation index at 1M observations.

        Raises:
            DamagedMemoryError: the graph file holds damaged values.
        """
        try:
            table.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise damaged_values(self.path, what, exc) from exc
        return table

    # --- writes --------------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[GraphTransaction]:
        """One atomic write transaction: committed on exit, rolled back on an exception."""
        if self.read_only:
            raise ReadOnlyMemoryError(f"the graph {self.path} is open read-only: nothing written")
        connection = self._writer_connection()
        with self._write_lock:
            try:
                connection.execute("BEGIN TRANSACTION")
                try:
                    yield GraphTransaction(self, connection)
                except BaseException:
                    # Kuzu rolls a transaction back by itself when a statement fails; ROLLBACK
                    # then finds none, and its error must not replace the original one.
                    with contextlib.suppress(RuntimeError):
                        connection.execute("ROLLBACK")
                    raise
                try:
                    connection.execute("COMMIT")
                except ENGINE_ERRORS as exc:
                    # Kuzu commits to its WAL, then checkpoints when the WAL is large; that
                    # waits for every open read transaction (a long query in another thread)
                    # and gives up after ~5 s with this error. The transaction is committed by
                    # then (measured: its rows are there, the next write works, a later commit
                    # checkpoints), so it must not be reported as a failed write: a retry would
                    # write it twice.
                    if CHECKPOINT_DEFERRED not in str(exc):
                        raise
                    log.info("graph write committed; its checkpoint waits for a later commit")
                else:
                    self._checkpoint_when_due(connection)
            finally:
                # After the commit is visible: a reader that took the old number before it
                # may keep a newer read under that number, never an older one under the new.
                self._generation += 1

    # --- internals -----------------------------------------------------------------------------

    def _checkpoint_when_due(self, connection: kuzu.Connection) -> None:
        """Checkpoint once the log holds CHECKPOINT_WAL_BYTES (the caller holds the write
        lock, its transaction committed) and give the freed memory back. Never for a log no
        probe checked (auto_checkpoint off: see __init__); a checkpoint that must wait for a
        read is left to a later write."""
        if self._options.get("auto_checkpoint") is False:
            return
        try:
            if self._wal.stat().st_size < CHECKPOINT_WAL_BYTES:
                return
        except OSError:  # no log yet, or it cannot be read: the engine checkpoints itself
            return
        try:
            connection.execute("CHECKPOINT")
        except ENGINE_ERRORS as exc:
            log.info("graph checkpoint deferred to a later write: %s", exc)
            return
        release_free_memory()

    def _writer_connection(self) -> kuzu.Connection:
        if self._closed or self._writer is None:
            raise StorageError("the graph database is closed")
        return self._writer

    def _new_connection(self) -> kuzu.Connection:
        connection = self._engine.Connection(self._db)
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

    def _run(
        self, connection: kuzu.Connection, cypher: str, params: dict[str, Any] | None
    ) -> list[dict[str, Any]]:
        if params:
            params = rows_as_list(params)
        try:
            result = connection.execute(cypher, params or {})
        except QUERY_ERRORS as exc:
            raise engine_error("graph query failed", exc) from exc
        results = result if isinstance(result, list) else [result]
        last = results[-1]
        try:
            names = last.get_column_names()
            rows = [dict(zip(names, row, strict=True)) for row in last.get_all()]
        except UnicodeDecodeError as exc:  # a damaged text (see _valid)
            raise damaged_values(None, "graph query", exc) from exc
        except ENGINE_ERRORS as exc:  # the engine failing while it hands the rows over
            raise engine_error("graph query failed reading its rows", exc) from exc
        finally:
            for each in results:
                each.close()
        return rows
