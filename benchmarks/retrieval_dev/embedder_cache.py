"""An embedder that keeps every vector it computed in a file, so reruns embed nothing twice."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from emem_graph.ingest.embeddings import EmbeddingProvider


class DiskCachedEmbedder:
    """Wraps an embedder; vectors are keyed by text and saved under ``directory``.

    Args:
        inner: the embedder that computes vectors not yet cached.
        directory: where the cache file lives (one file per model name).
        name: the model's name (part of the file name).
    """

    def __init__(self, inner: EmbeddingProvider, directory: Path, name: str) -> None:
        self._inner = inner
        digest = hashlib.sha1(name.encode()).hexdigest()[:12]
        self._path = directory / f"embeddings-{digest}.pkl"
        self._vectors: dict[str, np.ndarray] = {}
        if self._path.exists():
            with self._path.open("rb") as handle:
                self._vectors = pickle.load(handle)
        self._unsaved = 0

    @property
    def dim(self) -> int:
        """The inner embedder's dimension."""
        return self._inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``, computing only the ones never seen."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vector in zip(missing, self._inner.embed(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
            self._unsaved += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def save(self) -> None:
        """Write the cache file if anything new was computed."""
        if self._unsaved:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            partial = self._path.with_suffix(".tmp")
            with partial.open("wb") as handle:
                pickle.dump(self._vectors, handle)
            partial.replace(self._path)
            self._unsaved = 0
