"""eMEM's public names, answered by emem_graph: what ``import emem`` holds once aliased.

Code written for eMEM (EmbodiedAgents' Memory component, eMEM's own facade tests) imports a few
names from a few modules: the facade, its config, the ten tool schemas, two embedding providers
and an LLM adapter. Each is defined here over emem_graph's own parts; EMEM_MODULES lists which
module of eMEM holds which name. eMEM's internals (its SQLite store, hnswlib index, working
memory, consolidation engine) have no counterpart and are not offered.
"""

from __future__ import annotations

import copy
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from emem_graph.config import MemoryConfig
from emem_graph.errors import BackendUnavailableError, InvalidInputError
from emem_graph.ingest.embeddings import (
    BatchEmbedder,
    EmbeddingProvider,
    SentenceTransformerEmbedder,
)
from emem_graph.llm.client import LLMClient, PromptedLLM
from emem_graph.memory import SpatioTemporalMemory as _Memory
from emem_graph.models import Entity, Episode, Gist, Observation
from emem_graph.retrieval.schemas import ACTION_SCHEMAS, CORE_TOOLS
from emem_graph.retrieval.schemas import TOOL_SCHEMAS as _ALL_TOOL_SCHEMAS

EMEM_TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    name: copy.deepcopy(_ALL_TOOL_SCHEMAS[name]) for name in CORE_TOOLS
}
"""eMEM's ``emem.tools.TOOL_SCHEMAS``: the ten retrieval tools only, keyed by name, each
``{"name", "description", "parameters"}`` (emem_graph's schemas also hold capability tools)."""


class EmemMemory(_Memory):
    """emem_graph's SpatioTemporalMemory behaving as eMEM's facade: the ten tools of eMEM only
    (definitions, registration and dispatch), and end_episode() returns once the episode is
    consolidated (eMEM consolidates in the caller's thread)."""

    def end_episode(self, consolidate: bool = True, wait: bool = True) -> str | None:
        """End the active episode; with ``consolidate`` its gists are written before this
        returns (eMEM's behaviour). Returns the episode id, or None when none was active."""
        return super().end_episode(consolidate, wait=wait)

    def get_tool_definitions(self, include_actions: bool = False) -> list[dict[str, Any]]:
        """eMEM's ten tools in OpenAI function-calling form (plus the planner actions with
        ``include_actions``)."""
        return [
            definition
            for definition in super().get_tool_definitions(include_actions)
            if _offered(definition["function"]["name"], include_actions)
        ]

    def get_tools_for_registration(
        self, include_actions: bool = False
    ) -> list[tuple[Callable[..., str], dict[str, Any]]]:
        """(callable, definition) pairs for eMEM's ten tools."""
        return [
            (function, definition)
            for function, definition in super().get_tools_for_registration(include_actions)
            if _offered(definition["function"]["name"], include_actions)
        ]

    def dispatch_tool_call(
        self, tool_name: str, arguments: dict[str, Any] | str | None = None
    ) -> str:
        """Run one of eMEM's ten tools (or a planner action) by name; a tool eMEM does not have
        is one line ``Error: ...``, as any unknown tool. Never raises."""
        if isinstance(tool_name, str) and not _offered(tool_name, include_actions=True):
            shown = reprlib.repr(tool_name)  # bounded: a tool name may be any size
            return f"Error: unknown tool {shown}; available: {', '.join(CORE_TOOLS)}"
        return super().dispatch_tool_call(tool_name, arguments)


def _offered(name: str, include_actions: bool) -> bool:
    # The planner actions (store_specific_memory, start/end_episode) are not tools in eMEM
    # either; they are offered on request, as by the parent class.
    return name in EMEM_TOOL_SCHEMAS or (include_actions and name in ACTION_SCHEMAS)


class NullEmbeddingProvider(BatchEmbedder):
    """Zero vectors (eMEM's provider for callers that pass every embedding themselves)."""

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self._dim), dtype=np.float32)


