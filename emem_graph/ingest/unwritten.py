"""UnwrittenRows: observations (and add_entity() sightings) a memory could not write before it
closed, kept for its next open.

add() returns an id at once and the row waits in the ingest buffer. When the last flush of
close() fails as a whole (the embedder is unreachable, the disk is full: IngestBuffer keeps the
rows queued instead of setting them aside), the rows would go with the process. They are kept
here instead, one JSON line each (the observation and its given vector, if any) in
``unwritten.jsonl`` in the memory's directory, replaced atomically and synced; the next
read-write open writes them before anything else and removes the file once they are stored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from emem_graph.errors import StorageError
from emem_graph.models import Observation

UNWRITTEN_FILE = "unwritten.jsonl"


class UnwrittenRows:
    """The file of observations left unwritten at a close, in a memory's directory."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / UNWRITTEN_FILE

    def exists(self) -> bool:
        return self.path.is_file()

    def keep(
        self,
        rows: Sequence[tuple[Observation, np.ndarray | None]],
        sightings: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Add ``rows`` and entity ``sightings`` (add_entity()'s, each a JSON object naming the
        entity it resolved to) to the file, with what it already holds, atomically and synced.

        Raises:
            StorageError: the file cannot be written (the rows are then lost with the process).
        """
        kept = [*self.load(), *rows]
        kept_sightings = [*self.load_sightings(), *sightings]
        temporary = self.path.with_name(f".{UNWRITTEN_FILE}.tmp")
        try:
            with temporary.open("w", encoding="ascii") as out:
                for observation, vector in kept:
                    out.write(_line(observation, vector) + "\n")
                for sighting in kept_sightings:
                    out.write(json.dumps({"sighting": sighting}, ensure_ascii=True) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            raise StorageError(
                f"{len(rows)} observations could not be written and could not be kept in "
                f"{self.path} either ({exc})"
            ) from exc

    def load(self) -> list[tuple[Observation, np.ndarray | None]]:
        """The rows the file holds, in the order they were added ([] when there is none).

        Raises:
            StorageError: the file is there but cannot be read as rows (it is left as it is).
        """
        return [row for kind, row in self._read() if kind == "observation"]

    def load_sightings(self) -> list[dict[str, Any]]:
        """The entity sightings the file holds, in the order they were added ([] when none).

        Raises:
            StorageError: the file is there but cannot be read (it is left as it is).
        """
        return [sighting for kind, sighting in self._read() if kind == "sighting"]

    def _read(self) -> list[tuple[str, Any]]:
        """Each line, as ("observation", (observation, vector)) or ("sighting", its object)."""
        if not self.path.is_file():
            return []
        entries: list[tuple[str, Any]] = []
        try:
            with self.path.open(encoding="ascii") as lines:
                for line in lines:
                    if not line.strip():
                        continue
                    entry = json.loads(line)
                    if isinstance(entry, dict) and "sighting" in entry:
                        if not isinstance(entry["sighting"], dict):
                            raise ValueError("a sighting is not a JSON object")
                        entries.append(("sighting", entry["sighting"]))
                    else:
                        entries.append(("observation", _row(entry)))
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise StorageError(
                f"{self.path} (observations left unwritten at the last close) cannot be read "
                f"({type(exc).__name__}: {exc}); move it away to open the memory without them"
            ) from exc
        return entries

    def discard(self) -> None:
        """Remove the file: its rows are stored."""
        self.path.unlink(missing_ok=True)


def count_unwritten(directory: str | Path) -> int:
    """Lines of ``unwritten.jsonl`` in a memory's directory (0 when there is none): the
    observations and entity sightings a failed close kept, written by the next read-write
    open."""
    path = Path(directory) / UNWRITTEN_FILE
    if not path.is_file():
        return 0
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


def _line(observation: Observation, vector: np.ndarray | None) -> str:
    entry: dict[str, Any] = {"observation": observation.model_dump(mode="json")}
    if vector is not None:
        entry["vector"] = np.asarray(vector, dtype=np.float32).tolist()
    return json.dumps(entry, ensure_ascii=True)


def _row(entry: Any) -> tuple[Observation, np.ndarray | None]:
    if not isinstance(entry, dict):
        raise ValueError(f"a line holds {type(entry).__name__}, not a row")
    vector = entry.get("vector")
    return (
        Observation.model_validate(entry["observation"]),
        None if vector is None else np.asarray(vector, dtype=np.float32),
    )
