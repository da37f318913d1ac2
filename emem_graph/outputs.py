"""Where commands may write: never inside a memory, never over what they did not create.

A command that writes files (``export``, ``map``, ``demo``, ``make-bag``, ``bench``) claims its
output here first. A memory directory is recognised by what a SpatioTemporalMemory keeps in
it (MEMORY_MARKERS); paths are resolved first (symlinks, ``..``), so no spelling of a path
reaches into a memory. What a command wrote is recorded where it wrote it:

- a file (graphml, json, png, yaml, and each file of a parquet/csv export): an entry in
  ``.emem-graph-outputs.json`` of the file's directory with the size and modification time the
  file had when the command wrote it. A file changed since, one that has other names (hard
  links), a symbolic link, or a file no command wrote is someone else's. A new file is written
  under a temporary name beside it and renamed into place (write_replacing): a link put there
  meanwhile is replaced, never written through.
- a directory (parquet/csv exports, the demo's memory, bench scratch): ``.emem-graph-output``
  inside it, naming the command that created it and the entries it made there
  (record_entries). Replacing such a directory removes those entries only, and only while no
  other process holds the memory in it; anything else there is refused, by name.

Anything else that exists at the path is refused with one InvalidInputError line naming the
path and what to do; nothing is deleted or overwritten (there is no --force).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from emem_graph.errors import DatabaseLockedError, InvalidInputError
from emem_graph.ingest.rejected import REJECTED_FILE
from emem_graph.ingest.unwritten import UNWRITTEN_FILE
from emem_graph.storage import open_registry, probe
from emem_graph.storage.health import HEALTH_FILE, MARK_FILE
from emem_graph.storage.store import GRAPH_FILE, PENDING_DIR, VECTOR_DIR

MEMORY_MARKERS = (GRAPH_FILE, f"{GRAPH_FILE}.wal", VECTOR_DIR, PENDING_DIR)
"""Entries only a memory directory holds: one of them makes a directory a memory."""
FILE_MANIFEST = ".emem-graph-outputs.json"
"""Per directory: the files commands wrote there, with their size and mtime then."""
DIRECTORY_MARKER = ".emem-graph-output"
"""Inside a directory a command created: which command, and the entries it made there."""
_RECORD_MAX_BYTES = 4 * 1024 * 1024
"""A manifest or marker larger than this is not one of ours (never read whole)."""


def is_memory_dir(path: Path) -> bool:
    """True when ``path`` is a directory holding an emem_graph memory."""
    return path.is_dir() and any((path / name).exists() for name in MEMORY_MARKERS)


def enclosing_memory(path: Path) -> Path | None:
    """The memory directory ``path`` (resolved) is or lies in, or None."""
    resolved = Path(path).resolve()
    for candidate in (resolved, *resolved.parents):
        if is_memory_dir(candidate):
            return candidate
    return None


def _refuse_inside_memory(path: Path, what: str, own_memory: bool = False) -> Path:
    resolved = Path(path).resolve()
    memory = enclosing_memory(resolved.parent if own_memory else resolved)
    if memory is not None:
        where = "is the memory" if memory == resolved else "is inside the memory"
        raise InvalidInputError(
            f"{path} {where} {memory}; {what} never writes into a memory: give a path outside it"
        )
    return resolved


def claim_file(path: str | Path, what: str) -> Path:
    """Check that ``what`` (a command) may write the file ``path``.

    Allowed: a path that does not exist, or a file this module recorded as written by a
    command and unchanged since (size and mtime), with no other name. Write it with
    write_replacing(), or call record_file() after writing.

    Returns:
        The resolved path.

    Raises:
        InvalidInputError: the path is or lies in a memory directory, is a directory, a
            symbolic link (dangling or not), or an existing file no command wrote (or one
            changed since, or one with other hard links).
    """
    given = Path(path)
    resolved = _refuse_inside_memory(given, what)
    if given.is_symlink():
        raise InvalidInputError(
            f"{path} is a symbolic link; {what} never writes through one: give another path, "
            "or remove the link yourself"
        )
    if resolved.is_dir():
        raise InvalidInputError(f"{path} is a directory; {what} writes one file: give a file name")
    reason = _not_ours(resolved)
    if reason is not None:
        raise InvalidInputError(
            f"{path} {reason}; {what} does not overwrite it: choose another path, or remove "
            "the file yourself"
        )
    return resolved


def record_file(path: str | Path) -> None:
    """Remember that a command wrote ``path`` (now), so a later run may replace it."""
    resolved = Path(path).resolve()
    manifest = _read_manifest(resolved.parent)
    status = resolved.stat()
    manifest[resolved.name] = {"size": status.st_size, "mtime_ns": status.st_mtime_ns}
    _write_json(resolved.parent / FILE_MANIFEST, {"files": manifest})


@contextmanager
def write_replacing(path: Path) -> Iterator[Path]:
    """A new name beside ``path`` for the caller to write; once written it is renamed over
    ``path`` and recorded (record_file). The rename replaces whatever is at ``path`` (a link
    put there after claim_file() included) and never writes through it; a failed write leaves
    ``path`` as it was.
    """
    temporary = _temporary_beside(path)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    record_file(path)


def _temporary_beside(path: Path) -> Path:
    # Unguessable, so nobody can put a link under it first; the writer creates it (with the
    # umask's permissions, as the file it replaces had).
    return path.with_name(f".{path.name[:100]}.{secrets.token_hex(6)}.part")


def _write_json(target: Path, content: dict[str, Any]) -> None:
    temporary = _temporary_beside(target)
    try:
        temporary.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _read_manifest(directory: Path) -> dict[str, Any]:
    target = directory / FILE_MANIFEST
    if not target.exists():
        return {}
    try:
        if target.stat().st_size > _RECORD_MAX_BYTES:
            raise ValueError("too large")
        files = json.loads(target.read_text(encoding="utf-8"))["files"]
        if not isinstance(files, dict):
            raise ValueError("not a manifest")
        return files
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InvalidInputError(
            f"{target} is not emem-graph's list of its outputs ({exc}); write elsewhere, or "
            "remove it yourself"
        ) from None


def _not_ours(resolved: Path) -> str | None:
    """Why the existing ``resolved`` is not a command's own unchanged output; None when it
    is, or when nothing is there."""
    try:
        status = resolved.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(status.st_mode):
        return "exists and is not a regular file"
    if status.st_nlink > 1:
        return f"has {status.st_nlink - 1} other name(s) (hard links) that would change with it"
    entry = _read_manifest(resolved.parent).get(resolved.name)
    if not isinstance(entry, dict):
        return "exists and emem-graph has no record of writing it"
    if entry.get("size") != status.st_size or entry.get("mtime_ns") != status.st_mtime_ns:
        return "was changed since emem-graph wrote it"
    return None


def claim_directory(
    path: str | Path,
    command: str,
    *,
    replace: bool = False,
    becomes_memory: bool = False,
    create: bool = True,
) -> Path:
    """Make ``path`` a directory ``command`` owns: create it, or take an empty one or one
    ``command`` created before (marker inside); with ``replace`` the entries such an earlier
    one records as ``command``'s (record_entries) are removed first.

    Args:
        path: the directory.
        command: the command's name, written into the marker.
        replace: remove what ``command`` made in its earlier output: refused when anything
            else is there, or while another process holds the memory in it.
        becomes_memory: the command builds a memory in it (the demo): being a memory is then
            no refusal for a directory that carries the marker.
        create: False only checks (nothing is created or deleted).

    Returns:
        The resolved directory (existing, with the marker inside).

    Raises:
        InvalidInputError: the path is or lies in a memory, is a file, or is a non-empty
            directory ``command`` did not create; with ``replace``, it holds entries
            ``command`` has no record of making (named).
        DatabaseLockedError: with ``replace``, the memory in it is open in another process
            (or in this one).
    """
    given = Path(path)
    resolved = given.resolve()
    marker = resolved / DIRECTORY_MARKER
    recorded = _read_marker(marker, command) if resolved.is_dir() else None
    ours = recorded is not None
    _refuse_inside_memory(given, command, own_memory=becomes_memory and ours)
    if resolved.exists() and not resolved.is_dir():
        raise InvalidInputError(
            f"{path} is a file; {command} writes a directory: choose another path"
        )
    if resolved.is_dir() and not ours and any(resolved.iterdir()):
        raise InvalidInputError(
            f"{path} is a directory {command} did not create and it is not empty; "
            f"{command} neither deletes nor mixes into it: choose a new or empty directory, "
            "or remove it yourself"
        )
    if recorded is not None and replace and becomes_memory and is_memory_dir(resolved):
        # The memory's own files (a log, a health record, rows set aside...) appear when it is
        # opened after the command: they are part of the memory the command made.
        recorded |= {entry.name for entry in resolved.iterdir() if _memory_keeps(entry.name)}
    if recorded is not None and replace:
        _refuse_foreign_entries(given, resolved, command, recorded)
    if not create:
        return resolved
    if recorded is not None and replace:
        _remove_entries(given, resolved, command, recorded)
        recorded = None  # nothing of the earlier output is left to record
    resolved.mkdir(parents=True, exist_ok=True)
    if recorded is None:
        _write_json(marker, {"created_by": command, "entries": []})
    return resolved


def record_entries(directory: Path, command: str, names: Iterable[str]) -> None:
    """Remember that ``command`` made the entries ``names`` in its own ``directory`` (claimed
    with claim_directory), so that a later run may replace them (and nothing else)."""
    resolved = Path(directory).resolve()
    marker = resolved / DIRECTORY_MARKER
    recorded = _read_marker(marker, command)
    if recorded is None:
        raise InvalidInputError(f"{directory} is not {command}'s own output (no marker naming it)")
    entries = sorted(recorded | {name for name in names if _plain_name(name)})
    _write_json(marker, {"created_by": command, "entries": entries})


def remove_recorded(directory: Path, command: str) -> None:
    """Remove the entries ``command`` recorded making in its own ``directory`` (record_entries),
    then the directory itself when nothing else is left in it. Anything else there is kept;
    a directory without ``command``'s marker is left alone."""
    given = Path(directory)
    resolved = given.resolve()
    marker = resolved / DIRECTORY_MARKER
    recorded = _read_marker(marker, command) if resolved.is_dir() else None
    if recorded is None:
        return
    _remove_entries(given, resolved, command, recorded)
    _write_json(marker, {"created_by": command, "entries": []})
    if [entry.name for entry in resolved.iterdir()] == [DIRECTORY_MARKER]:
        marker.unlink()
        resolved.rmdir()


