"""EmbeddingCache: a memory's embedder behind one lock, each distinct text embedded once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from emem_graph.errors import BackendUnavailableError, EmbeddingDimensionError, EmemGraphError
from emem_graph.ingest.embeddings import EmbeddingProvider


class EmbeddingCache:
    """Embeds texts with ``embedder``, serialised (models are not thread-safe), keeping the
    vectors of the last ``size`` distinct texts (0: none kept)."""

    def __init__(self, embedder: EmbeddingProvider, size: int) -> None:
        self.embedder = embedder
        self.size = size
        self.lock = threading.Lock()
        """Held around every call of the embedder (the storage probe takes it too)."""
        self.entries: OrderedDict[str, np.ndarray] = OrderedDict()
        """Text -> vector, least recently used first."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order (float32); texts not kept are embedded in one call."""
        with self.lock:
            cache = self.entries
            fresh: dict[str, np.ndarray] = {}
            missing = [t for t in dict.fromkeys(texts) if t not in cache]
            if missing:
                vectors = provider_vectors(self.embedder, missing)
                fresh = {t: v.copy() for t, v in zip(missing, vectors, strict=True)}
            out = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
            for i, text in enumerate(texts):
                vector = fresh.get(text)
                if vector is None:
                    vector = cache[text]
                    cache.move_to_end(text)
                out[i] = vector
            if self.size:
                cache.update(fresh)
                while len(cache) > self.size:
                    cache.popitem(last=False)
            return out

    def probe(self) -> None:
        """Embed one fixed text past the cache (the storage probe: is the provider up?).

        Raises:
            BackendUnavailableError, EmbeddingDimensionError: as provider_vectors.
        """
        with self.lock:
            provider_vectors(self.embedder, ["storage probe"])


def provider_vectors(embedder: EmbeddingProvider, texts: list[str]) -> np.ndarray:
    """``embedder``'s vectors of ``texts``, checked: one row of ``dim`` finite numbers per
    text.

    Raises:
        BackendUnavailableError: the provider failed (its own error, on one line, in the
            message) or gave numbers that are not finite.
        EmbeddingDimensionError: it gave another number of rows or of dimensions.
    """
    try:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    except EmemGraphError:
        raise
    except Exception as exc:
        said = " ".join(str(exc).split())[:500]
        raise BackendUnavailableError(
            f"the embedding provider failed on {_texts(texts)} ({type(exc).__name__}: {said})"
        ) from exc
    expected = (len(texts), embedder.dim)
    if vectors.shape != expected:
        raise EmbeddingDimensionError(
            f"the embedding provider gave an array of shape {vectors.shape} for "
            f"{_texts(texts)}; expected {expected}"
        )
    if not np.isfinite(vectors).all():
        raise BackendUnavailableError(
            f"the embedding provider gave NaN or infinite numbers for {_texts(texts)}"
        )
    return vectors


def _texts(texts: list[str]) -> str:
    return "1 text" if len(texts) == 1 else f"{len(texts)} texts"
