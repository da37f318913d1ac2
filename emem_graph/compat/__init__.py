"""eMEM compatibility: code written for eMEM runs unchanged on emem_graph.

``alias_emem()`` makes ``import emem`` resolve to emem_graph (EmbodiedAgents' Memory component:
one line in a launch file); ``EmemMemory`` is the facade it serves, with eMEM's ten tools and an
end_episode() that returns after consolidation. MemoryConfig itself accepts every eMEM field.
"""

from emem_graph.compat.alias import (
    EmemAliasError,
    EmemAliasWarning,
    alias_emem,
    is_aliased,
    unalias_emem,
)
from emem_graph.compat.emem_api import (
    EMEM_TOOL_SCHEMAS,
    CallableEmbeddingProvider,
    EmemMemory,
    InferenceLLMClient,
    SentenceTransformerProvider,
)

__all__ = [
    "EMEM_TOOL_SCHEMAS",
    "CallableEmbeddingProvider",
    "EmemAliasError",
    "EmemAliasWarning",
    "EmemMemory",
    "InferenceLLMClient",
    "SentenceTransformerProvider",
    "alias_emem",
    "is_aliased",
    "unalias_emem",
]
