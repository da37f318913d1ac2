"""What callers give the user profile's API, checked before anything is parsed, embedded or
written: a refusal is one InvalidInputError line naming the argument, and writes nothing.

Free text (aliases, descriptions, object and place names, steps, instructions, user names) is
bounded by the memory's ``max_text_chars``, as observation text is.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from emem_graph import validation
from emem_graph.errors import InvalidInputError
from emem_graph.profile import parse
from emem_graph.profile.models import Instruction, LocationSpec, ObjectSpec, StepSpec

_Model = TypeVar("_Model", bound=BaseModel)

_NOT_LISTS = (str, bytes, bytearray, memoryview)
"""Sequences that would be taken item by item (letters, bytes) where a list is meant."""


def items(label: str, value: Any, example: str) -> list[Any]:
    """``value``, a list, tuple or other sequence, as a list.

    A str or bytes would be iterated letter by letter ("cup" as 'c', 'u', 'p') and a dict key
    by key, so they are refused, as is anything that is not a sequence.

    Args:
        label: how the message names the argument ("add_object_semantics: objects").
        value: what the caller gave.
        example: a list the message shows as the right form ("['yellow cup']").

    Raises:
        InvalidInputError: ``value`` is a str, bytes, a dict, a set, None, a number...
    """
    if isinstance(value, _NOT_LISTS) or not isinstance(value, Sequence):
        raise InvalidInputError(
            f"{label} must be a list, got {type(value).__name__}; one item goes in a list "
            f"too: {example}"
        )
    return list(value)


def object_specs(what: str, value: Any, max_chars: int) -> list[ObjectSpec]:
    """The objects given to ``what``: each a name, an ObjectSpec or a dict (ObjectSpec fields).

    Raises:
        InvalidInputError: not a list (see items), or an item of another type, empty, with
            NUL characters or a lone surrogate, or a name over ``max_chars`` characters.
    """
    specs: list[ObjectSpec] = []
    for i, item in enumerate(items(f"{what}: objects", value, "['yellow cup']")):
        where = f"{what}: objects[{i}]"
        if isinstance(item, str):
            item = validation.text(where, item, max_chars)
        elif not isinstance(item, ObjectSpec | dict):
            raise InvalidInputError(
                f"{where} must be a name, an ObjectSpec or a dict, got {type(item).__name__}"
            )
        specs.append(_validated(where, ObjectSpec, item))
    return specs


def step_specs(what: str, value: Any, max_chars: int) -> list[StepSpec]:
    """The steps given to ``what``, in order: each a phrase ("move the candle to the table";
    "to the couch" repeats the previous action and object), a StepSpec or a dict.

    Raises:
        InvalidInputError: not a list (see items), an item of another type, empty, over
            ``max_chars`` characters, or a phrase that is not a step.
    """
    steps: list[StepSpec] = []
    for i, item in enumerate(items(f"{what}: steps", value, "['move the candle to the table']")):
        where = f"{what}: steps[{i}]"
        if isinstance(item, str):
            phrase = validation.text(where, item, max_chars)
            found = parse.parse_step(phrase, steps[-1] if steps else None)
            if found is None:
                raise InvalidInputError(
                    f"{what}: {phrase[:80]!r} is not a step (start it with a verb: "
                    "'move the candle to the table')"
                )
            steps.append(found)
        elif isinstance(item, StepSpec | dict):
            steps.append(_validated(where, StepSpec, item))
        else:
            raise InvalidInputError(
                f"{where} must be a phrase, a StepSpec or a dict, got {type(item).__name__}"
            )
    return steps


def check_lengths(what: str, instruction: Instruction, max_chars: int) -> None:
    """Refuse an instruction holding a text (alias, description, name, attribute, action,
    place expression) longer than ``max_chars`` characters: a dict or a spec built by the
    caller was not measured on its way in.

    Raises:
        InvalidInputError: naming the first text over the limit.
    """
    for label, text in _texts(instruction):
        if len(text) > max_chars:
            raise InvalidInputError(
                f"{what}: {label} has {len(text)} characters; the limit is {max_chars} "
                "(max_text_chars)"
            )


def count(label: str, value: Any) -> int:
    """A whole number of at least 1 (a bool or a float, even 2.0 or NaN, is refused).

    Raises:
        InvalidInputError: not a whole number, or below 1.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidInputError(f"{label} must be a whole number, got {type(value).__name__}")
    if value < 1:
        raise InvalidInputError(f"{label} must be at least 1, got {value}")
    return int(value)


def flag(label: str, value: Any) -> bool:
    """``value`` when it is a bool.

    Raises:
        InvalidInputError: anything else (a string "false" would read as true).
    """
    if not isinstance(value, bool):
        raise InvalidInputError(f"{label} must be True or False, got {type(value).__name__}")
    return value


def ids(label: str, value: Any) -> set[str] | None:
    """A collection of node ids (strings) as a set; None passes through.

    Raises:
        InvalidInputError: a str (it would be searched letter by letter), a dict, a
            non-collection, or an id that is not a string.
    """
    if value is None:
        return None
    if isinstance(value, (*_NOT_LISTS, Mapping)) or not isinstance(value, Collection):
        raise InvalidInputError(
            f"{label} must be a set of ids, got {type(value).__name__}; one id goes in a set "
            "too: {'3f2a...'}"
        )
    for item in value:
        if not isinstance(item, str):
            raise InvalidInputError(f"{label} must hold ids (strings), got a {type(item).__name__}")
    return set(value)


def _validated(where: str, model: type[_Model], item: Any) -> _Model:
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        raise InvalidInputError(f"{where}: {first_error(exc)}") from None


def first_error(exc: ValidationError) -> str:
    """The first problem pydantic found, in one line: where, and what."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "value"
    return f"{where}: {error['msg']}"


def _texts(instruction: Instruction) -> Iterator[tuple[str, str]]:
    yield "alias", instruction.alias
    yield "description", instruction.description
    for i, spec in enumerate(instruction.objects):
        yield from _spec_texts(f"objects[{i}]", spec)
    for i, step in enumerate(instruction.steps):
        yield f"steps[{i}].action", step.action
        for j, argument in enumerate(step.arguments):
            yield from _spec_texts(f"steps[{i}].arguments[{j}]", argument.spec)


def _spec_texts(label: str, spec: ObjectSpec | LocationSpec) -> Iterator[tuple[str, str]]:
    yield f"{label}.name", spec.name
    if isinstance(spec, ObjectSpec):
        for k, attribute in enumerate(spec.attributes):
            yield f"{label}.attributes[{k}]", attribute
    elif spec.expression is not None:
        yield f"{label}.expression", spec.expression
