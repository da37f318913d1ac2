"""eMEM (PyPI ``emem``, the library emem_graph replaces) as a benchmark subject.

Optional: only ``--compare emem`` imports it. eMEM's facade accepts the same calls as ours, takes
precomputed vectors in ``add(embedding=...)`` and embeds everything else (queries, body state,
gist and entity texts) with the ``embedding_provider`` it is given: the benchmark gives it the
same embedder as emem_graph, so no model is loaded and both embed the same texts the same way.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from pathlib import Path
from typing import Any

from emem_graph.errors import BackendUnavailableError
from emem_graph.evals.bench.drive import SimClock, Subject
from emem_graph.ingest.embeddings import EmbeddingProvider

EMEM_VERSION = "0.3.0"
INSTALL_HINT = (
    f"pip install 'emem=={EMEM_VERSION}' (or pip install 'emem-graph[compare]'); "
    "it builds hnswlib from source, which needs a C++ compiler"
)


def emem_version() -> str | None:
    """The installed eMEM version, or None when eMEM is not installed."""
    try:
        return metadata.version("emem")
    except metadata.PackageNotFoundError:
        return None


def emem_subject(
    directory: Path, embedder: EmbeddingProvider, clock: SimClock, batch_size: int | None
) -> Subject:
    """eMEM with its defaults, except one flush per ``batch_size`` adds (as for emem_graph);
    ``batch_size`` None keeps eMEM's own flushing too (its batch size and wall-clock timer).

    Raises:
        BackendUnavailableError: eMEM is not installed (the message says how to install it).
    """
    version = emem_version()
    try:
        emem = importlib.import_module("emem")
    except ImportError as exc:
        raise BackendUnavailableError(
            f"--compare emem needs eMEM, which is not installed ({exc}): {INSTALL_HINT}"
        ) from None
    # eMEM's flush timer is wall-clock time: off when the batch size is chosen.
    flushing = {} if batch_size is None else {"flush_batch_size": batch_size, "flush_interval": 1e9}
    config = emem.SpatioTemporalMemoryConfig(
        db_path=str(directory / "memory.db"),
        hnsw_path=str(directory / "memory.hnsw.bin"),
        embedding_dim=embedder.dim,
        **flushing,
    )

    def open_memory() -> Any:
        directory.mkdir(parents=True, exist_ok=True)
        return emem.SpatioTemporalMemory(
            config=config, embedding_provider=embedder, get_current_time=clock
        )

    def settle(memory: Any) -> None:
        memory.save()  # flush, and write the hnswlib index (eMEM keeps it in RAM until then)

    return Subject(
        name=f"eMEM {version}",
        directory=directory,
        open=open_memory,
        settle=settle,
        consolidate=lambda memory: memory.end_episode(consolidate=True),
    )
