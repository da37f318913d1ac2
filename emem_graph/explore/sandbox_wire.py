"""What the Cypher sandbox's parent and child say over their pipes: one JSON document a
line, values tagged so that no JSON object is ever taken for anything but a tag (never pickle:
the parent trusts nothing the child sends), and errors as their emem_graph type's name and
message, turned back into that type (or StorageError) on the parent's side.

The child (explore/sandbox.py) imports this module with a bare ``emem_graph`` package: it
imports only the standard library and emem_graph.errors.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from typing import Any

from emem_graph import errors
from emem_graph.errors import EmemGraphError, StorageError


def encode_value(value: Any) -> Any:
    """A JSON-able form of one value Kuzu returned; every JSON object in it is a tag."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [encode_value(item) for item in value]
    if isinstance(value, dict):
        return {"map": [[str(key), encode_value(item)] for key, item in value.items()]}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"bytes": base64.b64encode(value).decode("ascii")}
    return {"text": str(value)}


def decode_value(value: Any) -> Any:
    """The value encode_value encoded.

    Raises:
        ValueError: not something encode_value writes.
    """
    if not isinstance(value, dict | list):
        return value
    if isinstance(value, list):
        return [decode_value(item) for item in value]
    ((tag, inner),) = value.items()
    if tag == "map":
        return {str(key): decode_value(item) for key, item in inner}
    if tag == "timedelta":
        days, seconds, micro = inner
        return dt.timedelta(days=days, seconds=seconds, microseconds=micro)
    readers: dict[str, Any] = {
        "datetime": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "time": dt.time.fromisoformat,
        "uuid": uuid.UUID,
        "decimal": decimal.Decimal,
        "bytes": base64.b64decode,
        "text": str,
    }
    return readers[tag](inner)


def error_document(exc: BaseException) -> dict[str, Any]:
    kind = type(exc).__name__ if isinstance(exc, EmemGraphError) else "StorageError"
    message = str(exc) if isinstance(exc, EmemGraphError) else f"{type(exc).__name__}: {exc}"
    return {"error": {"type": kind, "message": message}}


def error_from(document: dict[str, Any]) -> EmemGraphError:
    kind = getattr(errors, str(document.get("type")), None)
    message = str(document.get("message", "the sandboxed query failed"))
    if isinstance(kind, type) and issubclass(kind, EmemGraphError):
        return kind(message)
    return StorageError(message)


def send(out: Any, document: dict[str, Any]) -> None:
    out.write(json.dumps(document, ensure_ascii=False) + "\n")
    out.flush()
