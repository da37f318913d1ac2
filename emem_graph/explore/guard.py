"""The read-only guard: an allow-list of what a read statement may say, on Kuzu's own tokens.

check_read_only() accepts one statement that only reads: it starts with MATCH, OPTIONAL MATCH,
UNWIND, WITH, RETURN or CALL (EXPLAIN [LOGICAL] / PROFILE before it are fine), every CALL
calls a table function of READ_TABLE_FUNCTIONS, and no word of WRITE_WORDS stands in code
(outside strings, comments and `names`, and not as a property key after ``.`` or a parameter
name after ``$``). Kuzu's grammar leaves a query no other way to write, read files, load code
or change a setting: each of those begins with one of those words or is a CALL.

The tokens come from storage/cypher_lexer.py, which follows Kuzu's lexical rules exactly and refuses
what it cannot read, so the guard and Kuzu see the same words.
"""

from __future__ import annotations

from typing import NoReturn

from emem_graph.errors import InvalidInputError, ReadOnlyQueryError
from emem_graph.storage.cypher_lexer import Token, code_tokens, tokenize

__all__ = [
    "MAX_CASE_DEPTH",
    "MAX_CODE_TOKENS",
    "MAX_NESTING_DEPTH",
    "READ_TABLE_FUNCTIONS",
    "WRITE_WORDS",
    "check_read_only",
    "statements_of",
]

MAX_NESTING_DEPTH = 40
"""The deepest nesting of ( [ { accepted: Kuzu's parser recurses on each level, takes time
that grows steeply with depth, and crashes the process (SIGSEGV) near 3,000 levels."""

MAX_CASE_DEPTH = 8
"""The deepest nesting of CASE ... END accepted: Kuzu's parse time doubles or so with each
level (16 levels took 1 s, 20 took 9 s, 50 did not end in 2 minutes, 800 crashed it)."""

MAX_CODE_TOKENS = 2_000
"""The most tokens (whitespace and comments aside) in a statement: Kuzu's parser takes time
that grows faster than linearly with long operator chains (``1 + 1 + ...``: 1,000 terms took
0.6 s, 2,000 took 2 s) and its timeout does not cover parsing. The store's own queries use
at most 390."""

_FIRST_WORDS = ("MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN", "CALL")
_PREFIXES = ("EXPLAIN", "PROFILE")

WRITE_WORDS = frozenset(
    {
        # Updating clauses and LOAD FROM (reads any file the process can read).
        "CREATE",
        "MERGE",
        "SET",
        "DELETE",
        "DETACH",
        "REMOVE",
        "LOAD",
        # Statements: schema, files, extensions, databases, transactions.
        "DROP",
        "ALTER",
        "COPY",
        "EXPORT",
        "IMPORT",
        "INSTALL",
        "UNINSTALL",
        "UPDATE",
        "FORCE",
        "ATTACH",
        "USE",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "CHECKPOINT",
        "COMMENT",
        "MACRO",
        "TRANSACTION",
        "EXTENSION",
        "DATABASE",
    }
)
"""Keywords refused wherever they stand in code: each begins or belongs to a statement or
clause that writes the database or files, reads files, loads code or changes the session."""

READ_TABLE_FUNCTIONS = frozenset(
    {
        "show_tables",
        "table_info",
        "show_connection",
        "current_setting",
        "db_version",
        "catalog_version",
        "show_functions",
        "show_indexes",
        "show_sequences",
        "show_warnings",
        "show_attached_databases",
        "show_loaded_extensions",
        "show_official_extensions",
        "show_projected_graphs",
        "projected_graph_info",
        "storage_info",
        "stats_info",
    }
)
"""Kuzu 0.11.3's table functions that only read the catalog or settings. Every other CALL is
refused: read_csv/read_parquet/read_json/read_npy/json_scan read files, create_*/drop_* write
indexes, project_graph and the graph algorithms build session state, clear_warnings and
``CALL name = value`` change the session."""

_WRITING_FUNCTIONS = frozenset({"nextval"})
"""Scalar functions that write (nextval advances a sequence)."""


