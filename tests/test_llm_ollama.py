"""OllamaLLM through the real ``ollama`` client against FakeOllamaServer (a fake: no Ollama here).

The client must retry what is worth retrying, give up quickly on what is not, and always fail
with BackendUnavailableError, which consolidation turns into its fallback.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from fake_ollama import FakeOllamaServer, unreachable_url

from emem_graph.errors import BackendUnavailableError
from emem_graph.llm.client import ExtractedEntity, LLMClient, OllamaLLM

KNOWN = ("red chair", "kitchen table", "front door", "sofa")


def extraction_answer(body: dict[str, Any]) -> str:
    """What a model would answer to the extraction prompt: the known names in each numbered
    observation, with its number."""
    prompt = body["messages"][-1]["content"]
    entities = []
    for number, text in re.findall(r"^(\d+)\. (.*)$", prompt, re.MULTILINE):
        for name in KNOWN:
            if name in text.lower():
                entities.append(
                    {"name": name, "entity_type": "furniture", "confidence": 0.9,
                     "observation": int(number)}
                )  # fmt: skip
    return json.dumps({"entities": entities})


def llm(server: FakeOllamaServer, **options: Any) -> OllamaLLM:
    settings: dict[str, Any] = {"timeout": 2.0, "retries": 2, "backoff": 0.01}
    settings.update(options)
    return OllamaLLM("llama3.2", host=server.url, **settings)


def test_ollama_llm_is_an_llm_client(fake_ollama: FakeOllamaServer) -> None:
    assert isinstance(llm(fake_ollama), LLMClient)


def test_summaries_come_back_without_thinking(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.reply = "<think>the user wants a summary</think>\nA red chair by the door."
    client = llm(fake_ollama)
    assert client.summarize(["a red chair", "a door"]) == "A red chair by the door."
    assert client.synthesize({"captions": ["a red chair"], "detections": ["1 chair"]}) == (
        "A red chair by the door."
    )
    prompts = [body["messages"][-1]["content"] for _, body in fake_ollama.bodies]
    assert "1. a red chair\n2. a door" in prompts[0]
    assert "[captions]" in prompts[1] and "contradictions" in prompts[1]


def test_entities_are_extracted_as_json_with_the_observation_index(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.json_reply = extraction_answer
    found = llm(fake_ollama).extract_entities(
        ["a red chair by the kitchen table", "the front door is open"]
    )
    assert found == [
        ExtractedEntity(name="red chair", entity_type="furniture", confidence=0.9, index=0),
        ExtractedEntity(name="kitchen table", entity_type="furniture", confidence=0.9, index=0),
        ExtractedEntity(name="front door", entity_type="furniture", confidence=0.9, index=1),
    ]
    _, body = fake_ollama.bodies[-1]
    assert body["format"]["required"] == ["entities"]  # structured JSON output was requested


def test_server_errors_are_retried_with_backoff_then_succeed(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.reply = "A kitchen."
    fake_ollama.set_mode("error500", times=2)
    assert llm(fake_ollama, retries=2).summarize(["a kitchen"]) == "A kitchen."
    assert fake_ollama.count("/api/chat") == 3


def test_persistent_server_errors_raise_backend_unavailable(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("error500")
    with pytest.raises(BackendUnavailableError, match="did not answer after 3 tries"):
        llm(fake_ollama, retries=2).summarize(["a kitchen"])
    assert fake_ollama.count("/api/chat") == 3


def test_an_unknown_model_is_not_retried(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.strict_models = True
    client = OllamaLLM("no-such-model", host=fake_ollama.url, timeout=2.0, retries=3)
    with pytest.raises(BackendUnavailableError, match="refused model"):
        client.summarize(["a kitchen"])
    assert fake_ollama.count("/api/chat") == 1


def test_a_malformed_answer_is_not_retried(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("malformed")
    with pytest.raises(BackendUnavailableError, match="malformed"):
        llm(fake_ollama, retries=3).summarize(["a kitchen"])
    assert fake_ollama.count("/api/chat") == 1


def test_malformed_entity_json_raises_backend_unavailable(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.json_reply = '{"entities": [{"name": "red chair", "observation": 1'
    with pytest.raises(BackendUnavailableError, match="not a JSON entity list"):
        llm(fake_ollama).extract_entities(["a red chair"])


def test_a_slow_server_times_out_per_request(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.set_mode("slow", delay=5.0)
    started = time.monotonic()
    with pytest.raises(BackendUnavailableError):
        llm(fake_ollama, timeout=0.3, retries=1).summarize(["a kitchen"])
    assert time.monotonic() - started < 2.0
    assert fake_ollama.count("/api/chat") == 2


def test_an_unreachable_server_raises_backend_unavailable() -> None:
    client = OllamaLLM("llama3.2", host=unreachable_url(), timeout=1.0, retries=1, backoff=0.01)
    with pytest.raises(BackendUnavailableError, match="did not answer"):
        client.summarize(["a kitchen"])


def test_the_area_choice_is_the_number_the_model_answers(fake_ollama: FakeOllamaServer) -> None:
    client = llm(fake_ollama, retries=0)
    fake_ollama.reply = "<think>the kitchen has a coffee machine</think>\nArea 2."
    areas = ["A desk with a printer.", "A coffee machine on the counter."]
    assert client.choose_area("where can I get coffee?", areas) == 1
    prompt = fake_ollama.bodies[-1][1]["messages"][-1]["content"]
    assert "Question: where can I get coffee?" in prompt and "2. A coffee machine" in prompt
    for answer in ("I cannot tell.", "3"):
        fake_ollama.reply = answer
        with pytest.raises(BackendUnavailableError, match="chose no area"):
            client.choose_area("where can I get coffee?", areas)


def test_one_malformed_entity_drops_itself_not_the_answer(fake_ollama: FakeOllamaServer) -> None:
    """An item with observation 1e400 (json reads infinity), NaN, a NaN confidence or a name
    of a million characters is left out; the other entities of the answer are kept."""
    good = [
        {"name": "red chair", "type": "furniture", "observation": 1},
        {"name": "sofa", "type": "furniture", "observation": 2},
    ]
    bad = [
        '{"name": "lamp", "observation": 1e400}',
        '{"name": "rug", "observation": NaN}',
        '{"name": "cup", "observation": 1, "confidence": NaN}',
        json.dumps({"name": "x" * 1_000_000, "observation": 1}),
        json.dumps({"name": "vase", "type": "t" * 1000, "observation": 2}),
    ]
    fake_ollama.json_reply = '{"entities": [' + ", ".join([*map(json.dumps, good), *bad]) + "]}"
    found = llm(fake_ollama).extract_entities(["a red chair and a lamp", "the sofa"])
    assert [(e.name, e.index) for e in found] == [("red chair", 0), ("sofa", 1)]


def test_a_detection_label_too_long_to_be_a_name_is_left_out_of_extraction(tmp_path) -> None:
    from emem_graph import HashingEmbedder, SpatioTemporalMemory

    with SpatioTemporalMemory(str(tmp_path / "m"), embedding_provider=HashingEmbedder(384)) as m:
        m.add("1 " + "x" * 300 + ", 1 chair", 1.0, 1.0, layer_name="detections")
        m.add("a " + "y" * 400 + " chair by the door", 1.0, 1.0, layer_name="captions")
        m.flush()
        m.extract_entities()
        assert "chair" in m.entity_query() and "x" * 300 not in m.entity_query()
