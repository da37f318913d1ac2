"""What the command groups share: the embedder a command names."""

from __future__ import annotations

import os

from emem_graph.ingest.embeddings import EmbeddingProvider


def make_embedder(name: str) -> EmbeddingProvider:
    """The embedder NAME names: 'hashing' or a sentence-transformers model (offline)."""
    from emem_graph.ingest.embeddings import HashingEmbedder, SentenceTransformerEmbedder

    if name == "hashing":
        return HashingEmbedder(384)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformerEmbedder(name)
