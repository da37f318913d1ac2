"""PendingVectors: the vectors of journalled nodes, kept beside the graph until LanceDB has them.

The VectorSync journal in Kuzu names the nodes whose vector work is unfinished; the vectors
themselves wait here, one small ``.npy`` pair per graph transaction, because Kuzu never reclaims
the space of deleted rows (journalled vectors made the graph file 10x larger). A file is removed
once LanceDB holds its rows. A file lost in a power cut only means reconciliation re-embeds those
nodes from their text in the graph.
"""

from __future__ import annotations

import logging
import os
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


class PendingVectors:
    """A directory of not-yet-indexed vectors, keyed by node id."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(self, ids: Sequence[str], vectors: np.ndarray) -> Path | None:
        """Write one batch (atomically: temp file, then rename); returns its path."""
        if not len(ids):
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{uuid.uuid4().hex}.npz"
        temporary = path.with_suffix(".tmp")
        with open(temporary, "wb") as handle:
            np.savez(
                handle,
                ids=np.asarray(list(ids), dtype=str),
                vectors=np.asarray(vectors, dtype=np.float32),
            )
        os.replace(temporary, path)
        return path

    def load(self) -> dict[str, np.ndarray]:
        """Every waiting vector by node id (unreadable files are skipped: re-embedded later)."""
        found: dict[str, np.ndarray] = {}
        for path in sorted(self.directory.glob("*.npz"), key=lambda p: p.stat().st_mtime):
            try:
                with np.load(path) as batch:
                    found.update(zip(batch["ids"].tolist(), batch["vectors"], strict=True))
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                log.warning("skipping unreadable pending-vector file %s: %s", path.name, exc)
        return found

    def discard(self, path: Path | None) -> None:
        """Remove one batch file (LanceDB holds its rows)."""
        if path is not None:
            path.unlink(missing_ok=True)

    def clear(self) -> None:
        """Remove every batch file (after a successful reconciliation)."""
        for path in self.directory.glob("*.np*"):
            path.unlink(missing_ok=True)
        for path in self.directory.glob("*.tmp"):
            path.unlink(missing_ok=True)