def _read_marker(marker: Path, command: str) -> set[str] | None:
    """The entries the marker records as ``command``'s; None when it is not ``command``'s
    marker (or no marker at all)."""
    if not marker.is_file() or marker.is_symlink():
        return None
    try:
        if marker.stat().st_size > _RECORD_MAX_BYTES:
            return None
        content = json.loads(marker.read_text(encoding="utf-8"))
        if content.get("created_by") != command:
            return None
        entries = content.get("entries", [])
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(entries, list):
        return set()
    return {name for name in entries if isinstance(name, str) and _plain_name(name)}


_MEMORY_FILES = frozenset(
    {
        GRAPH_FILE,
        f"{GRAPH_FILE}.wal",
        f"{GRAPH_FILE}.lock",
        f"{GRAPH_FILE}.rebuild.json",
        VECTOR_DIR,
        PENDING_DIR,
        MARK_FILE,
        HEALTH_FILE,
        probe.seal_path(Path(GRAPH_FILE)).name,
        probe.seal_path(Path(VECTOR_DIR)).name,
        REJECTED_FILE,
        UNWRITTEN_FILE,
    }
)
"""What a SpatioTemporalMemory itself keeps in its directory (storage/, ingest/)."""


def _memory_keeps(name: str) -> bool:
    return name in _MEMORY_FILES or name.startswith(probe.SCRATCH_PREFIXES)


