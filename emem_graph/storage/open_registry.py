"""Which graph databases this process holds open: one writer per memory, never two.

Kuzu locks a database file against other processes only: a second ``kuzu.Database`` on the same
path in the same process is accepted, and the two lose each other's writes (STORAGE-FACTS.md).
GraphDB claims its file here before opening it, so a second open in this process is refused with
the same kind of error a second process gets. The file is named by what it is on disk (the
device and inode of its real directory, plus its name), so relative paths, ``./x`` and ``x``,
trailing slashes and symlinks all name one claim.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from emem_graph.errors import DatabaseInUseError

_Key = tuple[int, int, str]


@dataclass
class _Holding:
    read_only: bool
    count: int = 0
    paths: set[str] = field(default_factory=set)


_lock = threading.Lock()
_held: dict[_Key, _Holding] = {}


def database_key(path: Path) -> _Key:
    """What names ``path`` on disk: (device, inode) of its real parent directory and its name.

    The parent directory must exist (GraphDB creates it first)."""
    real = Path(os.path.realpath(path))
    stat = real.parent.stat()
    return (stat.st_dev, stat.st_ino, real.name)


class Claim:
    """This process's claim on one graph database file; release() is idempotent."""

    def __init__(self, key: _Key) -> None:
        self._key = key
        self._released = False

    def release(self) -> None:
        """Give the claim back (the database was closed, or its open failed)."""
        with _lock:
            if self._released:
                return
            self._released = True
            holding = _held.get(self._key)
            if holding is None:
                return
            holding.count -= 1
            if holding.count <= 0:
                del _held[self._key]


def claim(path: Path, *, read_only: bool) -> Claim:
    """Claim the graph database at ``path`` for this process.

    Read-only claims share a file; a read-write claim shares it with nobody (Kuzu's rule
    between processes, kept inside this one).

    Raises:
        DatabaseInUseError: the file is open read-write in this process, or read-only when a
            read-write claim is asked for.
    """
    key = database_key(path)
    with _lock:
        holding = _held.get(key)
        if holding is not None and not (read_only and holding.read_only):
            mode = "read-only" if holding.read_only else "read-write"
            first = sorted(holding.paths)[0]
            alias = "" if first == str(path) else f" (opened as {first})"
            raise DatabaseInUseError(
                f"the memory's graph database {path} is already open {mode} in this process"
                f"{alias}; Kuzu loses writes when one process opens a database twice: use the "
                "instance that has it open, or close() it first"
            )
        if holding is None:
            holding = _held[key] = _Holding(read_only=read_only)
        holding.count += 1
        holding.paths.add(str(path))
        return Claim(key)


def _forget_in_child() -> None:
    # A forked child holds none of its parent's databases (Kuzu's file locks are not
    # inherited): its claims start empty, and a fresh lock for the registry.
    global _lock
    _lock = threading.Lock()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def held_read_write(path: Path) -> bool:
    """Whether this process holds the graph database at ``path`` read-write."""
    try:
        key = database_key(path)
    except OSError:
        return False
    with _lock:
        holding = _held.get(key)
        return holding is not None and not holding.read_only


def held_count() -> int:
    """How many graph database files this process holds open (for tests)."""
    with _lock:
        return len(_held)
