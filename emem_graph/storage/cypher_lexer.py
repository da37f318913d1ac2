"""A tokenizer for Cypher that follows Kuzu 0.11.3's lexical grammar (``src/antlr4/Cypher.g4``).

The read-only guard (explore/guard.py) and the live graph's statement count
(storage/statement_runner.py) decide on these tokens, so each rule here is Kuzu's,
checked against Kuzu itself (tests/reliability/test_cypher_lexer.py), including the odd ones:

- ``/* ... */`` does not nest, and its body is read in units of one character other than
  ``*``, or ``*`` with the character after it: ``/***/`` and ``/* **/`` do NOT end there (the
  comment runs on to a later ``*/``, or, if there is none, is no comment at all).
- ``//`` runs to a line feed (``\\r\\n`` too) or the end; a lone ``\\r`` leaves it unended.
- Strings take ``'`` or ``"``, may hold raw line breaks, and know only the escapes ``\\\\ \\'
  \\" \\b \\f \\n \\r \\t`` (either case) and ``\\u``/``\\U`` + 4 hex digits; Kuzu's value of
  an escape is the escape without its backslash (``'\\n'`` is ``n``). ``''`` is two strings.
- `` `names` `` hold any character but a backtick; a doubled backtick goes on with the same
  name (kept as written).
- Whitespace is an exact list (U+0085 and U+200B are not in it); identifiers start with a
  Unicode ID_Start or connector character and go on with ID_Continue or currency symbols
  (``a$b`` is one name). Keywords are ASCII, case-insensitive (fullwidth letters are a name).

Anything Kuzu's lexer would not take as a token of a statement (an unended comment, string or
name, an unknown escape, a character no rule takes) is an error here, never a guess: Kuzu
would refuse the statement anyway, and a guess is what let statements through before.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from emem_graph.errors import InvalidInputError

__all__ = [
    "MAX_CYPHER_CHARS",
    "CypherLexError",
    "Token",
    "TokenKind",
    "code_tokens",
    "string_value",
    "tokenize",
]

MAX_CYPHER_CHARS = 100_000
"""The longest statement text read at all; longer text is refused before tokenizing."""

TokenKind = Literal["space", "comment", "word", "name", "string", "number", "punct"]

# Kuzu's WHITESPACE rule, character for character.
WHITESPACE = frozenset(
    " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2008\u2009\u200a\u2028\u2029\u205f\u3000\u00a0\u2007\u202f"
)
# oC_Dash, oC_LeftArrowHead, oC_RightArrowHead: the non-ASCII characters Kuzu takes as - < >.
_SPACE_RUN = re.compile("[" + re.escape("".join(sorted(WHITESPACE))) + "]+")
_LINE_BODY = re.compile(r"[^\n\r]*")
_DASHES = frozenset("\u00ad\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d")
_ARROWS = frozenset("\u27e8\u3008\ufe64\uff1c\u27e9\u3009\ufe65\uff1e")
_PUNCT_2 = frozenset({"..", "<>", "<=", ">=", "!=", "=~", "<<", ">>"})
_PUNCT_1 = frozenset("()[]{},;:.=<>+-*/%^|&!$")
_ESCAPES = frozenset("\\'\"bBfFnNrRtT")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
# Plain runs inside a string: everything but the quote and the backslash.
_PLAIN = {"'": re.compile(r"[^'\\]*"), '"': re.compile(r'[^"\\]*')}
# Kuzu's number rules (ASCII digits only); the longest match wins, as in its lexer.
_NUMBERS = (
    re.compile(r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)[eE]-?[0-9]+"),
    re.compile(r"[0-9]*\.[0-9]+"),
    re.compile(r"0|[1-9][0-9]*"),
)
_ASCII_WORD = re.compile(r"[A-Za-z0-9_$]*")


class CypherLexError(InvalidInputError):
    """The text is not a sequence of Kuzu Cypher tokens (unended string or comment, an unknown
    escape or character)."""


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, its text as written and where it stands (``text[start:end]``)."""

    kind: TokenKind
    text: str
    start: int
    end: int


def tokenize(text: str, *, lenient: bool = False) -> list[Token]:
    """Split ``text`` into Kuzu's tokens, whitespace and comments included.

    Args:
        text: Cypher text of any number of statements.
        lenient: for display and an interactive shell only: an unended string, comment or
            name runs to the end of the text and an unknown character is a ``punct`` token,
            instead of an error. Never decide on what a statement does with it.

    Returns:
        The tokens, in order, covering the text exactly.

    Raises:
        InvalidInputError: the text is longer than MAX_CYPHER_CHARS (also when lenient).
        CypherLexError: (not lenient) text that Kuzu's lexer does not take.
    """
    if len(text) > MAX_CYPHER_CHARS:
        raise InvalidInputError(
            f"the Cypher text is {len(text):,} characters; the most read is "
            f"{MAX_CYPHER_CHARS:,}: give a shorter statement (pass long values as parameters)"
        )
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        kind, end = _next(text, i, lenient)
        tokens.append(Token(kind, text[i:end], i, end))
        i = end
    return tokens


def code_tokens(tokens: list[Token]) -> list[Token]:
    """The tokens that are not whitespace or comments."""
    return [token for token in tokens if token.kind not in ("space", "comment")]


