"""Developer statements: one Cypher statement typed by a developer (the explore surface, the
ROS bridge's Query service), run on one Kuzu connection so that it can only read.

What this module holds: the result type (CypherResult), the mapping of Kuzu's refusals to
emem_graph errors (statement_error), the allow-list of reading plan operators and table
functions (plan_refusal), the one-statement check, and the run itself (run_read_only). The
worker thread, the watchdog and the connection's lifetime belong to GraphDB.run_statement
(storage/graph.py), which owns the database; kuzu is imported there only.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emem_graph import validation
from emem_graph.errors import (
    EmemGraphError,
    InvalidInputError,
    QueryResourceError,
    QueryTimeoutError,
    ReadOnlyQueryError,
)
from emem_graph.storage.cypher_lexer import code_tokens, tokenize
from emem_graph.storage.graph_errors import UNCASTABLE_TEXT, engine_error

if TYPE_CHECKING:
    import kuzu


@dataclass(frozen=True)
class CypherResult:
    """The rows of one developer statement (GraphDB.run_statement, run_read_only).

    Attributes:
        columns: the names the statement RETURNs, in order.
        rows: one list of values per row, in the columns' order (nodes and rels as dicts).
        truncated: the statement had more rows than the row limit; only the first are here.
    """

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False


def kuzu_shape(value: Any) -> Any:
    """``value`` with nodes, relationships and paths keyed as Kuzu keys them (``_id``,
    ``_label``, ``_src``, ``_dst``, ``_nodes``, ``_rels``): LadybugDB spells those keys in
    capitals (``_LABEL``); property names are left as they are."""
    if isinstance(value, dict):
        return {
            (key.lower() if key.startswith("_") and key.isupper() else key): kuzu_shape(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [kuzu_shape(item) for item in value]
    return value


def statement_error(message: str, timeout_s: float) -> EmemGraphError:
    """The emem_graph error for Kuzu's refusal of a developer statement."""
    if "read-only database" in message or "read-only transaction" in message:
        return ReadOnlyQueryError(
            "the memory is read-only here: Kuzu refused a write (CREATE, SET, DELETE, MERGE, "
            "DROP, ALTER, COPY FROM...) and nothing was changed; a memory is changed through "
            "SpatioTemporalMemory"
        )
    if "multiple statements" in message:
        return InvalidInputError(
            "give one Cypher statement at a time (Kuzu found several; a procedure such as "
            "create_fts_index that Kuzu expands into several cannot run here either)"
        )
    if "bad_alloc" in message:  # the sandbox's RLIMIT_DATA, or the machine's memory
        return QueryResourceError(
            "the query needed more memory than this process may take and was stopped; narrow "
            "it (LIMIT, smaller range() or lists) or give a larger --max-memory-mb"
        )
    if message.strip() == "Interrupted.":
        return QueryTimeoutError(
            f"the query ran longer than {timeout_s:g} s and was stopped; narrow it (LIMIT, a "
            "WHERE on an indexed id) or give a longer timeout"
        )
    if UNCASTABLE_TEXT in message:  # a parameter's text the binding cannot take
        return engine_error("Cypher failed", RuntimeError(message))
    return InvalidInputError(f"Cypher failed: {one_line_message(message)}")


_PARSER_POSITION = re.compile(r"\s*\(line: (\d+), offset: (\d+)\)\n")


def one_line_message(message: str) -> str:
    """The engine's error ``message`` on one line. A parser error ends in a drawing of where it
    stopped (the statement's line quoted, carets under the words it could not read): that becomes
    ``at line L, offset O: near 'WORDS'``."""
    position = _PARSER_POSITION.search(message)
    if position is None:
        return " ".join(message.split())
    head = " ".join(message[: position.start()].split())
    line, offset = position.group(1), position.group(2)
    drawing = message[position.end() :].split("\n")
    quoted = drawing[0]
    carets = drawing[1] if len(drawing) > 1 else ""
    near = ""
    if len(quoted) >= 2 and quoted[0] == quoted[-1] == '"' and "^" in carets:
        start = carets.index("^") - 1  # the drawing's quote mark takes the first column
        near = quoted[1:-1][max(start, 0) : start + carets.count("^")]
    where = f"{head} at line {line}, offset {offset}"
    if near.strip():
        return f"{where}: near {' '.join(near.split())!r}"
    if len(quoted) >= 2 and int(offset) >= len(quoted) - 2:
        return f"{where} (the end of the statement)"
    return where