class CallableEmbeddingProvider(BatchEmbedder):
    """An embedding function as a provider (EmbodiedAgents passes ``OllamaClient._embed``).

    Args:
        embed_fn: takes a list of texts, returns one vector (a sequence of floats) per text.
        dim: the vectors' length; None: found by embedding one probe text.

    Raises:
        EmbeddingDimensionError: the function returns the wrong number or length of vectors.
    """

    def __init__(self, embed_fn: Callable[[list[str]], Any], dim: int | None = None) -> None:
        if not callable(embed_fn):
            raise InvalidInputError(
                f"embed_fn must be a function of a list of texts, got {type(embed_fn).__name__}"
            )
        self._fn = embed_fn
        if dim is None:
            answer = embed_fn(["hello"])
            try:
                probe = np.asarray(answer, dtype=np.float32)
            except (TypeError, ValueError, OverflowError):
                probe = np.zeros((0,), dtype=np.float32)
            if probe.ndim != 2 or probe.shape[0] != 1 or probe.shape[1] == 0:
                raise BackendUnavailableError(
                    f"the embedding function returned {type(answer).__name__} of shape "
                    f"{probe.shape} for one text; expected one non-empty vector of numbers"
                )
            dim = int(probe.shape[1])
        if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
            raise InvalidInputError(f"dim must be a whole number >= 1, got {dim!r}")
        self._dim = int(dim)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._fn(texts))


class SentenceTransformerProvider(SentenceTransformerEmbedder):
    """eMEM's sentence-transformers provider: ``model_name`` as emem_graph's
    SentenceTransformerEmbedder loads it (all-MiniLM-L6-v2 from the packaged offline copy when
    installed)."""

    def __init__(self, model_name: str = "all-MiniLM-L6-v2") -> None:
        super().__init__(model_name)


class InferenceLLMClient(PromptedLLM):
    """A model inference function as the consolidation LLM (EmbodiedAgents passes
    ``ModelClient.inference``).

    The function takes ``{"query": [messages], "temperature", "max_new_tokens", "stream"}`` and
    returns a mapping whose ``"output"`` is the answer text. emem_graph's own prompts are used;
    an empty or malformed answer raises, and consolidation then uses its built-in fallback.

    Args:
        inference_fn: the inference function.
        temperature: sampling temperature of every request.
        max_new_tokens: answer length limit of every request.
    """

    def __init__(
        self,
        inference_fn: Callable[[dict[str, Any]], Mapping[str, Any] | None],
        temperature: float = 0.3,
        max_new_tokens: int = 500,
    ) -> None:
        self._fn = inference_fn
        self._temperature = temperature
        self._max_new_tokens = max_new_tokens

    def _chat(self, prompt: str, *, schema: dict[str, Any] | None = None) -> str:
        # The inference function takes no answer schema: the prompt itself asks for JSON.
        result = self._fn(
            {
                "query": [{"role": "user", "content": prompt}],
                "temperature": self._temperature,
                "max_new_tokens": self._max_new_tokens,
                "stream": False,
            }
        )
        output = result.get("output") if isinstance(result, Mapping) else None
        return output if isinstance(output, str) else ""

    def _empty_answer(self) -> str:
        return "the inference function returned no text"


EMEM_MODULES: dict[str, dict[str, Any]] = {
    "emem": {
        "SpatioTemporalMemory": EmemMemory,
        "SpatioTemporalMemoryConfig": MemoryConfig,
        "ObservationNode": Observation,
        "EpisodeNode": Episode,
        "GistNode": Gist,
        "EntityNode": Entity,
        "LLMClient": LLMClient,
    },
    "emem.memory": {"SpatioTemporalMemory": EmemMemory},
    "emem.config": {"SpatioTemporalMemoryConfig": MemoryConfig},
    "emem.tools": {"TOOL_SCHEMAS": EMEM_TOOL_SCHEMAS},
    "emem.embeddings": {
        "EmbeddingProvider": EmbeddingProvider,
        "NullEmbeddingProvider": NullEmbeddingProvider,
        "CallableEmbeddingProvider": CallableEmbeddingProvider,
        "SentenceTransformerProvider": SentenceTransformerProvider,
    },
    "emem.consolidation": {"LLMClient": LLMClient, "InferenceLLMClient": InferenceLLMClient},
    "emem.types": {
        "ObservationNode": Observation,
        "EpisodeNode": Episode,
        "GistNode": Gist,
        "EntityNode": Entity,
    },
}
"""Each eMEM module the alias provides, with the names it holds (eMEM's name -> emem_graph's
object)."""