def check_read_only(cypher: str) -> None:
    """Accept ``cypher`` only if it is one statement that reads.

    Args:
        cypher: the statement text, as it will be given to Kuzu.

    Raises:
        InvalidInputError: the text is too long, nested too deep, empty, holds several
            statements, or is not made of Kuzu tokens (an unended string or comment, an
            unknown escape or character).
        ReadOnlyQueryError: the statement could write, read files, load code or change the
            session; the message names the word refused.
    """
    statements = statements_of(cypher)
    if not statements:
        raise InvalidInputError("the Cypher statement is empty")
    if len(statements) > 1:
        raise InvalidInputError(f"give one Cypher statement at a time (found {len(statements)})")
    code = statements[0]
    if len(code) > MAX_CODE_TOKENS:
        raise InvalidInputError(
            f"the statement has {len(code):,} tokens; the most taken is {MAX_CODE_TOKENS:,} "
            "(Kuzu's parser slows down steeply on long ones): pass long values as parameters"
        )
    _check_depth(code)
    _check_first_word(code)
    for index, token in enumerate(code):
        if token.kind != "word":
            continue
        if index > 0 and code[index - 1].text in (".", "$"):
            continue  # a property key or a parameter name, never a clause
        word = token.text.upper() if token.text.isascii() else ""
        if word in WRITE_WORDS:
            _refuse(word)
        if word == "CALL":
            _check_call(code, index)
        following = code[index + 1].text if index + 1 < len(code) else ""
        if token.text.lower() in _WRITING_FUNCTIONS and following == "(":
            _refuse(f"{token.text}()", "it writes")


def statements_of(cypher: str) -> list[list[Token]]:
    """The code tokens of each non-empty statement of ``cypher`` (split at ``;``, which Kuzu
    uses for nothing else).

    Raises:
        InvalidInputError: the text is too long or not made of Kuzu tokens.
    """
    statements: list[list[Token]] = [[]]
    for token in code_tokens(tokenize(cypher)):
        if token.text == ";" and token.kind == "punct":
            statements.append([])
        else:
            statements[-1].append(token)
    return [statement for statement in statements if statement]


def _check_depth(code: list[Token]) -> None:
    depth = 0
    cases = 0
    for index, token in enumerate(code):
        if token.kind == "word" and not (index and code[index - 1].text in (".", "$")):
            word = token.text.upper()
            cases += (word == "CASE") - (word == "END")
            if cases > MAX_CASE_DEPTH:
                raise InvalidInputError(
                    f"the statement nests CASE deeper than {MAX_CASE_DEPTH} levels (at offset "
                    f"{token.start}); Kuzu's parser takes exponential time on nested CASE: "
                    "flatten it (one CASE takes many WHEN branches)"
                )
        if token.kind != "punct":
            continue
        if token.text in "([{":
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                raise InvalidInputError(
                    f"the statement nests ( [ {{ deeper than {MAX_NESTING_DEPTH} levels (at "
                    f"offset {token.start}); Kuzu's parser slows down steeply and can crash "
                    "on deep nesting: flatten it"
                )
        elif token.text in ")]}":
            depth -= 1


def _check_first_word(code: list[Token]) -> None:
    index = 0
    while index < len(code) and code[index].text.upper() in _PREFIXES:
        index += 1
        if index < len(code) and code[index - 1].text.upper() == "EXPLAIN":
            index += code[index].text.upper() == "LOGICAL"
    if index >= len(code):
        raise InvalidInputError("the Cypher statement is empty")
    first = code[index]
    word = first.text.upper() if first.kind == "word" and first.text.isascii() else ""
    if word not in _FIRST_WORDS:
        _refuse(word or first.text)


def _check_call(code: list[Token], index: int) -> None:
    # CALL f(...) runs table function f; CALL name = value (or anything else) is refused.
    name = code[index + 1] if index + 1 < len(code) else None
    after = code[index + 2].text if index + 2 < len(code) else ""
    if name is None or name.kind not in ("word", "name"):
        _refuse("CALL", "only CALL of a read-only table function is taken")
    function = name.text[1:-1] if name.kind == "name" else name.text
    if after != "(":
        _refuse(f"CALL {function}", "CALL name = value changes a setting")
    if function.lower() not in READ_TABLE_FUNCTIONS:
        _refuse(
            f"CALL {function}",
            "only table functions that read the catalog or settings are taken, such as "
            "show_tables, table_info and current_setting",
        )


def _refuse(what: str, why: str = "") -> NoReturn:
    reason = f"{why}; " if why else ""
    raise ReadOnlyQueryError(
        f"the memory is read-only here: {what} statements are refused ({reason}this surface "
        "only reads: MATCH, OPTIONAL MATCH, UNWIND, WITH, RETURN and CALL of read-only "
        "functions; it writes nothing, reads no files, loads no code and changes no setting)"
    )
