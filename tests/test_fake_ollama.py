"""FakeOllamaServer (a fake: Ollama cannot run here) answers the real ``ollama`` client correctly.

These pin the fake itself, so the LLM and embedding tests built on it test our code and not a
broken double.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import ollama
import pytest
from fake_ollama import FakeOllamaServer, unreachable_url


def client(server: FakeOllamaServer, timeout: float = 5.0) -> ollama.Client:
    return ollama.Client(host=server.url, timeout=timeout)


def test_chat_answers_with_the_configured_reply(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.reply = "The red chair is in the kitchen."
    response = client(fake_ollama).chat(
        model="llama3.2", messages=[{"role": "user", "content": "Where is the chair?"}]
    )
    assert response.message.role == "assistant"
    assert response.message.content == "The red chair is in the kitchen."
    assert response.done is True
    assert fake_ollama.count("/api/chat") == 1
    _, body = fake_ollama.bodies[-1]
    assert body["messages"] == [{"role": "user", "content": "Where is the chair?"}]
    assert body["stream"] is False


def test_generate_answers_with_the_configured_reply(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.reply = "A short summary."
    response = client(fake_ollama).generate(model="llama3.2", prompt="Summarise this.")
    assert response.response == "A short summary."
    assert response.done is True
    assert fake_ollama.count("/api/generate") == 1


def test_reply_can_depend_on_the_request(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.reply = lambda body: f"echo: {body['prompt']}"
    assert client(fake_ollama).generate(model="m", prompt="hi").response == "echo: hi"


@pytest.mark.parametrize("output_format", ["json", {"type": "object"}])
def test_json_format_gets_the_json_reply(fake_ollama: FakeOllamaServer, output_format: Any) -> None:
    fake_ollama.json_reply = json.dumps({"entities": [{"name": "red chair", "type": "object"}]})
    chat = client(fake_ollama).chat(
        model="llama3.2", messages=[{"role": "user", "content": "x"}], format=output_format
    )
    generate = client(fake_ollama).generate(model="llama3.2", prompt="x", format=output_format)
    for text in (chat.message.content, generate.response):
        assert json.loads(text or "") == {"entities": [{"name": "red chair", "type": "object"}]}


def test_streaming_chat_and_generate_reassemble_the_reply(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.reply = "one two three four five"
    parts = list(
        client(fake_ollama).chat(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
    )
    assert "".join(p.message.content or "" for p in parts) == "one two three four five"
    assert parts[-1].done is True
    generated = list(client(fake_ollama).generate(model="m", prompt="x", stream=True))
    assert "".join(p.response or "" for p in generated) == "one two three four five"


def test_tags_lists_the_models(fake_ollama: FakeOllamaServer) -> None:
    listed = client(fake_ollama).list()
    assert [m.model for m in listed.models] == fake_ollama.models
    assert fake_ollama.count("/api/tags") == 1


def test_embed_returns_one_vector_per_text(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.embedding_dim = 12
    response = client(fake_ollama).embed(model="nomic-embed-text", input=["a", "b", "a"])
    assert len(response.embeddings) == 3
    assert all(len(v) == 12 for v in response.embeddings)
    assert response.embeddings[0] == response.embeddings[2] != response.embeddings[1]


def test_error500_mode_is_a_response_error(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("error500")
    with pytest.raises(ollama.ResponseError) as caught:
        client(fake_ollama).chat(model="m", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 500


def test_mode_with_times_reverts_to_ok(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("error500", times=1)
    with pytest.raises(ollama.ResponseError):
        client(fake_ollama).generate(model="m", prompt="x")
    assert client(fake_ollama).generate(model="m", prompt="x").done is True
    assert fake_ollama.mode == "ok"


def test_malformed_mode_is_not_json(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("malformed")
    with pytest.raises(json.JSONDecodeError):
        client(fake_ollama).generate(model="m", prompt="x")


def test_slow_mode_trips_a_client_timeout(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("slow", delay=3.0)
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException):
        client(fake_ollama, timeout=0.2).generate(model="m", prompt="x")
    assert time.monotonic() - started < 2.0


def test_strict_models_answers_404_for_unknown_models() -> None:
    with FakeOllamaServer(models=["llama3.2"], strict_models=True) as server:
        with pytest.raises(ollama.ResponseError, match="not found") as caught:
            client(server).generate(model="mistral", prompt="x")
        assert caught.value.status_code == 404
        assert client(server).generate(model="llama3.2", prompt="x").done is True


def test_stopped_and_unreachable_servers_refuse_connections(
    fake_ollama: FakeOllamaServer,
) -> None:
    connected = client(fake_ollama)
    assert connected.generate(model="m", prompt="x").done is True
    fake_ollama.stop()
    with pytest.raises(ConnectionError):
        connected.generate(model="m", prompt="x")  # the kept-alive connection is gone too
    with pytest.raises(ConnectionError):
        ollama.Client(host=unreachable_url(), timeout=2).generate(model="m", prompt="x")


def test_unknown_mode_is_rejected(fake_ollama: FakeOllamaServer) -> None:
    with pytest.raises(ValueError, match="unknown fake Ollama mode"):
        fake_ollama.set_mode("flaky")
