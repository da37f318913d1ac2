"""emem_graph: a spatio-temporal graph memory for robots (Kuzu graph + LanceDB vectors)."""

import os

# LanceDB's own log (Rust, to stderr) at errors only unless the user set it, before anything
# imports lancedb (the level is read then): its warnings are about its internals and reached
# hundreds of lines at one close of a 1M memory ("partition 238 is empty, skipping", one a
# partition, as the ANN index folded in a few new rows). LANCEDB_LOG=warn shows them again.
os.environ.setdefault("LANCEDB_LOG", "error")

from emem_graph.config import MemoryConfig, SpatioTemporalMemoryConfig
from emem_graph.consolidation.fallback import FallbackLLM
from emem_graph.errors import (
    BackendUnavailableError,
    ConfigError,
    EmbeddingDimensionError,
    EmemGraphError,
    InvalidInputError,
    MemoryClosedError,
    SchemaVersionError,
    StorageError,
)
from emem_graph.filters import VectorFilter
from emem_graph.ingest.embeddings import (
    HashingEmbedder,
    OllamaEmbedder,
    SentenceTransformerEmbedder,
)
from emem_graph.llm.client import ExtractedEntity, LLMClient, OllamaLLM
from emem_graph.memory import SpatioTemporalMemory
from emem_graph.models import Entity, EntityPosition, Episode, Gist, Observation

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailableError",
    "ConfigError",
    "EmbeddingDimensionError",
    "EmemGraphError",
    "Entity",
    "EntityPosition",
    "Episode",
    "ExtractedEntity",
    "FallbackLLM",
    "Gist",
    "HashingEmbedder",
    "InvalidInputError",
    "LLMClient",
    "MemoryClosedError",
    "MemoryConfig",
    "Observation",
    "OllamaEmbedder",
    "OllamaLLM",
    "SchemaVersionError",
    "SentenceTransformerEmbedder",
    "SpatioTemporalMemory",
    "SpatioTemporalMemoryConfig",
    "StorageError",
    "VectorFilter",
]
