"""What the user profile holds and returns: the specs an add takes, the nodes it reads back,
and the results of an update and of a search.

Specs (ObjectSpec, LocationSpec, StepSpec) validate what callers give the structured API; the
same specs are what the rule-based parser and the LLM extraction produce, so every way in ends in
one add/update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

OBJECT_SEMANTICS = "object_semantics"
USER_PATTERN = "user_pattern"
Subtype = Literal["object_semantics", "user_pattern"]
Granularity = Literal["instance", "category"]


def _clean(value: Any) -> str:
    text = " ".join(_storable(value).split())
    if not text:
        raise ValueError("must not be empty")
    return text


def _storable(value: Any) -> str:
    """Text the graph can always store and give back (the memory's door: no NUL, nothing
    UTF-8 cannot encode, such as a lone surrogate), as a plain str."""
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        return str.encode(value, "utf-8").decode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"holds a lone surrogate at position {exc.start}, which UTF-8 cannot store"
        ) from None


class _NamedSpec(BaseModel):
    """A thing of the user's world by name; a plain string is accepted as the name."""

    model_config = ConfigDict(extra="forbid")

    name: str

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("name")
    @classmethod
    def _name(cls, value: Any) -> str:
        return _clean(value)


class ObjectSpec(_NamedSpec):
    """An object of the user's world: "the yellow cup with the wooden handle" (an instance) or
    "blue plates" (a category). A plain string is accepted as the name."""

    attributes: list[str] = Field(default_factory=list)
    granularity: Granularity = "instance"

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, value: list[str]) -> list[str]:
        return [_clean(v) for v in value if isinstance(v, str) and v.strip()]

    @property
    def text(self) -> str:
        """The phrase embedded and compared: the name, then attributes it does not mention."""
        extra = [a for a in self.attributes if a.lower() not in self.name.lower()]
        return self.name if not extra else f"{self.name}, {', '.join(extra)}"


class LocationSpec(_NamedSpec):
    """A place of the user's world: name ("kitchen counter") and the expression that said it
    ("on the kitchen counter"). A plain string is accepted as the name."""

    expression: str | None = None

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: Any) -> str | None:
        return None if value is None else _storable(value)

    @property
    def text(self) -> str:
        """The phrase embedded and compared: the place's name."""
        return self.name


class Argument(BaseModel):
    """One argument of a step, in order: an object or a location."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["object", "location"]
    spec: ObjectSpec | LocationSpec


_PUT_ACTIONS = frozenset(["put", "place", "set", "lay", "leave", "hang", "stack"])
"""Actions whose place, given without its own expression, reads "on the X" rather than "to"."""


class StepSpec(BaseModel):
    """One step of a routine: an action ("move") and its ordered arguments.

    Accepts ``{"action": "move", "object": "candle", "location": "table"}`` (``objects`` and
    ``locations`` lists too; objects come first), or explicit ``arguments``:
    ``[{"kind": "object", "spec": "candle"}, {"kind": "location", "spec": "table"}]``.
    """

    model_config = ConfigDict(extra="forbid")

    action: str
    arguments: list[Argument] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _from_fields(cls, value: Any) -> Any:
        if not isinstance(value, dict) or "arguments" in value:
            return value
        fields = dict(value)
        objects = _listed(fields.pop("objects", None)) + _listed(fields.pop("object", None))
        locations = _listed(fields.pop("locations", None)) + _listed(fields.pop("location", None))
        fields["arguments"] = [
            {"kind": "object", "spec": ObjectSpec.model_validate(o)} for o in objects
        ]
        fields["arguments"] += [
            {"kind": "location", "spec": LocationSpec.model_validate(p)} for p in locations
        ]
        return fields

    @field_validator("action")
    @classmethod
    def _action(cls, value: Any) -> str:
        return _clean(value).lower()

    @property
    def text(self) -> str:
        """The step as a short phrase: "move candle to table", "place teapot and cup on tray"."""
        parts = [self.action]
        previous = ""
        for argument in self.arguments:
            if argument.kind == "object":
                if previous == "object":
                    parts.append("and")
                parts.append(argument.spec.name)
            else:
                location = argument.spec
                assert isinstance(location, LocationSpec)
                preposition = "on" if self.action in _PUT_ACTIONS else "to"
                parts.append(location.expression or f"{preposition} {location.name}")
            previous = argument.kind
        return " ".join(parts)


def _listed(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


class Instruction(BaseModel):
    """What an instruction says, as extracted (by the LLM or the rules): one piece of knowledge."""

    model_config = ConfigDict(extra="ignore")

    subtype: Subtype
    alias: str
    description: str = ""
    objects: list[ObjectSpec] = Field(default_factory=list)
    steps: list[StepSpec] = Field(default_factory=list)

    @field_validator("alias")
    @classmethod
    def _alias(cls, value: Any) -> str:
        return _clean(value)

    @field_validator("description")
    @classmethod
    def _description(cls, value: Any) -> str:
        return _storable(value)


# --- nodes as read back from the graph -----------------------------------------------------------


@dataclass
class GroundedEntity:
    """A world entity a profile object is GROUNDED_AS, with its current position."""

    entity_id: str
    name: str
    entity_type: str | None
    x: float
    y: float
    z: float
    similarity: float


@dataclass
class ObjectNode:
    """A ProfileObject node."""

    id: str
    user_id: str
    name: str
    attributes: list[str]
    granularity: str
    vector: np.ndarray
    groundings: list[GroundedEntity] = field(default_factory=list)

    @property
    def text(self) -> str:
        return ObjectSpec(name=self.name, attributes=self.attributes).text


@dataclass
class LocationNode:
    """A ProfileLocation node."""

    id: str
    user_id: str
    name: str
    expression: str
    vector: np.ndarray

    @property
    def text(self) -> str:
        return self.name


@dataclass
class PatternNode:
    """A Pattern node: one step of a routine, with its arguments (kind, node id) in order."""

    id: str
    knowledge_id: str
    step: int
    action: str
    text: str
    arguments: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class KnowledgeNode:
    """A Knowledge node with its patterns in BEFORE order and its COMPOSED_OF objects."""

    id: str
    user_id: str
    subtype: str
    alias: str
    description: str
    content: str
    created_at: float
    updated_at: float
    alias_vector: np.ndarray
    content_vector: np.ndarray
    patterns: list[PatternNode] = field(default_factory=list)
    object_ids: list[str] = field(default_factory=list)


# --- results -------------------------------------------------------------------------------------


@dataclass
class ProfileUpdate:
    """What an add or update did.

    Attributes:
        knowledge_id: the knowledge node written.
        action: "added" (a new knowledge node) or "updated" (the existing one, same id).
        subtype: object_semantics or user_pattern.
        alias: the alias as stored.
        reused: names of existing object/location nodes reused (paraphrase or same phrase),
            as (phrase given, node name) pairs.
        created: names of the object/location nodes created.
        source: "api", "llm" or "rules" (how the instruction was understood).
    """

    knowledge_id: str
    action: Literal["added", "updated"]
    subtype: str
    alias: str
    reused: list[tuple[str, str]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    source: str = "api"


@dataclass
class ProfileHit:
    """A knowledge node found for a request, with its score and its description."""

    knowledge: KnowledgeNode
    user_name: str
    score: float
    description: str
