"""How the graph engine's errors become emem_graph errors: what its C++ exceptions arrive as in
Python, its refusal to open a database file, a write refused on a read-only database, and values
read back damaged. storage/graph.py raises them; nothing here talks to the engine."""

from __future__ import annotations

import re
from pathlib import Path

from emem_graph.errors import (
    DamagedMemoryError,
    DatabaseLockedError,
    EmemGraphError,
    GraphEngineMismatchError,
    InvalidInputError,
    ReadOnlyMemoryError,
    StorageError,
)

CHECKPOINT_DEFERRED = "before checkpointing"
"""In the error Kuzu raises at a COMMIT that committed but could not checkpoint."""

ENGINE_ERRORS: tuple[type[Exception], ...] = (
    RuntimeError,
    IndexError,
    KeyError,
    ValueError,
    OverflowError,
)
"""What Kuzu's C++ exceptions arrive as in Python: its own errors are RuntimeError, and
pybind11 turns a standard library exception into IndexError (std::out_of_range, as
"unordered_map::at" from a flipped catalog byte), ValueError (std::invalid_argument) or
OverflowError. Every one of them from the engine is a storage failure, never a raw error."""

READ_ONLY_REFUSAL = "read-only database"
"""In the error Kuzu raises for a write on a database opened read-only ("Cannot execute write
operations in a read-only database!")."""


def damaged_values(path: Path | None, what: str, exc: Exception) -> DamagedMemoryError:
    """The error for values the graph engine read back damaged (text that is not UTF-8)."""
    where = "the graph database" if path is None else f"graph database {path}"
    detail = " ".join(str(exc).split())[:200]
    return DamagedMemoryError(
        f"{what}: {where} holds damaged values ({type(exc).__name__}: {detail}); restore the "
        "memory's directory from a backup"
    )


UNCASTABLE_TEXT = "Unable to cast Python instance of type <class 'str'>"
"""The engine's binding refusing a text parameter it cannot encode (a lone surrogate)."""

INCOMPATIBLE_ARGUMENTS = "incompatible function arguments"
"""In the TypeError the engine's binding (pybind11) raises for an argument it cannot take: a
statement holding a lone surrogate (``prepare(): incompatible function arguments. The following
argument types are supported: ...``, several lines naming its C++ signature)."""

QUERY_ERRORS: tuple[type[Exception], ...] = (*ENGINE_ERRORS, TypeError)
"""What running a statement (prepare, execute) raises: the engine's errors, and the TypeError
of its binding for an argument it cannot take (engine_error makes that InvalidInputError).
Opening a database catches ENGINE_ERRORS only: a TypeError there is no damaged file."""

_ESCAPED_SURROGATE = re.compile(r"\\ud[89a-f][0-9a-f]{2}", re.IGNORECASE)
"""A lone surrogate as the binding's message shows the arguments it was given (``'\\udcff'``)."""

NOT_UNICODE = (
    "a text given to it is not valid Unicode (a lone surrogate such as '\\ud800' cannot be "
    "stored or looked up): give valid text (nothing was read or written)"
)


def engine_error(what: str, exc: Exception) -> EmemGraphError:
    """The emem_graph error for an engine error, on one line: ReadOnlyMemoryError when Kuzu
    refused a write because the database is open read-only, InvalidInputError when a text
    given to the query is not valid Unicode or the binding refused an argument, else a
    StorageError."""
    message = str(exc)
    if UNCASTABLE_TEXT in message:
        return InvalidInputError(f"{what}: {NOT_UNICODE}")
    if isinstance(exc, TypeError) and INCOMPATIBLE_ARGUMENTS in message:
        # Several lines: the C++ signature, then the arguments as given (their repr).
        if _ESCAPED_SURROGATE.search(message.partition("Invoked with:")[2]):
            return InvalidInputError(f"{what}: {NOT_UNICODE}")
        return InvalidInputError(
            f"{what}: the graph engine cannot take an argument given to it (the statement must "
            "be text, its parameters a map of names to values); nothing was read or written"
        )
    if READ_ONLY_REFUSAL in message:
        return ReadOnlyMemoryError(
            f"{what}: the graph engine refused a write, the memory is open read-only "
            "(nothing written)"
        )
    detail = " ".join(message.split())
    if isinstance(exc, TypeError):
        detail = f"TypeError: {detail}"
    return StorageError(f"{what}: {detail}")


def open_error(path: Path, exc: Exception, *, read_only: bool, engine: str) -> StorageError:
    """The emem_graph error for the engine's refusal to open the database file ``path``: held
    by another process, written by another storage version, refused by the system, or damaged."""
    if "Could not set lock" in str(exc):
        # Kuzu: one read-write process and nobody else, or any number of read-only ones.
        holder = "read-write" if read_only else "read-write or read-only"
        return DatabaseLockedError(
            f"graph database {path} is open {holder} in another process (Kuzu lets one "
            "process hold a database read-write and no other process open it meanwhile)"
        )
    if "with a different version" in str(exc):  # another release of the same engine
        return GraphEngineMismatchError(
            f"the memory {path.parent} was written by another storage version of "
            f"{engine} ({' '.join(str(exc).split())}): open it with the release "
            f"that wrote it and copy it with: emem-graph migrate {path.parent} NEW_DIR"
        )
    if "Cannot open file" in str(exc):  # the system refused (read-only, permissions)
        return StorageError(f"cannot open graph database {path}: {exc}")
    # Kuzu's words for a damaged file: "not a valid Kuzu database file", "Reading past
    # the end of the file"...: the graph is the truth, only a backup brings it back.
    return DamagedMemoryError(
        f"cannot open graph database {path} (damaged, or not a {engine} database): "
        f"{' '.join(str(exc).split())}; restore the memory's directory from a backup"
    )
