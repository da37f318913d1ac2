"""MemoryConfig: eMEM's fields and defaults, validation at construction, the eMEM alias."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from emem_graph import (
    ConfigError,
    HashingEmbedder,
    InvalidInputError,
    MemoryConfig,
    SpatioTemporalMemory,
    SpatioTemporalMemoryConfig,
)
from emem_graph.config import provider_dim, settle

EMEM_DEFAULTS: dict[str, Any] = {
    "db_path": "memory.db",
    "embedding_dim": 384,
    "working_memory_size": 50,
    "flush_interval": 2.0,
    "flush_batch_size": 5,
    "consolidation_window": 1800,
    "consolidation_spatial_eps": 3.0,
    "consolidation_min_samples": 3,
    "archive_after_seconds": 3600,
    "entity_extract_flush_interval": 10,
    "entity_extract_time_interval": 60,
    "entity_similarity_threshold": 0.85,
    "entity_text_similarity_threshold": 0.65,
    "entity_spatial_radius": 5.0,
    "use_hybrid_retrieval": True,
    "rrf_k": 60,
    "recency_weight": 0.0,
    "recency_halflife": 3600,
    # EmbodiedAgents' Memory component fields
    "embedding_checkpoint": "all-MiniLM-L6-v2",
    "auto_store": True,
}


@pytest.mark.parametrize(("field", "expected"), sorted(EMEM_DEFAULTS.items()))
def test_default_matches_emem(field: str, expected: Any) -> None:
    assert getattr(MemoryConfig(), field) == expected


def test_every_emem_field_is_accepted_by_name() -> None:
    config = MemoryConfig(**EMEM_DEFAULTS)
    assert config == MemoryConfig()


def test_spatio_temporal_memory_config_is_memory_config() -> None:
    assert SpatioTemporalMemoryConfig is MemoryConfig


def test_default_embedder_is_sentence_transformers_minilm() -> None:
    config = MemoryConfig()
    assert config.embedding_provider == "sentence-transformers"
    assert config.embedding_checkpoint == "all-MiniLM-L6-v2"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("entity_spatial_radius", -1.0),
        ("consolidation_spatial_eps", -0.5),
        ("flush_batch_size", 0),
        ("working_memory_size", 0),
        ("embedding_dim", 0),
        ("flush_interval", 0.0),
        ("rrf_k", 0),
        ("consolidation_min_samples", 1),
        ("entity_similarity_threshold", 1.5),
        ("entity_text_similarity_threshold", -0.1),
        ("recency_weight", 2.0),
        ("embedding_provider", "word2vec"),
        ("db_path", ""),
    ],
)
def test_invalid_value_is_a_value_error(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        MemoryConfig(**{field: value})


def test_unknown_field_is_a_value_error() -> None:
    with pytest.raises(ValidationError, match="no_such_setting") as caught:
        MemoryConfig(no_such_setting=1)  # type: ignore[call-arg]
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"entity_spatial_radius": -2.0}, "entity_spatial_radius"),
        ({"flush_batch_size": 0}, "flush_batch_size"),
        ({"bogus_field": True}, "bogus_field"),
        ({"embedding_dim": "lots"}, "embedding_dim"),
    ],
)
def test_build_raises_config_error_naming_the_field(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named) as caught:
        MemoryConfig.build(**fields)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, InvalidInputError)
    assert "invalid MemoryConfig" in str(caught.value)


def test_build_names_every_bad_field() -> None:
    with pytest.raises(ConfigError) as caught:
        MemoryConfig.build(flush_batch_size=0, entity_spatial_radius=-1.0)
    assert "flush_batch_size" in str(caught.value)
    assert "entity_spatial_radius" in str(caught.value)


def test_build_accepts_good_fields() -> None:
    config = MemoryConfig.build(db_path="somewhere", flush_batch_size=7, rrf_k=30)
    assert (config.db_path, config.flush_batch_size, config.rrf_k) == ("somewhere", 7, 30)


def test_assignment_is_validated_too() -> None:
    config = MemoryConfig()
    with pytest.raises(ValueError, match="entity_spatial_radius"):
        config.entity_spatial_radius = -1.0
    assert config.entity_spatial_radius == 5.0


def test_memory_rejects_a_config_dict_with_a_bad_field(tmp_path: Path) -> None:
    target = tmp_path / "mem"
    with pytest.raises(ConfigError, match="flush_batch_sise"):
        SpatioTemporalMemory(
            config={"db_path": str(target), "flush_batch_sise": 3},
            embedding_provider=HashingEmbedder(384),
        )
    assert not target.exists()


def test_memory_rejects_a_config_dict_with_a_bad_value(tmp_path: Path) -> None:
    target = tmp_path / "mem"
    with pytest.raises(ConfigError, match="entity_spatial_radius"):
        SpatioTemporalMemory(
            config={"db_path": str(target), "entity_spatial_radius": -3.0},
            embedding_provider=HashingEmbedder(384),
        )
    assert not target.exists()


def test_memory_accepts_a_config_dict(tmp_path: Path) -> None:
    config = {"db_path": str(tmp_path / "mem"), "flush_batch_size": 2, "embedding_dim": 64}
    with SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(64)) as memory:
        assert isinstance(memory.config, MemoryConfig)
        assert memory.config.flush_batch_size == 2
        assert memory.config.db_path == str(tmp_path / "mem")


def test_emem_fields_without_effect_take_any_value_and_only_warn() -> None:
    """API.md: eMEM's fields with no effect here are warned about, never refused (an eMEM
    config holding hnsw_m=0 or hnsw_path=None loads unchanged)."""
    with warnings.catch_warnings():  # warned once per process: maybe by an earlier test
        warnings.simplefilter("ignore")
        config = MemoryConfig(hnsw_m=0, hnsw_max_elements=-1, hnsw_path=None, hnsw_ef_search="x")
    assert (config.hnsw_m, config.hnsw_max_elements, config.hnsw_path) == (0, -1, None)


# --- db_path the system cannot take, and the embedding provider's dim ------------------------


def _one_line_config_error(call) -> str:
    with pytest.raises(ConfigError) as caught:
        call()
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    return message


def test_a_db_path_that_cannot_be_made_is_a_one_line_config_error(tmp_path: Path) -> None:
    # A bare NotADirectoryError, FileNotFoundError and UnicodeEncodeError came out of the
    # constructor (only a NUL and a db_path that is itself a file were refused in words).
    a_file = tmp_path / "a_file"
    a_file.write_text("x")

    def memory(path: str) -> SpatioTemporalMemory:
        return SpatioTemporalMemory(path, embedding_provider=HashingEmbedder(384))

    below_a_file = _one_line_config_error(lambda: memory(str(a_file / "mem")))
    assert "cannot be created" in below_a_file and "is a file, not a directory" in below_a_file
    in_proc = _one_line_config_error(lambda: memory("/proc/emem_no_such_memory"))
    assert "cannot be created" in in_proc
    surrogate = _one_line_config_error(lambda: memory(f"{tmp_path}/a\ud800b"))
    assert "db_path" in surrogate and "UTF-8 cannot encode" in surrogate
    assert "'\\ud800'" in surrogate  # shown escaped, printable
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


@pytest.mark.parametrize("dim", ["384", 384.0, True, 0, -3, None, [384]])
def test_a_provider_dim_that_is_no_positive_int_is_refused_saying_so(
    tmp_path: Path, dim: object
) -> None:
    # dim="384" was taken as embedding_dim (pydantic converted it), and the check after it
    # said "the embedder gives 384-dimensional vectors but config.embedding_dim is 384".
    class Provider:
        def embed(self, texts: list[str]) -> None:
            return None

    provider = Provider()
    provider.dim = dim  # type: ignore[attr-defined]
    message = _one_line_config_error(lambda: provider_dim(provider))
    assert "must be a positive int" in message
    if dim is None:  # settle's "no provider given"; memory.py checks its provider's dim
        return
    message = _one_line_config_error(lambda: settle(str(tmp_path / "m"), None, dim))  # type: ignore[arg-type]
    assert "must be a positive int" in message
    assert "384-dimensional" not in message
    target = tmp_path / "mem"
    message = _one_line_config_error(
        lambda: SpatioTemporalMemory(str(target), embedding_provider=provider)  # type: ignore[arg-type]
    )
    assert "must be a positive int" in message
    assert not target.exists()


def test_provider_dim_takes_a_positive_integer_and_refuses_a_provider_without_one() -> None:
    import numpy as np

    assert provider_dim(HashingEmbedder(64)) == 64
    numpy_dim = type("P", (), {"dim": np.int64(32), "embed": lambda self, texts: None})()
    assert provider_dim(numpy_dim) == 32
    assert type(provider_dim(numpy_dim)) is int
    message = _one_line_config_error(lambda: provider_dim(object()))
    assert "has no dim attribute" in message
    no_embed = type("P", (), {"dim": 32})()
    assert "has no embed() method" in _one_line_config_error(lambda: provider_dim(no_embed))


def test_malloc_arenas_are_limited_on_glibc_and_left_alone_at_zero() -> None:
    import sys

    from emem_graph.storage.release import limit_malloc_arenas

    assert MemoryConfig().malloc_arena_max == 2
    assert limit_malloc_arenas(0) is False
    assert limit_malloc_arenas(2) is sys.platform.startswith("linux")
    with pytest.raises(ValueError, match="malloc_arena_max"):
        MemoryConfig(malloc_arena_max=-1)
