"""The LLM way in: classify an instruction, then extract its knowledge as JSON.

Two requests per instruction, both answered in JSON constrained by a schema (Ollama's
``format``): the knowledge type (object_semantics, user_pattern or none), then the knowledge
and its elements for that type. Any object with ``complete_json(prompt, schema) -> str`` is a
ProfileLLM; consolidation's OllamaLLM is the shipped one (its complete_json, through the
``ollama`` client with the memory's timeout and retry settings). A failure raises
BackendUnavailableError (MalformedAnswerError for an answer of the wrong form); the profile
then falls back to the rule-based parser (parse.py).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import ValidationError

from emem_graph.errors import InvalidInputError
from emem_graph.llm.client import MalformedAnswerError, configured_llm, strip_thinking
from emem_graph.profile.models import OBJECT_SEMANTICS, USER_PATTERN, Instruction

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig

log = logging.getLogger(__name__)


@runtime_checkable
class ProfileLLM(Protocol):
    """What the profile needs of an LLM: a JSON answer to a prompt, shaped by a JSON schema."""

    def complete_json(self, prompt: str, schema: dict[str, Any]) -> str:
        """The model's answer (JSON text) to ``prompt``."""
        ...


CLASSIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"type": {"type": "string", "enum": [OBJECT_SEMANTICS, USER_PATTERN, "none"]}},
    "required": ["type"],
}
_OBJECT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "attributes": {"type": "array", "items": {"type": "string"}},
        "granularity": {"type": "string", "enum": ["instance", "category"]},
    },
    "required": ["name"],
}
OBJECT_SEMANTICS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "alias": {"type": "string"},
        "description": {"type": "string"},
        "objects": {"type": "array", "items": _OBJECT},
    },
    "required": ["alias", "objects"],
}
USER_PATTERN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "alias": {"type": "string"},
        "description": {"type": "string"},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "action": {"type": "string"},
                    "objects": {"type": "array", "items": _OBJECT},
                    "locations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "expression": {"type": "string"},
                            },
                            "required": ["name"],
                        },
                    },
                },
                "required": ["action"],
            },
        },
    },
    "required": ["alias", "steps"],
}

CLASSIFY_PROMPT = (
    "A user told a household robot something about themselves. Classify it. Answer only JSON "
    '{{"type": T}} where T is "object_semantics" when it names which object(s) the user means '
    'by a personal expression ("the yellow cup is my favorite cup"), "user_pattern" when it '
    'describes a routine of ordered steps ("for my cozy evening, move the candle to the '
    'table, then to the couch"), and "none" otherwise.\n\nUser: {text}'
)
OBJECT_SEMANTICS_PROMPT = (
    "Extract the personal object knowledge from what the user said. Answer only JSON: "
    '{{"alias": the personal expression as the user says it ("my favorite cup"), '
    '"description": one sentence restating the fact, "objects": [{{"name": the object with '
    'its distinguishing words ("yellow cup with wooden handle"), "attributes": ["yellow", '
    '"wooden handle"], "granularity": "instance" for one specific object or "category" for '
    "any object of a kind}}]}}. Do not invent objects.\n\nUser: {text}"
)
USER_PATTERN_PROMPT = (
    "Extract the user's routine from what the user said. Answer only JSON: "
    '{{"alias": the routine\'s name as the user says it ("my cozy evening"), "description": '
    'one sentence restating it, "steps": [{{"action": a verb ("move", "place"), "objects": '
    '[{{"name": "candle"}}], "locations": [{{"name": "table", "expression": "to the table"}}]}}]}} '
    "with one entry per step, in the order the user gave (repeat the object in a step that "
    "only names a new place). Do not invent steps.\n\nUser: {text}"
)


def profile_llm_for(config: MemoryConfig, llm_client: Any) -> ProfileLLM | None:
    """The ProfileLLM of a memory: its llm_client when that can answer JSON (an OllamaLLM
    can), the configured Ollama LLM when ``config.llm_provider`` is "ollama", otherwise None
    (rule-based parsing only)."""
    if isinstance(llm_client, ProfileLLM):  # an OllamaLLM answers JSON too
        return llm_client
    if llm_client is None:
        return configured_llm(config)
    return None


def extract_instruction(llm: ProfileLLM, text: str) -> Instruction:
    """Classify ``text`` and extract its knowledge with two JSON requests.

    Raises:
        InvalidInputError: the LLM says it is neither a personal fact nor a routine.
        BackendUnavailableError: the LLM failed (MalformedAnswerError: it answered, wrongly).
    """
    kind = _json_object(llm.complete_json(CLASSIFY_PROMPT.format(text=text), CLASSIFY_SCHEMA))
    subtype = str(kind.get("type", "")).strip().lower()
    if subtype == "none":
        raise InvalidInputError(f"not a personal fact or routine: {text[:80]!r}")
    if subtype not in (OBJECT_SEMANTICS, USER_PATTERN):
        raise MalformedAnswerError(f"the LLM classified the instruction as {subtype!r}")
    if subtype == OBJECT_SEMANTICS:
        prompt, schema = OBJECT_SEMANTICS_PROMPT, OBJECT_SEMANTICS_SCHEMA
    else:
        prompt, schema = USER_PATTERN_PROMPT, USER_PATTERN_SCHEMA
    fields = _json_object(llm.complete_json(prompt.format(text=text), schema))
    fields["subtype"] = subtype
    fields.setdefault("description", text)
    if not fields.get("description"):
        fields["description"] = text
    try:
        instruction = Instruction.model_validate(fields)
    except ValidationError as exc:
        raise MalformedAnswerError(f"the LLM's {subtype} answer does not fit: {exc}") from exc
    if subtype == OBJECT_SEMANTICS and not instruction.objects:
        raise MalformedAnswerError("the LLM found no object in the instruction")
    if subtype == USER_PATTERN and not instruction.steps:
        raise MalformedAnswerError("the LLM found no step in the routine")
    return instruction


def _json_object(answer: str) -> dict[str, Any]:
    cleaned = strip_thinking(answer)
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError:
        start, end = cleaned.find("{"), cleaned.rfind("}")
        try:
            value = json.loads(cleaned[start : end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            value = None
    if not isinstance(value, dict):
        raise MalformedAnswerError(f"the LLM's answer is not a JSON object: {cleaned[:120]!r}")
    return value