def _plain_name(name: str) -> bool:
    return name not in ("", ".", "..", DIRECTORY_MARKER) and "/" not in name and "\0" not in name


def _refuse_foreign_entries(given: Path, resolved: Path, command: str, owned: set[str]) -> None:
    foreign = sorted(
        entry.name
        for entry in resolved.iterdir()
        if entry.name != DIRECTORY_MARKER and entry.name not in owned
    )
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if foreign[5:] else "")
        raise InvalidInputError(
            f"{given} holds {shown}, which {command} has no record of making; {command} "
            "replaces only what it made there: move those out, or give another directory"
        )


def _remove_entries(given: Path, resolved: Path, command: str, owned: set[str]) -> None:
    """Remove the entries ``command`` made in ``resolved``, holding the memory there (if it is
    one) the way a writer does, so that no process has it open meanwhile."""
    claim = None
    lock = open_registry.lock_path(resolved / GRAPH_FILE)
    lock_was_there = lock.exists() or lock.is_symlink()
    if is_memory_dir(resolved):
        try:
            claim = open_registry.claim(resolved / GRAPH_FILE, read_only=False)
        except DatabaseLockedError as exc:
            raise type(exc)(
                f"{given} is {command}'s earlier memory and a process has it open; {command} "
                "replaces it only when no process holds it: close that memory (stop the "
                "process), or give another directory"
            ) from exc
    try:
        for name in sorted(owned):
            entry = resolved / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            elif entry.exists() or entry.is_symlink():
                entry.unlink()
        if not lock_was_there:  # made by the claim above
            lock.unlink(missing_ok=True)
    finally:
        if claim is not None:
            claim.release()
