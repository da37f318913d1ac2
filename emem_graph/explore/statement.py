"""One Cypher statement as text, before it runs anywhere: its code (comments and strings
blanked), its statements and ``$parameters``, and check_statement(), which every read-only
surface (the sandbox, the shell, the ROS Query service) calls before anything binds it.

Read on Kuzu's own tokens (explore/lexer.py); the allow-list itself is explore/guard.py.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from emem_graph.errors import InvalidInputError
from emem_graph.explore.guard import check_read_only
from emem_graph.explore.lexer import Token, code_tokens, tokenize

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_TIMEOUT_S",
    "check_statement",
    "cypher_code",
    "parameters_of",
    "split_statements",
]

DEFAULT_LIMIT = 1000
DEFAULT_TIMEOUT_S = 30.0


def check_statement(
    cypher: str,
    params: dict[str, Any] | None = None,
    *,
    limit: int = DEFAULT_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Check one statement before it runs anywhere (in-process or in the sandbox): the row
    limit, the timeout, one statement, the text allow-list, the parameters.

    Returns:
        The parameters to run it with.

    Raises:
        ReadOnlyQueryError: the statement would write (the memory or files).
        InvalidInputError: a missing or unknown parameter, several statements, a bad limit or
            timeout.
    """
    if limit < 1:
        raise InvalidInputError(f"the row limit must be at least 1, not {limit}")
    if not (timeout_s > 0 and math.isfinite(timeout_s)):
        raise InvalidInputError(
            f"the timeout must be a positive number of seconds, not {timeout_s}"
        )
    check_read_only(cypher)
    given = dict(params or {})
    _check_params(parameters_of(cypher), given)
    return given


def parameters_of(cypher: str) -> tuple[str, ...]:
    """The ``$parameters`` a statement uses, in order of first use (comments and strings
    ignored)."""
    code = code_tokens(tokenize(cypher, lenient=True))
    names = [
        _name_text(token)
        for before, token in itertools.pairwise(code)
        if before.text == "$"
        and before.kind == "punct"
        and before.end == token.start
        and token.kind in ("word", "name", "number")
    ]
    return tuple(dict.fromkeys(names))


def _check_params(needed: tuple[str, ...], given: dict[str, Any]) -> None:
    # Kuzu reads a parameter that was not given as NULL, silently: check before running.
    missing = [name for name in needed if name not in given]
    if missing:
        names = ", ".join(f"${name}" for name in missing)
        raise InvalidInputError(
            f"the query needs parameter(s) {names}: give each as --param NAME=VALUE"
        )
    unknown = [name for name in given if name not in needed]
    if unknown:
        takes = ", ".join(f"${name}" for name in needed) or "none"
        raise InvalidInputError(
            f"the query has no parameter(s) {', '.join(unknown)} (it takes: {takes})"
        )


def cypher_code(cypher: str) -> str:
    """``cypher`` with comments and quoted text blanked out, character for character (so
    positions still match): what is left is keywords, names, numbers and punctuation. An
    unended string or comment is blanked to the end (the text is read leniently, for display
    and the shell; check_read_only decides on what runs)."""
    parts = []
    for token in tokenize(cypher, lenient=True):
        blank = token.kind in ("comment", "string", "name")
        parts.append(re.sub(r"[^\n]", " ", token.text) if blank else token.text)
    return "".join(parts)


def split_statements(text: str) -> list[str]:
    """Split text at the ``;`` that end statements (not those inside strings, comments or
    `names`, read as Kuzu reads them); empty statements are dropped."""
    statements: list[str] = []
    start = 0
    tokens = tokenize(text, lenient=True)
    ends = [t.start for t in tokens if t.kind == "punct" and t.text == ";"] + [len(text)]
    code = cypher_code(text)
    for end in ends:
        if code[start:end].strip():
            statements.append(text[start:end].strip())
        start = end + 1
    return statements


def _name_text(token: Token) -> str:
    return token.text[1:-1] if token.kind == "name" else token.text
