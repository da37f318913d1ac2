"""The LLM used by consolidation: its protocol, its answers, and the Ollama implementation.

An LLM client writes gist text (``summarize``, ``synthesize`` across perception layers) and finds
entities (``extract_entities``). Any object with these three methods works (eMEM's clients too:
their entity dicts are accepted). Shipped: OllamaLLM (here) and FallbackLLM (fallback.py, no
model at all); PromptedLLM holds the prompts and answer reading that OllamaLLM and the compat
layer's inference-function client share. Consolidation never depends on an LLM answering: every
failure — unreachable, slow, HTTP 500, malformed output — falls back to the built-in summarizer
and extractor.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from emem_graph.errors import BackendUnavailableError

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig

log = logging.getLogger(__name__)


class MalformedAnswerError(BackendUnavailableError):
    """The LLM answered, but not in the form asked for (e.g. no JSON entity list). The server
    works: other requests are still worth making."""


_THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
MAX_PROMPT_TEXTS = 60
"""Texts sent in one summarize/synthesize prompt (callers pre-select representative ones)."""


MAX_EXTRACTED_NAME_CHARS = 256
"""Longest entity name (and type) taken from an extractor: a longer one is no name of a thing
(an LLM answering 1,000,000 characters), and the entity is dropped."""


class ExtractedEntity(BaseModel):
    """An entity found in a numbered list of observation texts."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=MAX_EXTRACTED_NAME_CHARS)
    entity_type: str | None = Field(None, max_length=MAX_EXTRACTED_NAME_CHARS)
    confidence: float = 1.0
    index: int | None = None
    """0-based position of the text it came from; None when the client did not say."""

    @field_validator("name")
    @classmethod
    def _strip(cls, value: str) -> str:
        stripped = " ".join(value.split())
        if not stripped:
            raise ValueError("entity name is empty")
        return stripped

    @field_validator("confidence")
    @classmethod
    def _clamp(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("confidence is not a finite number")
        return min(max(float(value), 0.0), 1.0)


@runtime_checkable
class LLMClient(Protocol):
    """What consolidation needs of an LLM."""

    def summarize(self, texts: list[str]) -> str:
        """One concise summary of observation texts (same perception layer)."""
        ...

    def synthesize(self, texts_by_layer: dict[str, list[str]]) -> str:
        """One summary across perception layers that says where they agree and contradict."""
        ...

    def extract_entities(self, texts: list[str]) -> Sequence[ExtractedEntity | Mapping[str, Any]]:
        """Entities in the texts (numbered from 1 in a prompt), each with the 0-based index of
        the text it came from."""
        ...


def strip_thinking(text: str) -> str:
    """Text without <think>...</think> blocks (reasoning models) and code fences."""
    cleaned = _THINK_RE.sub("", text or "").strip()
    return _FENCE_RE.sub("", cleaned).strip()


def coerce_entities(raw: Iterable[Any], count: int) -> list[ExtractedEntity]:
    """Validate a client's entities (records or dicts) against ``count`` texts.

    Dicts may use ``type`` for ``entity_type`` and ``observation`` (1-based) or ``index``
    (0-based) for the text; entries without a usable name or with an index outside the texts
    are dropped.
    """
    found: list[ExtractedEntity] = []
    for item in raw:
        if isinstance(item, ExtractedEntity):
            candidate = item
        elif isinstance(item, Mapping):
            fields = dict(item)
            fields.setdefault("entity_type", fields.get("type"))
            if fields.get("confidence") is None:
                fields["confidence"] = 1.0
            try:  # one malformed item drops that item, not the answer
                if "index" not in fields and isinstance(fields.get("observation"), int | float):
                    fields["index"] = int(fields["observation"]) - 1  # inf, NaN: refused
                candidate = ExtractedEntity.model_validate(fields)
            except (ValueError, OverflowError, TypeError):
                continue
        else:
            continue
        if candidate.index is not None and not 0 <= candidate.index < count:
            continue
        found.append(candidate)
    return found


def parse_entities_json(text: str, count: int) -> list[ExtractedEntity]:
    """Entities from a model's JSON answer: ``{"entities": [...]}`` or a bare list.

    Raises:
        MalformedAnswerError: the answer holds no parseable JSON entity list.
    """
    cleaned = strip_thinking(text)
    value: Any = None
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError:
        match = re.search(r"(\{.*\}|\[.*\])", cleaned, re.DOTALL)
        if match:
            try:
                value = json.loads(match.group(1))
            except json.JSONDecodeError:
                value = None
    if isinstance(value, dict):
        value = value.get("entities")
    if not isinstance(value, list):
        raise MalformedAnswerError(
            f"the LLM's entity answer is not a JSON entity list: {cleaned[:120]!r}"
        )
    return coerce_entities(value, count)


ENTITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "entity_type": {"type": "string"},
                    "confidence": {"type": "number"},
                    "observation": {"type": "integer"},
                },
                "required": ["name", "observation"],
            },
        }
    },
    "required": ["entities"],
}