def string_value(token: Token) -> str:
    """The value Kuzu gives a string literal: each escape loses its backslash."""
    body = token.text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            out.append(body[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _next(text: str, i: int, lenient: bool) -> tuple[TokenKind, int]:
    """The kind and end of the token that starts at ``i``."""
    char = text[i]
    if char in WHITESPACE:
        return "space", _SPACE_RUN.match(text, i).end()  # type: ignore[union-attr]
    if char == "/" and text.startswith("/*", i):
        return "comment", _block_comment(text, i, lenient)
    if char == "/" and text.startswith("//", i):
        return "comment", _line_comment(text, i, lenient)
    if char in "'\"":
        return "string", _string(text, i, lenient)
    if char == "`":
        return "name", _escaped_name(text, i, lenient)
    if char.isascii() and (char.isdigit() or (char == "." and _digit_at(text, i + 1))):
        return "number", _number(text, i)
    if _starts_word(char):
        return "word", _word(text, i)
    if text[i : i + 2] in _PUNCT_2:
        return "punct", i + 2
    if char in _PUNCT_1 or char in _DASHES or char in _ARROWS:
        return "punct", i + 1
    if lenient:
        return "punct", i + 1
    raise CypherLexError(
        f"character {char!r} (U+{ord(char):04X}) at offset {i} is not part of any Cypher "
        "token; remove it (or put it inside a string)"
    )


def _number(text: str, i: int) -> int:
    ends = [match.end() for pattern in _NUMBERS if (match := pattern.match(text, i))]
    # Only "." followed by a non-digit matches none of them, and _next does not call us then.
    return max(ends)


def _digit_at(text: str, i: int) -> bool:
    return i < len(text) and "0" <= text[i] <= "9"


def _block_comment(text: str, i: int, lenient: bool) -> int:
    # Kuzu: '/*' ( ~[*] | '*' ~[/] )* '*/' -- a star always takes the character after it
    # along, unless that character is the slash that ends the comment.
    j = i + 2
    while True:
        star = text.find("*", j)
        if star < 0 or star + 1 >= len(text):
            break
        if text[star + 1] == "/":
            return star + 2
        j = star + 2
    if lenient:
        return len(text)
    raise CypherLexError(
        f"the /* comment at offset {i} never ends for Kuzu (it needs a */ whose star does not "
        "follow another unpaired star: /***/ and /* **/ do not end it); close it with ' */'"
    )


def _line_comment(text: str, i: int, lenient: bool) -> int:
    # Kuzu: '//' ~[\n\r]* '\r'? ( '\n' | EOF ).
    end = _LINE_BODY.match(text, i + 2).end()  # type: ignore[union-attr]
    if end == len(text) or text[end] == "\n":
        return min(end + 1, len(text))
    if text.startswith("\r\n", end):
        return end + 2
    if lenient:
        return end + 1
    raise CypherLexError(
        f"the // comment at offset {i} ends in a lone carriage return, which Kuzu does not "
        "take as a line end; end lines with \\n or \\r\\n"
    )


def _string(text: str, i: int, lenient: bool) -> int:
    quote = text[i]
    plain = _PLAIN[quote]
    j = i + 1
    while True:
        j = plain.match(text, j).end()  # type: ignore[union-attr]
        if j >= len(text):
            break
        if text[j] == quote:
            return j + 1
        escape = text[j + 1 : j + 2]  # text[j] is a backslash
        if escape in _ESCAPES and escape:
            j += 2
        elif escape in ("u", "U") and _HEX4.match(text, j + 2):
            j += 6
        elif lenient:
            j += 2
        else:
            shown = text[j : j + 6] if escape in ("u", "U") else text[j : j + 2]
            raise CypherLexError(
                f"the string at offset {i} has the escape {shown!r}, which Kuzu does not know "
                "(it knows \\\\ \\' \\\" \\b \\f \\n \\r \\t and \\u or \\U with 4 hex digits)"
            )
    if lenient:
        return len(text)
    raise CypherLexError(f"the string at offset {i} never ends: close it with {quote}")


def _escaped_name(text: str, i: int, lenient: bool) -> int:
    # Kuzu: ( '`' ~[`]* '`' )+ -- a doubled backtick goes on with the same name.
    j = i
    while j < len(text) and text[j] == "`":
        close = text.find("`", j + 1)
        if close < 0:
            if lenient:
                return len(text)
            raise CypherLexError(f"the `name` at offset {i} never ends: close it with `")
        j = close + 1
    if j == i + 2 and not lenient:
        raise CypherLexError(f"the `` at offset {i} is an empty name, which Kuzu refuses")
    return j


def _starts_word(char: str) -> bool:
    if char.isascii():
        return char.isalpha() or char == "_"
    return char.isidentifier() or unicodedata.category(char) == "Pc"


def _word(text: str, i: int) -> int:
    end = i + 1
    while end < len(text):
        end = _ASCII_WORD.match(text, end).end()  # type: ignore[union-attr]
        if end >= len(text):
            break
        char = text[end]
        if char.isascii() or char in WHITESPACE:
            break
        # Kuzu: ID_Continue or a currency symbol (Sc).
        if not (("a" + char).isidentifier() or unicodedata.category(char) in ("Sc", "Pc")):
            break
        end += 1
    return end
