"""Which graph databases this process holds open: one writer per memory, never two, in this
process and between processes.

Kuzu locks a database file against other processes only: a second ``kuzu.Database`` on the same
path in the same process is accepted, and the two lose each other's writes (STORAGE-FACTS.md).
GraphDB claims its file here before opening it, so a second open in this process is refused with
the same kind of error a second process gets. The file is named by what it is on disk (the
device and inode of its real directory, plus its name), so relative paths, ``./x`` and ``x``,
trailing slashes and symlinks all name one claim.

Between processes the guarantee is this module's too, not the engine's: the first claim on a
file in a process takes an advisory lock (flock) on ``<file>.lock`` beside it, exclusive for a
read-write claim and shared for a read-only one, held until the last claim is released or the
process ends. Kuzu 0.11.3 refuses a second process on its own, but its fork LadybugDB 0.22 lets
a read-only process open a database another process is writing (and such readers can hit index
errors), so one writer and a clear refusal cannot be left to the engine.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from emem_graph.errors import DatabaseInUseError, DatabaseLockedError, StorageError

_Key = tuple[int, int, str]


@dataclass
class _Holding:
    read_only: bool
    count: int = 0
    paths: set[str] = field(default_factory=set)
    lock_fd: int | None = None


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
                if holding.lock_fd is not None:
                    os.close(holding.lock_fd)  # the last claim here: the flock goes with it


def claim(path: Path, *, read_only: bool) -> Claim:
    """Claim the graph database at ``path`` for this process.

    Read-only claims share a file; a read-write claim shares it with nobody (Kuzu's rule
    between processes, kept inside this one).

    Raises:
        DatabaseInUseError: the file is open read-write in this process, or read-only when a
            read-write claim is asked for.
        DatabaseLockedError: another process holds it read-write, or holds it at all when a
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
            holding = _Holding(read_only=read_only, lock_fd=_lock_file(path, read_only))
            _held[key] = holding
        holding.count += 1
        holding.paths.add(str(path))
        return Claim(key)


def lock_path(path: Path) -> Path:
    """The file beside the graph database ``path`` that processes lock to share it."""
    return path.with_name(f"{path.name}.lock")


def _lock_file(path: Path, read_only: bool) -> int | None:
    """Lock ``<path>.lock`` for this process: exclusive for a writer, shared for a reader.

    Returns the open descriptor that holds the lock, or None for a read-only claim when the
    lock file is absent or unreadable.
    """
    target = lock_path(path)
    try:
        # A reader only reads the lock file, and creates nothing (a read-only open changes
        # nothing in the directory; a sandbox under Landlock could not): a memory that never
        # had a read-write open by this version has none, and its reader goes unlocked (the
        # Kuzu files such memories hold are locked by Kuzu itself).
        if read_only:
            fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
        else:
            fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if read_only:
            return None
        raise StorageError(f"cannot open graph database {path}: {target}: {exc}") from exc
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StorageError(f"cannot lock graph database {path}: {exc}") from exc
        holder = "read-write" if read_only else "read-write or read-only"
        raise DatabaseLockedError(
            f"graph database {path} is open {holder} in another process (one process may "
            "hold a memory read-write and no other process open it meanwhile)"
        ) from exc
    return fd


def _forget_in_child() -> None:
    # A forked child holds none of its parent's databases: its claims start empty, and a
    # fresh lock for the registry. Its copies of the lock descriptors are closed so that the
    # parent's locks end with the parent, not with a child that outlives it.
    global _lock
    _lock = threading.Lock()
    for holding in _held.values():
        if holding.lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(holding.lock_fd)
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