READ_OPERATORS = frozenset(
    {
        "AGGREGATE",
        "AGGREGATE_FINALIZE",
        "AGGREGATE_SCAN",
        "CROSS_PRODUCT",
        "DUMMY_SINK",
        "EMPTY_RESULT",
        "FILTER",
        "FLATTEN",
        "HASH_JOIN_BUILD",
        "HASH_JOIN_PROBE",
        "INTERSECT",
        "INTERSECT_BUILD",
        "LIMIT",
        "MULTIPLICITY_REDUCER",
        "ORDER_BY",
        "ORDER_BY_MERGE",
        "ORDER_BY_SCAN",
        "PATH_PROPERTY_PROBE",
        "PRIMARY_KEY_SCAN_NODE_TABLE",
        "PROJECTION",
        "QUERY_PRIMARY_KEY_LOOKUP",  # LadybugDB 0.22's lookup of a node by primary key
        "RECURSIVE_EXTEND",
        "RESULT_COLLECTOR",
        "SCAN_NODE_TABLE",
        "SCAN_REL_TABLE",
        "SEMI_MASKER",
        "SKIP",
        "TABLE_FUNCTION_CALL",
        "TOP_K",
        "TOP_K_SCAN",
        "UNION_ALL_SCAN",
        "UNWIND",
    }
)
"""Kuzu 0.11.3 (and LadybugDB 0.22) physical operators that only read the graph (names as
EXPLAIN prints them).
A plan with any other operator (COPY_TO, EXPORT_DATABASE, STANDALONE_CALL, ATTACH_DATABASE,
a write, or one this list does not know) is refused: fail closed."""

READ_TABLE_FUNCTIONS = frozenset(
    {
        "READ_FTABLE",
        "SHOW_TABLES",
        "TABLE_INFO",
        "SHOW_CONNECTION",
        "CURRENT_SETTING",
        "DB_VERSION",
        "SHOW_FUNCTIONS",
        "SHOW_INDEXES",
        "SHOW_SEQUENCES",
        "SHOW_WARNINGS",
    }
)
"""Table functions (``Function:`` of TABLE_FUNCTION_CALL) that read the catalog or Kuzu's own
intermediate tables; file readers (READ_CSV_*, READ_PARQUET, READ_JSON: LOAD FROM) and every
other function are refused."""

# One box of the plan drawing each (boxes of a join stand side by side on a line).
_PLAN_OPERATOR = re.compile(r"│\s*([A-Z][A-Z0-9_]*)\[\d+\]\s*│")
_PLAN_FUNCTION = re.compile(r"│\s*Function: ([A-Za-z0-9_]+)\s*│")
_LEADING_EXPLAIN = re.compile(
    r"^(?:\s+|//[^\n]*(?:\n|$)|/\*.*?\*/)*(?:EXPLAIN|PROFILE)\b", re.IGNORECASE | re.DOTALL
)


def plan_refusal(
    connection: kuzu.Connection, cypher: str, params: dict[str, Any] | None, timeout_s: float
) -> str | None:
    """Why Kuzu's own plan of ``cypher`` is not a pure read, or None when every operator and
    table function of it is in READ_OPERATORS / READ_TABLE_FUNCTIONS.

    The plan comes from ``EXPLAIN`` (a leading EXPLAIN or PROFILE of the statement itself is
    taken off first). EXPLAIN binds without executing, but binding has side effects (EXPORT
    DATABASE creates its directory, LOAD FROM globs its path): only text an allow-list has
    accepted may come here.

    Raises:
        ReadOnlyQueryError, InvalidInputError, QueryTimeoutError: Kuzu refused to plan it.
    """
    inner = cypher
    while (match := _LEADING_EXPLAIN.match(inner)) is not None:
        inner = inner[match.end() :]
    try:
        result = connection.execute("EXPLAIN " + inner, params or {})
        results = result if isinstance(result, list) else [result]
        plan = "\n".join(str(next(iter(row))) for each in results for row in each.get_all())
        for each in results:
            each.close()
    except RuntimeError as exc:
        raise statement_error(str(exc), timeout_s) from exc
    operators = set(_PLAN_OPERATOR.findall(plan))
    functions = set(_PLAN_FUNCTION.findall(plan))
    if not operators:
        return (
            "the memory is read-only here: Kuzu's plan of the statement could not be read, so "
            "it is refused"
        )
    unknown = sorted(operators - READ_OPERATORS) + sorted(functions - READ_TABLE_FUNCTIONS)
    if unknown:
        return (
            f"the memory is read-only here: Kuzu plans this statement with {', '.join(unknown)}, "
            "which do more than read the graph (write files, change settings, attach databases "
            "or read files); only reading statements run here"
        )
    return None


