"""One Cypher statement as text, before it runs anywhere: its code (comments and strings
blanked), its statements and ``$parameters``, and check_statement(), which every read-only
surface (the sandbox, the shell, the ROS Query service) calls before anything binds it.

Read on Kuzu's own tokens (storage/cypher_lexer.py); the allow-list itself is explore/guard.py.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from emem_graph import validation
from emem_graph.errors import InvalidInputError, QueryResourceError
from emem_graph.explore.guard import check_read_only
from emem_graph.storage.cypher_lexer import Token, code_tokens, tokenize

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_TIMEOUT_S",
    "LIVE_GENERATED_MAX",
    "check_live_bounds",
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
            timeout, or text UTF-8 cannot encode (a lone surrogate) in the statement or a
            parameter.
    """
    if limit < 1:
        raise InvalidInputError(f"the row limit must be at least 1, not {limit}")
    if not (timeout_s > 0 and math.isfinite(timeout_s)):
        raise InvalidInputError(
            f"the timeout must be a positive number of seconds, not {timeout_s}"
        )
    # The engine's binding takes UTF-8 only: a lone surrogate (argv bytes that are not UTF-8,
    # '\ud800' from JSON) reached it and came back as a bare TypeError naming its C++ signature.
    validation.plain_text("the Cypher statement", cypher)
    given = dict(params or {})
    _check_param_text(given)
    check_read_only(cypher)
    _check_params(parameters_of(cypher), given)
    return given


def _check_param_text(params: dict[str, Any]) -> None:
    """Refuse a parameter name or value (nested in lists and maps too) holding text UTF-8
    cannot encode, naming where it is."""
    stack: list[tuple[str, Any]] = []
    for key, value in params.items():
        if isinstance(key, str):
            validation.plain_text("a parameter name", key)
        stack.append((f"parameter ${key}", value))
    seen: set[int] = set()
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            validation.plain_text(where, value)
        elif isinstance(value, dict | list | tuple) and id(value) not in seen:
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for index, item in items:
                if isinstance(index, str):
                    validation.plain_text(f"a key of {where}", index)
                stack.append((f"{where}[{index!r}]", item))


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


# --- the live path's bound on constant folding -------------------------------------------------

LIVE_GENERATED_MAX = 100_000
"""The most elements (or characters) range(), repeat(), lpad() and rpad() may make together in
one statement on the live memory: Kuzu builds them while it binds, before its timeout and
outside its buffer pool (range(1, 3000000) took 1.7 GB and 3 s here)."""
_GENERATOR = re.compile(r"(?<![.\w$])(range|repeat|lpad|rpad)\s*\(", re.IGNORECASE)
_INTEGER = re.compile(r"^[+-]?\d+$")


def check_live_bounds(cypher: str) -> None:
    """Refuse a statement for the live memory whose generator functions could build more than
    LIVE_GENERATED_MAX values while Kuzu binds it: each call must have integer literals for its
    sizes, and their product (nesting multiplies) must stay under the bound.

    This is no bound on every way a statement can grow at bind time (a chain of ``WITH a + a``
    doubles a literal list without any generator); the sandbox, which the live memory cannot
    use, is the bound that holds for all of them.

    Raises:
        QueryResourceError: a generator with sizes that are not literals, or too large.
    """
    code = cypher_code(cypher)
    total = 1
    for match in _GENERATOR.finditer(code):
        name = match.group(1).lower()
        depth, end = 1, match.end()
        while end < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[end], 0)
            end += 1
        inner = code[match.end() : end - 1]
        arguments = [part.strip() for part in inner.split(",")]
        sizes = arguments[:3] if name == "range" else arguments[1:2]
        if depth or "(" in inner or not sizes or not all(_INTEGER.match(a) for a in sizes):
            raise QueryResourceError(
                f"on the live memory {name}() takes integer literals only (Kuzu builds its "
                "result before the timeout applies); write the numbers out, or query a copy of "
                "the memory with emem-graph cypher, whose sandbox bounds memory"
            )
        numbers = [int(a) for a in sizes]
        if name == "range":
            step = numbers[2] if len(numbers) > 2 else 1
            size = abs(numbers[1] - numbers[0]) // max(abs(step), 1) + 1
        else:
            size = abs(numbers[0]) * max(1, len(cypher[match.end() : end].split(",")[0]))
        total *= max(size, 1)
        if total > LIVE_GENERATED_MAX:
            raise QueryResourceError(
                f"on the live memory range(), repeat(), lpad() and rpad() may make at most "
                f"{LIVE_GENERATED_MAX:,} values per statement (this one: more); Kuzu builds them "
                "before the timeout applies, in the robot's process"
            )
