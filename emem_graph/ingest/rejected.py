"""RejectedRows: where the rows a memory could not write are kept, one JSON line each.

A row that passed the door but fails in the batch write (see IngestBuffer) is never retried in
front of the others and never dropped: it is appended to ``rejected.jsonl`` in the memory's
directory with the error, synced to disk, and counted (``rejected_observations`` in the memory's
stats). Nothing reads the file back into the memory; a person can inspect and re-add its rows.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from emem_graph.errors import StorageError

log = logging.getLogger(__name__)

REJECTED_FILE = "rejected.jsonl"


class RejectedRows:
    """Appends set-aside rows to ``<directory>/rejected.jsonl`` and counts them.

    Args:
        directory: the memory's directory.
    """

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / REJECTED_FILE
        self._lock = threading.Lock()
        self._count: int | None = None

    def keep(self, kind: str, row: dict[str, Any], error: BaseException, at: float) -> None:
        """Append one row with its error, synced to disk before returning.

        Raises:
            OSError: the file cannot be written (the caller keeps the row: nothing is lost).
        """
        entry = {"kind": kind, "rejected_at": at, "error": f"{type(error).__name__}: {error}"}
        try:
            # ensure_ascii escapes what UTF-8 cannot encode (a lone surrogate is written as
            # \ud800), default=repr what JSON cannot hold.
            line = json.dumps({**entry, "row": row}, ensure_ascii=True, default=repr)
        except (TypeError, ValueError, RecursionError):  # keys JSON cannot hold, cycles
            line = json.dumps({**entry, "row_repr": repr(row)}, ensure_ascii=True)
        with self._lock:
            count = self.count_unlocked()
            with self.path.open("a", encoding="ascii") as out:
                out.write(line + "\n")
                out.flush()
                os.fsync(out.fileno())
            self._count = count + 1

    def set_aside(
        self, kind: str, row_id: str, row: dict[str, Any], error: BaseException, at: float
    ) -> None:
        """Keep one row the store cannot write (keep()) and log a warning naming it.

        Raises:
            StorageError: the file cannot be written either; the caller keeps the row queued.
        """
        try:
            self.keep(kind, row, error, at)
        except OSError as exc:
            raise StorageError(
                f"{kind} {row_id} cannot be written ({error}) and cannot be set aside in "
                f"{self.path} ({exc}); it stays queued: free the disk or fix the directory's "
                "permissions"
            ) from exc
        log.warning(
            "%s %s set aside in %s (it cannot be written: %s)", kind, row_id, self.path, error
        )

    def count(self) -> int:
        """Rows set aside in this directory, over every open of the memory."""
        with self._lock:
            return self.count_unlocked()

    def count_unlocked(self) -> int:
        if self._count is None:
            self._count = count_rejected(self.path.parent)
        return self._count


def count_rejected(directory: str | Path) -> int:
    """Lines of ``rejected.jsonl`` in a memory's directory (0 when there is none)."""
    path = Path(directory) / REJECTED_FILE
    if not path.is_file():
        return 0
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())