SUMMARIZE_PROMPT = (
    "Summarize these robot observations in one or two short sentences, at most 300 "
    "characters. A line ending in (3x) was observed 3 times. Name each thing once, by its full "
    "name, with how often it was seen (e.g. 'coffee machine, cup, refrigerator, seen 8 times'); "
    "keep places and the order of events; do not repeat anything and do not invent anything."
    "\n\n{texts}"
)
SYNTHESIZE_PROMPT = (
    "A robot perceived the same places through several perception layers. Write one short "
    "summary across the layers, at most 300 characters: say what they agree on and point out "
    "any contradictions. A line ending in (3x) was observed 3 times. Name each thing once, by "
    "its full name, with how often it was seen; do not repeat anything and do not invent "
    "anything.\n\n{texts}"
)
EXTRACT_PROMPT = (
    "List the physical objects, people and places named in these numbered robot observations. "
    'Answer only JSON: {{"entities": [{{"name": "red chair", "entity_type": "furniture", '
    '"confidence": 0.9, "observation": 1}}]}} where observation is the number of the '
    "observation the entity appears in (one entry per entity and observation). Use short "
    "names (a noun with at most two modifiers).\n\n{texts}"
)

CHOOSE_AREA_PROMPT = (
    "A robot remembers these areas, each described by what it saw there. Which area is the "
    "most likely to answer the question? Answer only the area's number.\n\nQuestion: "
    "{question}\n\nAreas:\n{areas}"
)
_NUMBER = re.compile(r"\d+")


def numbered(texts: Sequence[str]) -> str:
    """Texts as a numbered list, 1-based."""
    return "\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts))


class PromptedLLM:
    """An LLMClient built on emem_graph's prompts: summarize, synthesize and extract_entities
    format the prompt and read the answer; a subclass sends one prompt (``_chat``) and says who
    answered empty (``_empty_answer``)."""

    def summarize(self, texts: list[str]) -> str:
        """A short summary of observation texts."""
        prompt = SUMMARIZE_PROMPT.format(texts=numbered(texts[:MAX_PROMPT_TEXTS]))
        return self._text(self._chat(prompt))

    def synthesize(self, texts_by_layer: dict[str, list[str]]) -> str:
        """A cross-layer summary highlighting agreements and contradictions."""
        block = "\n".join(
            f"[{layer}]\n{numbered(texts[:MAX_PROMPT_TEXTS])}"
            for layer, texts in texts_by_layer.items()
        )
        return self._text(self._chat(SYNTHESIZE_PROMPT.format(texts=block)))

    def extract_entities(self, texts: list[str]) -> list[ExtractedEntity]:
        """Entities of the texts with the index of the text each came from (JSON output)."""
        answer = self._chat(EXTRACT_PROMPT.format(texts=numbered(texts)), schema=ENTITY_SCHEMA)
        return parse_entities_json(answer, len(texts))

    def _chat(self, prompt: str, *, schema: dict[str, Any] | None = None) -> str:
        """The answer text to one user prompt (``schema``: the JSON shape asked for, where the
        backend can enforce one)."""
        raise NotImplementedError

    def _empty_answer(self) -> str:
        """The error message for an answer with no text."""
        return "the LLM returned an empty answer"

    def _text(self, answer: str) -> str:
        text = " ".join(strip_thinking(answer).split())
        if not text:
            raise MalformedAnswerError(self._empty_answer())
        return text


