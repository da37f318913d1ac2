"""Telling Lance's failures apart, and the error each becomes for the vector table.

Lance raises RuntimeError, ValueError or a Rust panic (a BaseException, not an Exception) on a
damaged file; an interrupt is none of these, and the system refusing a file (permissions, no
space) is not damage. VectorStore (vectors.py) wraps its opens and searches with these.
"""

from __future__ import annotations

from pathlib import Path

from emem_graph.errors import StorageError, VectorStoreDamagedError

REFUSALS = ("Permission denied", "Read-only file system", "No space left")
"""Lance's words for the system refusing a file: not damage, nothing to move aside."""


def panicked(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic inside Lance (pyo3's PanicException, a BaseException,
    or pyo3_async_runtimes' RustPanic): damaged bytes, never a bad query."""
    return any(kind.__name__ in ("PanicException", "RustPanic") for kind in type(exc).__mro__)


def lance_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is Lance failing (an Exception or a Rust panic), not an interrupt."""
    return isinstance(exc, Exception) or panicked(exc)


def damaged(path: Path, exc: BaseException) -> StorageError:
    """The error for a vector table Lance cannot read (its message cut to one line)."""
    detail = " ".join(str(exc).split())[:300]
    if any(words in detail for words in REFUSALS):
        return StorageError(f"cannot open vector store {path}: {detail}")
    return VectorStoreDamagedError(
        f"the vector table at {path} is damaged ({type(exc).__name__}: {detail}); open the "
        "memory read-write once to rebuild it from the graph"
    )
