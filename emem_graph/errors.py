"""The exception hierarchy of emem_graph: everything raised on purpose is an EmemGraphError."""

from __future__ import annotations


class EmemGraphError(Exception):
    """Root of every error emem_graph raises on purpose."""


class InvalidInputError(EmemGraphError, ValueError):
    """A caller passed a value the memory cannot store or answer (NaN coordinates, empty text...).

    Subclasses ValueError so eMEM callers catching ValueError keep working. Nothing is written
    when this is raised.
    """


class EmbeddingDimensionError(InvalidInputError):
    """A vector's length does not match the memory's embedding dimension."""


class ConfigError(InvalidInputError):
    """A configuration value is invalid."""


class StorageError(EmemGraphError):
    """The graph or vector store failed to read or write."""


class SchemaVersionError(StorageError):
    """The database on disk was written with another schema version or embedding dimension."""


class GraphEngineMismatchError(SchemaVersionError):
    """The memory's graph was written by another graph engine (kuzu or ladybug) than the one
    this process runs; their files are incompatible both ways: ``emem-graph migrate`` copies it."""


class MemoryClosedError(EmemGraphError):
    """The memory was used after close()."""


class BackendUnavailableError(EmemGraphError):
    """An optional backend (embedding model, LLM server, ROS) is not installed or not reachable."""


class ReadOnlyQueryError(InvalidInputError):
    """A query given to the read-only explore surface would write (to the memory or to files).

    Nothing was written: the graph is opened read-only there, so Kuzu refuses the statement.
    """


class QueryTimeoutError(EmemGraphError):
    """A query ran longer than its time limit and was interrupted (nothing was changed)."""


class DatabaseLockedError(StorageError):
    """The graph database is held read-write by another process (the memory allows one such
    process: its own lock, on either engine)."""

    @classmethod
    def held_elsewhere(cls, root: object) -> DatabaseLockedError:
        """The error a reader gets when the memory ``root`` is held read-write by another
        process."""
        return cls(
            f"the memory {root} is open read-write in another process (a running memory or "
            "robot), and the memory lets no other process open it meanwhile: while it runs, "
            "query it through the ROS bridge's Query service, or stop that process first"
        )


class DatabaseInUseError(DatabaseLockedError):
    """The graph database is already open in this process (a second SpatioTemporalMemory,
    MemoryStore or ReadOnlyMemory on the same directory): Kuzu would accept it and lose writes,
    so it is refused; use the open instance or close it first."""


class ReadOnlyMemoryError(StorageError):
    """A write was asked of a memory opened read-only (``SpatioTemporalMemory(...,
    read_only=True)``, ``emem-graph mcp DIR --read-only``). Nothing was written: the facade
    refuses its write methods first, the store its writes, and the graph engine itself, opened
    read-only, refuses any write that gets past both."""


class RecoveryNeededError(StorageError):
    """A memory opened read-only needs work only a read-write open does (closing episodes a
    stopped process left active, their consolidation, replaying unfinished vector writes,
    re-indexing missing vectors, an additive schema upgrade): open it read-write once, close
    it, then open it read-only."""


class DamagedMemoryError(StorageError):
    """A file of the memory is damaged or missing and cannot be repaired from the graph (the
    graph itself): restore the memory's directory from a backup."""


class VectorStoreDamagedError(DamagedMemoryError):
    """The vector table has a missing, truncated or unreadable file. A read-write open moves
    it aside and rebuilds it from the graph; a read-only open cannot, and raises this."""


class QueryResourceError(EmemGraphError):
    """A sandboxed developer query needed more memory (or returned more data) than its bound
    and its process was stopped; nothing was changed."""