class OllamaLLM(PromptedLLM):
    """An LLMClient backed by an Ollama server through the ``ollama`` client.

    Each request has a timeout; connection errors, timeouts and HTTP 5xx are retried with
    exponential backoff; a 4xx answer (unknown model) or a malformed answer is not retried.
    Every failure raises BackendUnavailableError, on which consolidation uses its fallback.

    Args:
        model: chat model name.
        host: Ollama base URL.
        timeout: seconds per request.
        retries: extra attempts after the first.
        backoff: seconds before the first retry (doubled after each).
        temperature: sampling temperature.
        max_tokens: answer length limit (Ollama's num_predict).
    """

    def __init__(
        self,
        model: str = "llama3.2",
        *,
        host: str = "http://127.0.0.1:11434",
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        temperature: float = 0.2,
        max_tokens: int = 512,
    ) -> None:
        try:
            import ollama
        except ImportError as exc:
            raise BackendUnavailableError(
                "the ollama client is not installed: pip install ollama"
            ) from exc
        self.model = model
        self.host = host
        self._client = ollama.Client(host=host, timeout=timeout)
        self._retries = retries
        self._backoff = backoff
        self._options = {"temperature": temperature, "num_predict": max_tokens}

    def choose_area(self, question: str, summaries: list[str]) -> int:
        """The 0-based index of the area summary most likely to answer ``question`` (the area
        walk's choice of a child; optional for other clients: without it the walk ranks by
        similarity)."""
        prompt = CHOOSE_AREA_PROMPT.format(question=question, areas=numbered(summaries))
        answer = strip_thinking(self._chat(prompt))
        match = _NUMBER.search(answer)
        if match is None or not 1 <= int(match.group()) <= len(summaries):
            raise MalformedAnswerError(f"Ollama model {self.model!r} chose no area: {answer!r}")
        return int(match.group()) - 1

    def complete_json(self, prompt: str, schema: dict[str, Any]) -> str:
        """The model's JSON answer to ``prompt``, shaped by ``schema`` (Ollama's ``format``),
        at temperature 0 (the user profile's instruction parsing)."""
        return self._chat(prompt, schema=schema, options={**self._options, "temperature": 0.0})

    def _empty_answer(self) -> str:
        return f"Ollama model {self.model!r} returned an empty answer"

    def _chat(
        self,
        prompt: str,
        *,
        schema: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> str:
        import httpx
        import ollama

        last: Exception | None = None
        for attempt in range(self._retries + 1):
            try:
                response = self._client.chat(
                    model=self.model,
                    messages=[{"role": "user", "content": prompt}],
                    format=schema,
                    options=options or self._options,
                )
            except ollama.ResponseError as exc:
                if 0 <= exc.status_code < 500:
                    raise BackendUnavailableError(
                        f"Ollama refused model {self.model!r}: {exc.error}"
                    ) from exc
                last = exc
            except (httpx.HTTPError, ConnectionError, OSError) as exc:
                last = exc
            except (ValueError, TypeError) as exc:
                raise BackendUnavailableError(
                    f"Ollama at {self.host} sent a malformed answer ({type(exc).__name__}: "
                    f"{exc}); check that ollama_host points at an Ollama server"
                ) from exc
            else:
                return str(response.message.content or "")
            if attempt < self._retries:
                delay = self._backoff * (2**attempt)
                log.debug("Ollama request failed (%s); retrying in %.2f s", last, delay)
                time.sleep(delay)
        raise BackendUnavailableError(
            f"Ollama at {self.host} did not answer after {self._retries + 1} tries: {last}"
        )


def configured_llm(config: MemoryConfig) -> OllamaLLM | None:
    """The LLM named by ``config.llm_provider``, with its timeout and retries (None: the
    built-in fallbacks only)."""
    if config.llm_provider == "ollama":
        return OllamaLLM(
            config.ollama_llm_model,
            host=config.ollama_host,
            timeout=config.llm_timeout,
            retries=config.llm_retries,
            backoff=config.llm_retry_backoff,
        )
    return None
