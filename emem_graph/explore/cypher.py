"""Read-only Cypher on a memory directory: run a statement or a named query, format the rows.

The graph is opened read-only, so Kuzu itself refuses any write to the memory; before a
statement reaches Kuzu, explore/guard.py's allow-list (on Kuzu's own tokens,
storage/cypher_lexer.py) accepts only one statement that reads, so nothing writes files,
reads files, loads code or changes the session either.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from emem_graph.errors import InvalidInputError, ReadOnlyQueryError
from emem_graph.explore.guard import check_read_only
from emem_graph.explore.readonly import ReadOnlyMemory
from emem_graph.explore.sandbox import DEFAULT_MAX_MEMORY_MB, CypherSandbox
from emem_graph.explore.statement import (
    DEFAULT_LIMIT,
    DEFAULT_TIMEOUT_S,
    check_statement,
    cypher_code,
    parameters_of,
    split_statements,
)
from emem_graph.limits import MAX_PARAM_CHARS, load_json
from emem_graph.resources import read_cypher, resource_dir
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.statement_runner import CypherResult

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_MEMORY_MB",
    "DEFAULT_TIMEOUT_S",
    "FORMATS",
    "CypherResult",
    "CypherSandbox",
    "NamedQuery",
    "OutputFormat",
    "check_statement",
    "cypher_code",
    "format_named_queries",
    "format_result",
    "list_named_queries",
    "named_query",
    "open_graph",
    "parameters_of",
    "parse_params",
    "query_graph",
    "run_cypher",
    "run_named_query",
    "split_statements",
]

OutputFormat = Literal["table", "json", "csv"]
FORMATS: tuple[str, ...] = get_args(OutputFormat)
TABLE_CELL_MAX = 60
"""Table cells longer than this are cut; json and csv keep every value whole."""
VECTOR_CELL = 16
"""A list longer than this in a node or relationship is a vector: the table leaves it out."""

_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_PARAM_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class NamedQuery:
    """One file of queries/.

    Attributes:
        name: the file name without ``.cypher``.
        description: the first sentence of its header comment.
        parameters: its ``$parameters`` in order of first use.
        cypher: the statement.
        writes: it creates, changes or deletes (one of the store's own queries); run here, it
            is refused like any write.
    """

    name: str
    description: str
    parameters: tuple[str, ...]
    cypher: str
    writes: bool

    @property
    def internal(self) -> bool:
        """One of the store's own queries (a write, an export step, index or journal
        plumbing): ``query --list`` shows them only with ``--all``."""
        return (
            self.writes
            or self.name.startswith(INTERNAL_PREFIXES)
            or any(part in self.name for part in INTERNAL_PARTS)
            or self.name in INTERNAL_READS
        )


INTERNAL_PREFIXES = ("export_", "index_", "map_", "areas_", "stats_")
"""Export steps, index loading, the map and stats commands' reads, the area forest's upkeep."""
INTERNAL_PARTS = ("journal", "vector_node")
INTERNAL_READS = frozenset(
    {
        "all_entities",
        "all_positions",
        "pending_consolidation_episodes",
        "time_window_candidates",
        "episode_last_observation_time",
        "last_ended_episode",
        "capability_counts",
        "observation_time_span",
    }
)
"""Reads the store makes for itself (loading indexes, scheduling consolidation)."""


# --- opening ---------------------------------------------------------------------------------


@contextmanager
def open_graph(directory: str | Path) -> Iterator[GraphDB]:
    """Open the graph of the memory in ``directory`` read-only for a ``with`` block.

    Raises:
        InvalidInputError: the directory does not exist or holds no graph.
        DatabaseLockedError: another process holds the memory read-write.
        SchemaVersionError: the graph is not an emem_graph one, or of another schema version.
        StorageError: the graph file is not a Kuzu database.
    """
    with ReadOnlyMemory(directory, with_vectors=False) as memory:
        yield memory.graph


# --- running ---------------------------------------------------------------------------------


def query_graph(
    graph: GraphDB,
    cypher: str,
    params: dict[str, Any] | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_path_depth: int | None = None,
) -> CypherResult:
    """Run one read-only statement on a graph from open_graph().

    Args:
        graph: a graph opened read-only.
        cypher: one Cypher statement.
        params: a value for each ``$parameter`` of the statement, and no others.
        limit: the most rows to return; the result says when there were more.
        timeout_s: stop the statement after this many seconds.
        max_path_depth: the most hops a variable-length path may take (Kuzu's default: 30).

    Returns:
        The columns and rows.

    Raises:
        ReadOnlyQueryError: the statement would write (the memory or files).
        QueryTimeoutError: it ran longer than ``timeout_s``.
        InvalidInputError: a missing or unknown parameter, several statements, a bad limit, or
            Kuzu refused the statement.
    """
    given = check_statement(cypher, params, limit=limit, timeout_s=timeout_s)
    return graph.run_statement(
        cypher, given, limit=limit, timeout_s=timeout_s, max_path_depth=max_path_depth
    )


def run_cypher(
    directory: str | Path,
    cypher: str,
    params: dict[str, Any] | None = None,
    limit: int = DEFAULT_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
) -> CypherResult:
    """Run one read-only Cypher statement on the memory in ``directory``, in the sandbox
    (explore.sandbox: a child process that can read only the memory, write nothing, and is
    stopped at the timeout or above ``max_memory_mb``).

    Args:
        directory: the memory's directory (its db_path).
        cypher: one Cypher statement; writes are refused.
        params: a value for each ``$parameter`` of the statement.
        limit: the most rows to return; ``truncated`` tells when there were more.
        timeout_s: stop the statement after this many seconds.
        max_memory_mb: stop it when its process passes this much resident memory.

    Returns:
        The columns and rows.

    Raises:
        ReadOnlyQueryError: the statement would write; the memory is unchanged.
        QueryTimeoutError: it ran longer than ``timeout_s``.
        QueryResourceError: it needed more than ``max_memory_mb``.
        DatabaseLockedError: another process holds the memory read-write.
        InvalidInputError: no memory there, a missing or unknown parameter, several statements,
            or Kuzu refused the statement.
    """
    check_statement(cypher, params, limit=limit, timeout_s=timeout_s)  # before a process starts
    with CypherSandbox(directory, max_memory_mb=max_memory_mb) as sandbox:
        return sandbox.run(cypher, params, limit=limit, timeout_s=timeout_s)


def run_named_query(
    directory: str | Path,
    name: str,
    params: dict[str, Any] | None = None,
    limit: int = DEFAULT_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
) -> CypherResult:
    """Run the named query ``queries/<name>.cypher`` read-only on the memory in ``directory``,
    in the sandbox (as run_cypher).

    Raises:
        InvalidInputError: no such query (the message lists close names), or as run_cypher.
        ReadOnlyQueryError: the query writes (queries/ also holds the store's write queries).
        QueryTimeoutError, QueryResourceError: as run_cypher.
    """
    query = named_query(name)
    check_statement(query.cypher, params, limit=limit, timeout_s=timeout_s)
    with CypherSandbox(directory, max_memory_mb=max_memory_mb) as sandbox:
        return sandbox.run(
            query.cypher,
            params,
            limit=limit,
            timeout_s=timeout_s,
            max_path_depth=_path_depth(query.cypher),
        )


_PATH_BOUND = re.compile(r"\*[^\]]*?\.\.\s*(\d+)\s*\]")


def _path_depth(cypher: str) -> int | None:
    """The deepest variable-length path bound written in a named query (``*... 1..100000]``),
    when it passes Kuzu's default of 30 hops: the store raises the limit on its connection
    before such a query (spatial_path_depth), and so must the explore surface."""
    bounds = [int(bound) for bound in _PATH_BOUND.findall(cypher_code(cypher))]
    deepest = max(bounds, default=0)
    return deepest if deepest > KUZU_PATH_DEPTH else None


KUZU_PATH_DEPTH = 30
"""Kuzu's default limit on the hops of a variable-length path."""


# --- named queries ---------------------------------------------------------------------------


def list_named_queries(*, include_internal: bool = True) -> list[NamedQuery]:
    """Every file of queries/, by name, with its parameters and description (without the
    store's internal ones when ``include_internal`` is false)."""
    names = sorted(path.stem for path in resource_dir("queries").glob("*.cypher"))
    queries = [_named(name, read_cypher("queries", name)) for name in names]
    return [query for query in queries if include_internal or not query.internal]


def format_named_queries(queries: Sequence[NamedQuery]) -> str:
    """Two lines per query: its name with its ``$parameters`` (and ``[writes: refused here]``
    for the store's write queries), then its description, indented."""
    lines: list[str] = []
    for query in queries:
        names = " ".join(f"${name}" for name in query.parameters)
        writes = "  [writes: refused here]" if query.writes else ""
        lines.append(f"{query.name} {names}".rstrip() + writes)
        lines.append(f"    {query.description}")
    return "\n".join(lines)


def named_query(name: str) -> NamedQuery:
    """The query ``queries/<name>.cypher`` (``.cypher`` may be given).

    Raises:
        InvalidInputError: no such query; the message names the closest ones.
    """
    name = name.removesuffix(".cypher")
    known = [query.name for query in list_named_queries()]
    if name not in known:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        close += [k for k in known if name and name in k and k not in close][: 5 - len(close)]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InvalidInputError(
            f"no named query {name!r}{hint} (emem-graph query --list lists them all)"
        )
    return _named(name, read_cypher("queries", name))


def _named(name: str, text: str) -> NamedQuery:
    header: list[str] = []
    for line in text.splitlines():
        if not line.lstrip().startswith("//"):
            break
        header.append(line.lstrip()[2:].strip())
    comment = " ".join(part for part in header if part)
    description = re.split(r"(?<=[.!?])\s+", comment, maxsplit=1)[0] if comment else ""
    # Parameters in the order the header lists them (``$x $y $radius``), then any others.
    used = parameters_of(text)
    listed = [p for p in dict.fromkeys(_PARAMETER.findall(comment)) if p in used]
    parameters = (*listed, *(p for p in used if p not in listed))
    writes = _writes(text)
    return NamedQuery(name, description, parameters, text, writes)


# --- parameters ------------------------------------------------------------------------------


def parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """Parse ``NAME=VALUE`` pairs (``--param``): a value is read as JSON when it is JSON
    (``3``, ``2.5``, ``true``, ``null``, ``[1, 2]``, ``"007"``), otherwise kept as text.

    Raises:
        InvalidInputError: a pair without ``=``, a name that is not an identifier, a name given
            twice.
    """
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().removeprefix("$")
        if not sep or not _PARAM_KEY.match(key):
            raise InvalidInputError(f"a parameter is NAME=VALUE (e.g. limit=5), not {pair!r}")
        if key in params:
            raise InvalidInputError(f"parameter {key} is given twice")
        try:
            # Bounded (limits.load_json): a huge or deeply nested value is one error line.
            params[key] = load_json(raw, f"--param {key}", MAX_PARAM_CHARS)
        except InvalidInputError:
            raise
        except ValueError:
            params[key] = raw
    return params


# --- statements ------------------------------------------------------------------------------


def _writes(cypher: str) -> bool:
    """Whether check_read_only refuses ``cypher`` as a write (a named query of the store)."""
    try:
        check_read_only(cypher)
    except ReadOnlyQueryError:
        return True
    except InvalidInputError:
        return False
    return False


# --- formatting ------------------------------------------------------------------------------


def format_result(result: CypherResult, output: str = "table") -> str:
    """Render rows as ``table`` (aligned text with a row count), ``json`` (an object with
    columns, rows as objects and truncated) or ``csv`` (a header line, then the rows).

    Raises:
        InvalidInputError: an unknown format.
    """
    if output == "table":
        return _table(result)
    if output == "json":
        rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
        document = {"columns": result.columns, "rows": rows, "truncated": result.truncated}
        return json.dumps(document, indent=2, ensure_ascii=False, default=_json_default)
    if output == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([_text(value) for value in row] for row in result.rows)
        return buffer.getvalue().rstrip("\n")
    raise InvalidInputError(f"unknown format {output!r}; one of {', '.join(FORMATS)}")


def _table(result: CypherResult) -> str:
    header, rows = _spread_graph_values(list(result.columns), [list(row) for row in result.rows])
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(header)]
    lines = []
    if header:
        lines.append(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
        lines.append("-+-".join("-" * w for w in widths))
        lines.extend(
            " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in cells
        )
    count = len(result.rows)
    footer = f"({count} row{'' if count == 1 else 's'}"
    if result.truncated:
        footer += f"; more were left out at the limit of {count} rows"
    lines.append(footer + ")")
    return "\n".join(lines)


def _spread_graph_values(
    header: list[str], rows: list[list[Any]]
) -> tuple[list[str], list[list[Any]]]:
    """A column of nodes or relationships (Kuzu returns them as dicts with ``_label``) becomes
    one column per property, ``e.name``, ``e.x``..., in the order the properties come; its
    label gets a column of its own for relationships and when it differs between rows.
    Vectors (lists of more than VECTOR_CELL numbers) and properties NULL in every row (Kuzu
    gives an untyped pattern's value every table's properties) are left out; ``--format
    json`` keeps everything."""
    if not rows:
        return header, rows
    spread_header: list[str] = []
    columns: list[list[Any]] = []
    for index, name in enumerate(header):
        values = [row[index] for row in rows]
        present = [value for value in values if value is not None]
        if not present or not all(isinstance(v, dict) and "_label" in v for v in present):
            spread_header.append(name)
            columns.append(values)
            continue
        relationship = any("_src" in value for value in present)
        if relationship or len({value["_label"] for value in present}) > 1:
            spread_header.append(f"{name}:label")
            columns.append([None if v is None else v["_label"] for v in values])
        keys: dict[str, None] = {}
        for value in present:
            keys.update((key, None) for key in value if not key.startswith("_"))
        for key in keys:
            column = [None if v is None else v.get(key) for v in values]
            if all(c is None for c in column) or any(
                isinstance(c, list) and len(c) > VECTOR_CELL for c in column
            ):
                continue  # a property of another table of an untyped pattern, or a vector
            spread_header.append(f"{name}.{key}")
            columns.append(column)
    return spread_header, [list(cells) for cells in zip(*columns, strict=True)]


def _cell(value: Any) -> str:
    text = "NULL" if value is None else _text(value)
    text = " ".join(text.split()) if any(c in text for c in "\n\r\t") else text
    return text if len(text) <= TABLE_CELL_MAX else text[: TABLE_CELL_MAX - 1] + "…"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    return str(_json_default(value))


def _json_default(value: Any) -> Any:
    # Kuzu returns datetime, date, timedelta, UUID and Decimal for those column types.
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    if hasattr(value, "total_seconds"):
        return value.total_seconds()
    return str(value)
