"""Where commands may write: never inside a memory, never over what they did not create.

A command that writes files (``export``, ``map``, ``demo``, ``make-bag``, ``bench``) claims its
output here first. A memory directory is recognised by what a SpatioTemporalMemory keeps in
it (MEMORY_MARKERS); paths are resolved first (symlinks, ``..``), so no spelling of a path
reaches into a memory. A command's own earlier output is recognised by a marker it wrote:

- a file (graphml, json, png, yaml): an entry in ``.emem-graph-outputs.json`` of the file's
  directory with the size and modification time the file had when the command wrote it; a
  file changed since, or never written by a command, is someone else's.
- a directory (parquet/csv exports, the demo's memory, bench scratch): ``.emem-graph-output``
  inside it, naming the command that created it.

Anything else that exists at the path is refused with one InvalidInputError line naming the
path and what to do; nothing is deleted or overwritten (there is no --force).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from emem_graph.errors import InvalidInputError
from emem_graph.storage.store import GRAPH_FILE, PENDING_DIR, VECTOR_DIR

MEMORY_MARKERS = (GRAPH_FILE, f"{GRAPH_FILE}.wal", VECTOR_DIR, PENDING_DIR)
"""Entries only a memory directory holds: one of them makes a directory a memory."""
FILE_MANIFEST = ".emem-graph-outputs.json"
"""Per directory: the files commands wrote there, with their size and mtime then."""
DIRECTORY_MARKER = ".emem-graph-output"
"""Inside a directory a command created: which command."""


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
    command and unchanged since (size and mtime). Call record_file() after writing.

    Returns:
        The resolved path.

    Raises:
        InvalidInputError: the path is or lies in a memory directory, is a directory, or is an
            existing file no command wrote (or one changed since).
    """
    resolved = _refuse_inside_memory(Path(path), what)
    if resolved.is_dir():
        raise InvalidInputError(f"{path} is a directory; {what} writes one file: give a file name")
    if (resolved.exists() or resolved.is_symlink()) and not _recorded(resolved):
        raise InvalidInputError(
            f"{path} exists and was not written by emem-graph; {what} does not overwrite "
            "it: choose another path, or remove the file yourself"
        )
    return resolved


def record_file(path: str | Path) -> None:
    """Remember that a command wrote ``path`` (now), so a later run may replace it."""
    resolved = Path(path).resolve()
    manifest = _read_manifest(resolved.parent)
    stat = resolved.stat()
    manifest[resolved.name] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    target = resolved.parent / FILE_MANIFEST
    temporary = target.with_name(f"{FILE_MANIFEST}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"files": manifest}, indent=1), encoding="utf-8")
    os.replace(temporary, target)


def _read_manifest(directory: Path) -> dict[str, Any]:
    target = directory / FILE_MANIFEST
    if not target.exists():
        return {}
    try:
        if target.stat().st_size > 4 * 1024 * 1024:
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


def _recorded(resolved: Path) -> bool:
    if resolved.is_symlink() or not resolved.is_file():
        return False
    entry = _read_manifest(resolved.parent).get(resolved.name)
    if not isinstance(entry, dict):
        return False
    stat = resolved.stat()
    return bool(entry.get("size") == stat.st_size and entry.get("mtime_ns") == stat.st_mtime_ns)


def claim_directory(
    path: str | Path,
    command: str,
    *,
    replace: bool = False,
    becomes_memory: bool = False,
    create: bool = True,
) -> Path:
    """Make ``path`` a directory ``command`` owns: create it, or take an empty one or one
    ``command`` created before (marker inside); with ``replace`` such an earlier one is
    emptied first (its marker says it is ``command``'s own output).

    Args:
        path: the directory.
        command: the command's name, written into the marker.
        replace: delete the directory's contents when it is ``command``'s earlier output.
        becomes_memory: the command builds a memory in it (the demo): being a memory is then
            no refusal for a directory that carries the marker.
        create: False only checks (nothing is created or deleted).

    Returns:
        The resolved directory (existing, with the marker inside).

    Raises:
        InvalidInputError: the path is or lies in a memory, is a file, or is a non-empty
            directory ``command`` did not create.
    """
    given = Path(path)
    resolved = given.resolve()
    marker = resolved / DIRECTORY_MARKER
    ours = resolved.is_dir() and _marker_names(marker, command)
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
    if not create:
        return resolved
    if ours and replace:
        for child in list(resolved.iterdir()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    resolved.mkdir(parents=True, exist_ok=True)
    if not marker.exists():
        marker.write_text(json.dumps({"created_by": command}) + "\n", encoding="utf-8")
    return resolved


def _marker_names(marker: Path, command: str) -> bool:
    if not marker.is_file() or marker.is_symlink():
        return False
    try:
        if marker.stat().st_size > 4096:
            return False
        return bool(json.loads(marker.read_text(encoding="utf-8")).get("created_by") == command)
    except (OSError, ValueError, AttributeError):
        return False
