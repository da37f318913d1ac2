"""alias_emem(): EmbodiedAgents' Memory component, unchanged, on emem_graph.

The component (EmbodiedAgents 0.7.x, agents/components/memory.py) checks
importlib.util.find_spec("emem"), reads emem.tools.TOOL_SCHEMAS at class definition, builds
emem.config.SpatioTemporalMemoryConfig from its own config, wraps its clients in
emem.embeddings.CallableEmbeddingProvider / SentenceTransformerProvider and
emem.consolidation.InferenceLLMClient, and drives emem.SpatioTemporalMemory through add,
add_body_state, start_episode, end_episode, dispatch_tool_call and close. These tests do the
same, in the same order, with the real MiniLM model.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import emem_graph.config as config_module
from emem_graph import (
    ConfigError,
    EmemGraphError,
    HashingEmbedder,
    MemoryConfig,
    SentenceTransformerEmbedder,
)
from emem_graph.compat import (
    EmemAliasError,
    EmemAliasWarning,
    EmemMemory,
    alias_emem,
    is_aliased,
    unalias_emem,
)
from emem_graph.config import EMEM_IGNORED_FIELDS, IgnoredSettingWarning

TEN_TOOLS = (
    "semantic_search",
    "spatial_query",
    "temporal_query",
    "episode_summary",
    "get_current_context",
    "search_gists",
    "entity_query",
    "locate",
    "recall",
    "body_status",
)

COMPONENT_CONFIG: dict[str, Any] = {
    # EmbodiedAgents' MemoryConfig defaults (the same as eMEM's), passed on field by field.
    "working_memory_size": 50,
    "flush_interval": 2.0,
    "flush_batch_size": 5,
    "consolidation_window": 1800.0,
    "consolidation_spatial_eps": 3.0,
    "consolidation_min_samples": 3,
    "archive_after_seconds": 3600.0,
    "entity_extract_flush_interval": 10,
    "entity_extract_time_interval": 60.0,
    "entity_similarity_threshold": 0.85,
    "entity_spatial_radius": 5.0,
    "recency_weight": 0.0,
    "recency_halflife": 3600.0,
    "hnsw_ef_construction": 200,
    "hnsw_m": 16,
    "hnsw_ef_search": 50,
    "hnsw_max_elements": 100_000,
}

EMEM_DEV_ONLY_FIELDS: dict[str, Any] = {
    # Fields of eMEM's development line that 0.3.0 lacks, with their eMEM defaults.
    "entity_text_similarity_threshold": 0.65,
    "entity_extract_chunk_size": 16,
    "use_hybrid_retrieval": True,
    "rrf_k": 60,
}


@pytest.fixture
def aliased(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """alias_emem() in effect, with the ignored-field warnings not yet given in this process."""
    monkeypatch.setattr(config_module, "_warned_ignored", set())
    assert not is_aliased()
    alias_emem()
    yield
    unalias_emem()


@pytest.fixture
def no_emem_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Whatever ``emem`` a test imports (a stand-in of a real install) is forgotten after it."""
    yield
    unalias_emem()
    for name in [n for n in sys.modules if n == "emem" or n.startswith("emem.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def installed_emem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_emem_module: None) -> None:
    """A stand-in for an installed eMEM on sys.path (the real one needs hnswlib built from
    source): a package ``emem`` holding ``REAL_EMEM = True``."""
    package = tmp_path / "site" / "emem"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("REAL_EMEM = True\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()


def component_config(db_path: str, embedding_dim: int) -> Any:
    """The eMEM config exactly as Memory.custom_on_configure builds it."""
    from emem.config import SpatioTemporalMemoryConfig

    fields = COMPONENT_CONFIG
    return SpatioTemporalMemoryConfig(
        db_path=db_path,
        hnsw_path=str(Path(db_path).with_suffix(".hnsw.bin")),
        embedding_dim=embedding_dim,
        working_memory_size=fields["working_memory_size"],
        flush_interval=fields["flush_interval"],
        flush_batch_size=fields["flush_batch_size"],
        consolidation_window=fields["consolidation_window"],
        consolidation_spatial_eps=fields["consolidation_spatial_eps"],
        consolidation_min_samples=fields["consolidation_min_samples"],
        archive_after_seconds=fields["archive_after_seconds"],
        entity_extract_flush_interval=fields["entity_extract_flush_interval"],
        entity_extract_time_interval=fields["entity_extract_time_interval"],
        entity_similarity_threshold=fields["entity_similarity_threshold"],
        entity_spatial_radius=fields["entity_spatial_radius"],
        recency_weight=fields["recency_weight"],
        recency_halflife=fields["recency_halflife"],
        hnsw_ef_construction=fields["hnsw_ef_construction"],
        hnsw_m=fields["hnsw_m"],
        hnsw_ef_search=fields["hnsw_ef_search"],
        hnsw_max_elements=fields["hnsw_max_elements"],
    )


def store_layers(memory: Any, position: tuple[float, float, float], stamp: float) -> None:
    """What Memory._store_layers does with one perception layer and one internal-state layer."""
    x, y, z = (float(v) for v in position)
    memory.add(text="red mug on the kitchen table", x=x, y=y, z=z, layer_name="detections",
               timestamp=stamp)  # fmt: skip
    memory.add(text="a kitchen with a wooden table", x=x, y=y, z=z, layer_name="scene",
               timestamp=stamp)  # fmt: skip
    memory.add_body_state(text="battery: 81%", layer_name="battery", x=x, y=y, z=z,
                          timestamp=stamp)  # fmt: skip


def ignored_field_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, IgnoredSettingWarning)]


# --- the import door --------------------------------------------------------------------------


def test_emem_is_not_importable_until_alias_emem_is_called() -> None:
    # Importing emem_graph (and emem_graph.compat) installs nothing.
    assert "emem_graph.compat" in sys.modules
    assert not is_aliased()
    assert importlib.util.find_spec("emem") is None


def test_find_spec_finds_emem_and_its_submodules(aliased: None) -> None:
    spec = importlib.util.find_spec("emem")
    assert spec is not None
    assert spec.origin == "emem_graph.compat"
    assert spec.submodule_search_locations == []  # a package, as eMEM's
    for name in ("emem.config", "emem.tools", "emem.embeddings", "emem.consolidation"):
        sub = importlib.util.find_spec(name)
        assert sub is not None and sub.origin == "emem_graph.compat", name

    import emem
    import emem.config
    import emem.embeddings

    assert emem.SpatioTemporalMemory is EmemMemory
    assert emem.SpatioTemporalMemoryConfig is emem.config.SpatioTemporalMemoryConfig
    assert emem.config.SpatioTemporalMemoryConfig is MemoryConfig
    assert "CallableEmbeddingProvider" in emem.embeddings.__all__
    # eMEM's internals have no counterpart: a clear ImportError, not a half-working module.
    with pytest.raises(ModuleNotFoundError, match=r"emem\.store"):
        importlib.import_module("emem.store")


def test_unalias_emem_makes_emem_unimportable_again(aliased: None) -> None:
    import emem  # noqa: F401

    unalias_emem()
    assert "emem" not in sys.modules
    assert importlib.util.find_spec("emem") is None
    alias_emem()  # the fixture's teardown unaliases again


def test_alias_refuses_to_hide_an_installed_emem(installed_emem: None) -> None:
    with pytest.raises(EmemAliasError, match=r"real eMEM is installed .*site/emem") as caught:
        alias_emem()
    assert isinstance(caught.value, EmemGraphError)
    assert "shadow_installed=True" in str(caught.value)
    assert not is_aliased()
    import emem

    assert emem.REAL_EMEM  # untouched


def test_a_memory_folder_named_emem_is_not_taken_for_an_installed_emem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_emem_module: None
) -> None:
    """A launch file opens ``emem.SpatioTemporalMemory(db_path="emem")`` beside itself: the
    next run finds that folder as a namespace package ``emem``, which is no eMEM."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    alias_emem()
    import emem

    memory = emem.SpatioTemporalMemory(db_path="emem", embedding_provider=HashingEmbedder(384))
    memory.close()
    assert (tmp_path / "emem").is_dir()
    unalias_emem()
    importlib.invalidate_caches()
    assert importlib.util.find_spec("emem") is not None  # the folder, as a namespace package
    alias_emem()  # the next run of the launch file
    assert is_aliased()
    import emem as again

    assert again.SpatioTemporalMemory is EmemMemory


def test_alias_hides_an_imported_emem_only_when_told_and_warns(installed_emem: None) -> None:
    import emem

    assert emem.REAL_EMEM
    with pytest.raises(EmemAliasError):
        alias_emem()  # already imported: refused as well
    assert sys.modules["emem"] is emem

    with pytest.warns(EmemAliasWarning, match="hidden"):
        alias_emem(shadow_installed=True)
    aliased = importlib.import_module("emem")
    assert aliased is not emem
    assert aliased.SpatioTemporalMemory is EmemMemory

    unalias_emem()
    assert importlib.import_module("emem").REAL_EMEM  # the install is importable again


# --- the config as the component builds it ----------------------------------------------------


def test_component_config_is_accepted_and_warns_once_naming_the_ignored_fields(
    aliased: None, tmp_path: Path
) -> None:
    db_path = str(tmp_path / "robot_memory.db")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = component_config(db_path, 384)
        again = component_config(db_path, 384)  # a second configure of the component
    messages = ignored_field_warnings(caught)
    assert len(messages) == 1, messages
    for name in EMEM_IGNORED_FIELDS:
        assert name in messages[0]
    assert config == again
    assert config.db_path == db_path
    for name, value in COMPONENT_CONFIG.items():
        assert getattr(config, name) == value, name


def test_every_emem_config_field_is_accepted_with_emem_defaults(aliased: None) -> None:
    from emem.config import SpatioTemporalMemoryConfig

    fields = {
        "db_path": "memory.db",
        "hnsw_path": "memory_hnsw.bin",
        "embedding_dim": 384,
        **COMPONENT_CONFIG,
        **EMEM_DEV_ONLY_FIELDS,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IgnoredSettingWarning)
        config = SpatioTemporalMemoryConfig(**fields)
    assert {name: getattr(config, name) for name in fields} == fields
    assert config.llm_extract_batch_size == 16


def test_entity_extract_chunk_size_sets_the_llm_extract_batch_size() -> None:
    assert MemoryConfig(entity_extract_chunk_size=4).llm_extract_batch_size == 4
    assert MemoryConfig(entity_extract_chunk_size=4, llm_extract_batch_size=4)
    with pytest.raises(ValueError, match=r"entity_extract_chunk_size=4 .* disagree"):
        MemoryConfig(entity_extract_chunk_size=4, llm_extract_batch_size=8)


def test_a_field_of_neither_config_is_refused_by_name(aliased: None, tmp_path: Path) -> None:
    from emem import SpatioTemporalMemory
    from emem.config import SpatioTemporalMemoryConfig

    with pytest.raises(ValueError, match=r"hnsw_pth\n  Extra inputs are not permitted"):
        SpatioTemporalMemoryConfig(db_path=str(tmp_path / "m"), hnsw_pth="x.bin")
    with pytest.raises(
        ConfigError, match=r"flush_intervall: unknown field \(not a setting of emem_graph's"
    ) as caught:
        SpatioTemporalMemory(
            config={"db_path": str(tmp_path / "m"), "flush_intervall": 1.0},
            embedding_provider=HashingEmbedder(32),
        )
    assert isinstance(caught.value, EmemGraphError)
    assert not (tmp_path / "m").exists()


# --- the ten tools ----------------------------------------------------------------------------


def test_tool_schemas_and_definitions_are_emems_ten(aliased: None, tmp_path: Path) -> None:
    from emem import SpatioTemporalMemory
    from emem.tools import TOOL_SCHEMAS

    assert tuple(TOOL_SCHEMAS) == TEN_TOOLS
    memory = SpatioTemporalMemory(
        db_path=str(tmp_path / "m"), embedding_provider=HashingEmbedder(32)
    )
    try:
        definitions = memory.get_tool_definitions()
        # The component wraps each schema itself; it must be the facade's own definition.
        assert definitions == [{"type": "function", "function": TOOL_SCHEMAS[n]} for n in TEN_TOOLS]
        assert [d["function"]["name"] for _, d in memory.get_tools_for_registration()] == list(
            TEN_TOOLS
        )
        # emem_graph's capability tools are not offered through eMEM's door.
        answer = memory.dispatch_tool_call("route_query", {"query": "kitchen"})
        assert answer.startswith("Error: unknown tool 'route_query'")
        assert "semantic_search" in answer
    finally:
        memory.close()


# --- the component's lifecycle ----------------------------------------------------------------


def test_component_lifecycle_with_sentence_transformer_provider(
    aliased: None, tmp_path: Path
) -> None:
    from importlib.util import find_spec

    assert find_spec("emem") is not None  # Memory.__init__'s check

    from emem.embeddings import SentenceTransformerProvider

    embedding_provider = SentenceTransformerProvider("all-MiniLM-L6-v2")  # embedding_checkpoint
    db_path = str(tmp_path / "robot_memory.db")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emem_config = component_config(db_path, embedding_provider.dim)
        from emem import SpatioTemporalMemory

        memory = SpatioTemporalMemory(
            config=emem_config, embedding_provider=embedding_provider, llm_client=None
        )
    assert len(ignored_field_warnings(caught)) == 1
    try:
        now = float(int(time.time()))
        store_layers(memory, (0.0, 0.0, 0.0), now - 60)
        episode_id = memory.start_episode("kitchen patrol")
        store_layers(memory, (4.0, 2.0, 0.0), now - 30)
        memory.add(text="a green plant beside the sofa", x=9.0, y=7.0, z=0.0,
                   layer_name="detections", timestamp=now - 20)  # fmt: skip
        assert memory.end_episode() == episode_id

        # end_episode returned after consolidation: the episode is summarised already.
        episode = memory.store.get_episode(episode_id)
        assert episode.status == "completed"
        assert episode.gist
        perceived = [
            o
            for o in memory.store.get_episode_observations(episode_id)
            if o.source_type != "interoception"
        ]
        assert len(perceived) == 3
        assert {o.tier for o in perceived} == {"long_term"}

        found = memory.dispatch_tool_call("semantic_search", {"query": "where is the mug?"})
        assert "red mug" in found.splitlines()[1]
        located = memory.dispatch_tool_call("locate", {"concept": "houseplant"})
        assert located.startswith("Location: (9.0, 7.0")
        assert "battery: 81%" in memory.dispatch_tool_call("body_status", {})
        summary = memory.dispatch_tool_call("episode_summary", {"last_n": 1})
        assert summary.startswith("[kitchen patrol] (completed)")
        bad = memory.dispatch_tool_call("spatial_query", {"x": "here"})
        assert bad.startswith("Error: ")
    finally:
        memory.close()
    assert not Path(emem_config.hnsw_path).exists()  # nothing is written where eMEM's index was

    # The component's next configure reopens the same memory.
    reopened = SpatioTemporalMemory(
        config=component_config(db_path, embedding_provider.dim),
        embedding_provider=embedding_provider,
    )
    try:
        assert "red mug" in reopened.dispatch_tool_call("semantic_search", {"query": "mug"})
    finally:
        reopened.close()


def test_component_lifecycle_with_embedding_and_model_clients(
    aliased: None, tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    from emem.consolidation import InferenceLLMClient
    from emem.embeddings import CallableEmbeddingProvider

    def embed(texts: str | list[str]) -> list[list[float]]:
        # OllamaClient._embed's contract: a text or a list of texts -> a list of vectors.
        return minilm.embed([texts] if isinstance(texts, str) else texts).tolist()

    requests: list[dict[str, Any]] = []

    def inference(request: dict[str, Any]) -> dict[str, Any]:
        # Stands in for ModelClient.inference (no model server can run here).
        requests.append(request)
        prompt = request["query"][-1]["content"]
        if "Answer only JSON" in prompt:
            entities = [{"name": "red mug", "entity_type": "object", "observation": 1}]
            return {"output": json.dumps({"entities": entities})}
        return {"output": "<think>...</think>The robot patrolled the kitchen: a red mug."}

    embedding_provider = CallableEmbeddingProvider(embed)
    assert embedding_provider.dim == 384  # probed
    llm_client = InferenceLLMClient(inference)
    from emem import SpatioTemporalMemory

    memory = SpatioTemporalMemory(
        config=component_config(str(tmp_path / "robot_memory.db"), embedding_provider.dim),
        embedding_provider=embedding_provider,
        llm_client=llm_client,
    )
    try:
        now = float(int(time.time()))
        episode_id = memory.start_episode("kitchen patrol")
        store_layers(memory, (4.0, 2.0, 0.0), now - 30)
        memory.end_episode()

        # The model's summary (its reasoning dropped), then emem_graph's where-and-when line.
        gist = memory.store.get_episode(episode_id).gist
        assert gist.startswith("The robot patrolled the kitchen: a red mug. ")
        assert "<think>" not in gist
        assert requests and all(r["stream"] is False for r in requests)
        assert {r["temperature"] for r in requests} == {0.3}
        entities = memory.dispatch_tool_call("entity_query", {"name": "mug"})
        assert "red mug" in entities
        assert "(4.0,2.0)" in entities
        gists = memory.dispatch_tool_call("search_gists", {"query": "kitchen patrol"})
        assert "The robot patrolled the kitchen" in gists
    finally:
        memory.close()


def test_the_sitecustomize_recipe_aliases_emem_in_a_component_process(tmp_path: Path) -> None:
    # A launcher running components in their own processes starts fresh interpreters: the
    # documented recipe puts the alias line into a sitecustomize.py on PYTHONPATH.
    (tmp_path / "sitecustomize.py").write_text(
        "from emem_graph.compat import alias_emem\n\nalias_emem()\n"
    )
    probe = (
        "import importlib.util; spec = importlib.util.find_spec('emem'); "
        "from emem.tools import TOOL_SCHEMAS; print(spec.origin, len(TOOL_SCHEMAS))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["emem_graph.compat", "10"]
