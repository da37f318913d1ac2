"""An embedding provider that fails, or answers with the wrong shape or numbers, is an
EmemGraphError on one line at every door (the tools, flush, end_episode, eMEM's surface), and
nothing added is lost: the rows wait and are written once the provider is back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.compat import EmemMemory
from emem_graph.compat.emem_api import CallableEmbeddingProvider
from emem_graph.errors import BackendUnavailableError, EmbeddingDimensionError, EmemGraphError

T = 1_700_000_000.0


class Flaky:
    """HashingEmbedder's vectors, until told to fail or to answer wrongly."""

    dim = 64

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.mode = "ok"

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.mode == "down":
            raise ConnectionError("embedding server unreachable\n(retry later)")
        if self.mode == "narrow":
            return np.zeros((len(texts), 3), dtype=np.float32)
        if self.mode == "short":
            return self.inner.embed(texts[:-1])
        if self.mode == "nan":
            return np.full((len(texts), 64), np.nan, dtype=np.float32)
        return self.inner.embed(texts)


@pytest.fixture
def flaky(tmp_path: Path) -> Iterator[tuple[SpatioTemporalMemory, Flaky]]:
    embedder = Flaky()
    config = MemoryConfig(db_path=str(tmp_path / "mem"), maintenance_interval=None)
    with SpatioTemporalMemory(
        config=config, embedding_provider=embedder, get_current_time=lambda: T
    ) as memory:
        yield memory, embedder


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("down", BackendUnavailableError),
        ("narrow", EmbeddingDimensionError),
        ("short", EmbeddingDimensionError),
        ("nan", BackendUnavailableError),
    ],
)
def test_the_tools_raise_one_line_errors_of_ours(
    flaky: tuple[SpatioTemporalMemory, Flaky], mode: str, error: type[Exception]
) -> None:
    memory, embedder = flaky
    memory.add("a red cup on the table", 1.0, 1.0, timestamp=T)
    memory.flush()
    embedder.mode = mode
    for call in (
        lambda: memory.semantic_search("a blue cup"),
        lambda: memory.locate("a blue cup"),
        lambda: memory.recall("a blue cup"),
        lambda: memory.search_gists("a blue cup"),
    ):
        with pytest.raises(error) as raised:
            call()
        assert "\n" not in str(raised.value)
    assert memory.dispatch_tool_call("semantic_search", {"query": "a blue mug"}).startswith(
        "Error: "
    )
    embedder.mode = "ok"
    assert "a red cup on the table" in memory.semantic_search("a blue cup")


def test_flush_with_the_provider_down_raises_ours_and_keeps_the_rows(
    flaky: tuple[SpatioTemporalMemory, Flaky],
) -> None:
    memory, embedder = flaky
    memory.add("first", 0.0, 0.0, timestamp=T)
    memory.flush()
    embedder.mode = "down"
    memory.add("second", 0.0, 0.0, timestamp=T + 1)
    with pytest.raises(BackendUnavailableError, match="ConnectionError: embedding server"):
        memory.flush()
    embedder.mode = "ok"
    memory.flush()
    assert [line.split("] ")[-1] for line in memory.temporal_query().splitlines()] == [
        "second",
        "first",
    ]


def test_emem_surface_with_a_failing_callable_provider_raises_ours(tmp_path: Path) -> None:
    # EmbodiedAgents wires its Ollama client's embed through CallableEmbeddingProvider: a
    # ConnectionError came out of flush(), end_episode() and semantic_search() as it was.
    down = {"on": False}

    def embed(texts: list[str]) -> list[list[float]]:
        if down["on"]:
            raise ConnectionError("ollama gone")
        return [np.ones(64).tolist() for _ in texts]

    config = MemoryConfig(db_path=str(tmp_path / "mem"), maintenance_interval=None)
    memory = EmemMemory(config=config, embedding_provider=CallableEmbeddingProvider(embed))
    memory.start_episode("patrol")
    memory.add("a red cup", x=1.0, y=2.0)
    down["on"] = True
    for call in (memory.flush, memory.end_episode, lambda: memory.semantic_search("cup")):
        with pytest.raises(EmemGraphError, match="ollama gone"):
            call()
    down["on"] = False
    memory.flush()
    assert "a red cup" in memory.temporal_query()
    memory.close()
