"""The ``.srv`` files of the emem_interfaces package, parsed without ROS.

The service dispatcher, the tests that keep the files in step with the tool schemas, and tests
that need a request filled with the files' defaults (as rclpy fills a new request) read them
here. Only the subset of the rosidl syntax the package uses is understood: one field per line
(``type name [default]``), ``#`` comments, ``---`` between request and response, unbounded
arrays (``string[]``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent / "interfaces" / "emem_interfaces"
"""The emem_interfaces package (package.xml, CMakeLists.txt, srv/)."""
SRV_DIR = PACKAGE_DIR / "srv"

_SCALARS: dict[str, Any] = {
    "bool": False,
    "string": "",
    "float32": 0.0,
    "float64": 0.0,
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint8": 0,
    "uint16": 0,
    "uint32": 0,
    "uint64": 0,
}


class SrvSyntaxError(ValueError):
    """A ``.srv`` file line this parser (and rosidl) cannot read."""


@dataclass(frozen=True)
class SrvField:
    """One field of a request or response.

    Attributes:
        type: the rosidl type as written (``string``, ``uint32``, ``string[]``...).
        name: the field name.
        default: the default written in the file, parsed (None: the type's zero value).
        comment: the text after ``#`` on the field's line.
    """

    type: str
    name: str
    default: Any = None
    comment: str = ""

    @property
    def is_array(self) -> bool:
        """An unbounded array (``type[]``)."""
        return self.type.endswith("[]")

    @property
    def base_type(self) -> str:
        """The element type (``string`` for ``string[]``)."""
        return self.type.removesuffix("[]")

    @property
    def value(self) -> Any:
        """What a new message holds in this field: the default, or the type's zero value."""
        if self.is_array:
            return list(self.default) if self.default is not None else []
        return self.default if self.default is not None else _SCALARS[self.type]


@dataclass(frozen=True)
class SrvDefinition:
    """A service: its type name (the file name) and its request and response fields."""

    name: str
    request: tuple[SrvField, ...]
    response: tuple[SrvField, ...]

    def request_field(self, name: str) -> SrvField:
        """The request field ``name``.

        Raises:
            KeyError: no such field.
        """
        for field in self.request:
            if field.name == name:
                return field
        raise KeyError(f"{self.name} request has no field {name!r}")


def parse_srv(text: str, name: str = "srv") -> SrvDefinition:
    """Parse the text of a ``.srv`` file.

    Raises:
        SrvSyntaxError: no ``---`` separator, an unknown type, a bad name or default; the
            message names the service and the line.
    """
    parts: list[list[SrvField]] = [[]]
    for number, raw in enumerate(text.splitlines(), 1):
        code, comment = _split_comment(raw)
        if not code.strip():
            continue
        if code.strip() == "---":
            if len(parts) == 2:
                raise SrvSyntaxError(f"{name}.srv line {number}: a second '---'")
            parts.append([])
            continue
        try:
            parts[-1].append(_parse_field(code, comment))
        except SrvSyntaxError as exc:
            raise SrvSyntaxError(f"{name}.srv line {number}: {exc}") from None
    if len(parts) != 2:
        raise SrvSyntaxError(f"{name}.srv has no '---' between request and response")
    for part in parts:
        names = [field.name for field in part]
        doubled = {n for n in names if names.count(n) > 1}
        if doubled:
            raise SrvSyntaxError(f"{name}.srv: field(s) {sorted(doubled)} defined twice")
    return SrvDefinition(name, tuple(parts[0]), tuple(parts[1]))


@functools.cache
def srv_definition(name: str) -> SrvDefinition:
    """The parsed ``srv/<name>.srv`` of emem_interfaces (``SemanticSearch``...).

    Raises:
        KeyError: no such service file.
    """
    path = SRV_DIR / f"{name}.srv"
    if not path.is_file():
        known = ", ".join(srv_names())
        raise KeyError(f"no service {name!r} in emem_interfaces (known: {known})")
    return parse_srv(path.read_text(encoding="utf-8"), name)


def srv_names() -> list[str]:
    """The service type names of emem_interfaces, sorted."""
    return sorted(path.stem for path in SRV_DIR.glob("*.srv"))


def default_request(name: str, /, **values: Any) -> SimpleNamespace:
    """A request of service ``name`` as a new rclpy request holds it (every field at its
    default or zero value), with ``values`` set on top.

    Raises:
        KeyError: no such service, or a value for a field the request does not have.
    """
    return _message(srv_definition(name).request, name, values)


def default_response(name: str, /, **values: Any) -> SimpleNamespace:
    """A response of service ``name`` at its defaults, with ``values`` set on top."""
    return _message(srv_definition(name).response, name, values)


def _message(fields: tuple[SrvField, ...], name: str, values: dict[str, Any]) -> SimpleNamespace:
    message = {field.name: field.value for field in fields}
    unknown = sorted(set(values) - set(message))
    if unknown:
        raise KeyError(f"{name} has no field(s) {unknown} (fields: {sorted(message)})")
    message.update(values)
    return SimpleNamespace(**message)


def _split_comment(line: str) -> tuple[str, str]:
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[:index], line[index + 1 :].strip()
    return line, ""


def _parse_field(code: str, comment: str) -> SrvField:
    words = code.split(None, 2)
    if len(words) < 2:
        raise SrvSyntaxError(f"expected 'type name [default]', got {code.strip()!r}")
    kind, name = words[0], words[1]
    if "=" in name or (len(words) > 2 and words[2].startswith("=")):
        raise SrvSyntaxError(f"constants are not used in emem_interfaces: {code.strip()!r}")
    base = kind.removesuffix("[]")
    if base not in _SCALARS:
        raise SrvSyntaxError(f"unknown type {kind!r}")
    if not (name[:1].isalpha() and name.islower() and name.replace("_", "").isalnum()):
        raise SrvSyntaxError(f"bad field name {name!r} (lower case letters, digits, '_')")
    default = None
    if len(words) > 2:
        default = _parse_default(kind, words[2].strip())
    return SrvField(kind, name, default, comment)


def _parse_default(kind: str, text: str) -> Any:
    if kind.endswith("[]"):
        try:
            values = json.loads(text)
        except json.JSONDecodeError:
            raise SrvSyntaxError(f"bad array default {text!r}") from None
        if not isinstance(values, list):
            raise SrvSyntaxError(f"bad array default {text!r}")
        return [_parse_default(kind.removesuffix("[]"), json.dumps(v)) for v in values]
    if kind == "string":
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            return text[1:-1]
        raise SrvSyntaxError(f"a string default must be quoted, got {text}")
    if kind == "bool":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise SrvSyntaxError(f"a bool default is true or false, got {text}")
    try:
        return float(text) if kind.startswith("float") else int(text)
    except ValueError:
        raise SrvSyntaxError(f"bad {kind} default {text!r}") from None
