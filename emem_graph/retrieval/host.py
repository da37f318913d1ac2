"""ToolHost: what the retrieval tools need from the memory facade (flush, embed, the current
position and episode, and the planner actions' writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from emem_graph.config import MemoryConfig


class ToolHost(Protocol):
    """What the tools need from the memory facade."""

    config: MemoryConfig

    def flush(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...

    @property
    def current_position(self) -> np.ndarray | None: ...

    @property
    def active_episode_id(self) -> str | None: ...

    def add(
        self,
        text: str,
        x: float,
        y: float,
        z: float = 0.0,
        timestamp: float | None = None,
        layer_name: str = "default",
        source_type: str = "manual",
        confidence: float = 1.0,
        metadata: dict[str, Any] | None = None,
        embedding: Any = None,
    ) -> str: ...

    def start_episode(
        self,
        name: str,
        metadata: dict[str, Any] | None = None,
        parent_episode_id: str | None = None,
    ) -> str: ...

    def end_episode(self, consolidate: bool = True) -> str | None: ...