def _statement_count(cypher: str) -> int:
    """How many statements ``cypher`` holds: its ``;`` tokens on Kuzu's own lexical rules
    (storage/cypher_lexer.py: strings, escaped names and comments as Kuzu ends them, ``/* **/``
    included), not counting empty ones (a trailing ``;``).

    Raises:
        CypherLexError: text Kuzu's lexer does not take (an unended comment or string): it is
            refused, never counted on a guess.
    """
    count, code = 0, False
    for token in code_tokens(tokenize(cypher)):
        if token.kind == "punct" and token.text == ";":
            count += code
            code = False
        else:
            code = True
    return count + code


def run_read_only(
    connection: kuzu.Connection,
    cypher: str,
    params: dict[str, Any] | None,
    *,
    limit: int,
    timeout_s: float,
    max_path_depth: int | None,
    check_plan: bool,
    read_only: bool,
) -> CypherResult:
    """Run one developer statement on ``connection`` (a fresh one, used for nothing else) and
    keep its first ``limit`` rows.

    On a graph opened read-write (``read_only`` False) the statement runs inside ``BEGIN
    TRANSACTION READ ONLY``, rolled back afterwards; with ``check_plan`` its plan must pass
    plan_refusal first. Kuzu's refusals come back as emem_graph errors (statement_error).
    """
    # The binding takes UTF-8 text only: a lone surrogate is refused before prepare(), whose
    # TypeError would also leave a half-made prepared statement complaining at collection.
    validation.plain_text("the Cypher statement", cypher)
    connection.set_query_timeout(max(1, round(timeout_s * 1000)))
    if max_path_depth is not None:
        connection.execute(f"CALL var_length_extend_max_depth={int(max_path_depth)}")
    if not read_only:
        connection.execute("BEGIN TRANSACTION READ ONLY")
    try:
        return _run_checked(
            connection, cypher, params, limit, timeout_s, check_plan, prepare=read_only
        )
    finally:
        if not read_only:
            # Kuzu ends the transaction itself when a statement fails to bind.
            with contextlib.suppress(RuntimeError):
                connection.execute("ROLLBACK")


def _run_checked(
    connection: kuzu.Connection,
    cypher: str,
    params: dict[str, Any] | None,
    limit: int,
    timeout_s: float,
    check_plan: bool = True,
    prepare: bool = True,
) -> CypherResult:
    # prepare() refuses several statements before running any; execute() would run all.
    # But prepare() binds holding the GIL (measured: no other Python thread ran for the
    # 5.9 s of a bind), so on the live graph a statement without parameters is checked
    # for one statement here and run with execute(), which releases it: the watchdog
    # and the bridge's other threads go on while Kuzu binds.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            if prepare or params:
                statement: Any = connection.prepare(cypher)
                if not statement.is_success():
                    raise statement_error(statement.get_error_message(), timeout_s)
            else:
                if _statement_count(cypher) != 1:
                    raise statement_error("multiple statements", timeout_s)
                statement = cypher
            refusal = check_plan and plan_refusal(connection, cypher, params, timeout_s)
            if refusal:
                raise ReadOnlyQueryError(refusal)
            result = connection.execute(statement, params or {})
        except RuntimeError as exc:
            raise statement_error(str(exc), timeout_s) from exc
        except TypeError as exc:  # the binding refused an argument (text that is not UTF-8)
            raise engine_error("Cypher failed", exc) from exc
    results = result if isinstance(result, list) else [result]
    last = results[-1]
    try:
        rows: list[list[Any]] = []
        while len(rows) < limit and last.has_next():
            rows.append([kuzu_shape(value) for value in last.get_next()])
        truncated = last.has_next()
        columns = list(last.get_column_names())
    except RuntimeError as exc:
        raise statement_error(str(exc), timeout_s) from exc
    finally:
        for each in results:
            each.close()
    return CypherResult(columns=columns, rows=rows, truncated=truncated)
