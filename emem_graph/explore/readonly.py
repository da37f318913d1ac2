"""ReadOnlyMemory: a memory directory opened for reading only, for export and stats.

The graph is opened with Kuzu's read-only mode and the vector table only if it exists (opening
a VectorStore on a directory without one would create it): nothing here can change the memory.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from emem_graph.errors import DatabaseInUseError, DatabaseLockedError, InvalidInputError
from emem_graph.storage.graph import GraphDB
from emem_graph.storage.store import GRAPH_FILE, PENDING_DIR, VECTOR_DIR
from emem_graph.storage.vectors import TABLE, VectorStore


class ReadOnlyMemory:
    """The graph (read-only) and, when it exists, the vector table of one memory directory.

    Use as a context manager; several read-only openers may share a memory, but none can open
    it while a process holds it read-write (Kuzu's rule).

    Args:
        directory: the memory's directory (what SpatioTemporalMemory's db_path named).
        with_vectors: also open the vector table (when it exists); the graph-only readers
            (Cypher, map) leave it closed.

    Raises:
        InvalidInputError: the directory holds no emem_graph memory.
        DatabaseLockedError: another process has the memory open read-write.
        SchemaVersionError: the memory was written with another schema version.
    """

    def __init__(self, directory: str | Path, *, with_vectors: bool = True) -> None:
        self.root = Path(directory)
        self.graph_path = graph_path_of(self.root)
        self.vector_path = self.root / VECTOR_DIR
        self.pending_path = self.root / PENDING_DIR
        try:
            self.graph = GraphDB(self.graph_path, read_only=True)
        except DatabaseInUseError:  # open read-write in this very process: its message says so
            raise
        except DatabaseLockedError as exc:
            raise DatabaseLockedError.held_elsewhere(self.root) from exc
        try:
            self.info = self.graph.ensure_schema({})
            self.embedding_dim = int(self.info.get("embedding_dim", "0"))
            self.vectors = (
                VectorStore(self.vector_path, self.embedding_dim, read_only=True)
                if with_vectors and (self.vector_path / f"{TABLE}.lance").is_dir()
                else None
            )
        except BaseException:
            self.graph.close()
            raise

    def close(self) -> None:
        """Close the graph (idempotent); the vector table holds no open handle to release."""
        self.graph.close()

    def __enter__(self) -> ReadOnlyMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def graph_path_of(directory: str | Path) -> Path:
    """The graph file of the memory in ``directory``.

    Raises:
        InvalidInputError: the directory does not exist or holds no graph.
    """
    root = Path(directory)
    if not root.is_dir():
        raise InvalidInputError(
            f"no memory directory {root}: it is not an emem_graph memory; give the directory a "
            "SpatioTemporalMemory was created in"
        )
    graph_path = root / GRAPH_FILE
    if not graph_path.is_file():
        raise InvalidInputError(
            f"{root} is not an emem_graph memory (no {GRAPH_FILE} inside); give the directory "
            "a SpatioTemporalMemory was created in"
        )
    return graph_path
