"""The graph schema as written in schema/graph.cypher: its version, the older versions it
upgrades, the tables it creates and its statements. GraphDB.ensure_schema (storage/graph.py)
runs them on a database."""

from __future__ import annotations

import re

from emem_graph.errors import StorageError
from emem_graph.resources import read_cypher

SCHEMA_NAME = "graph"

_VERSION_RE = re.compile(r"^//\s*schema_version:\s*(\d+)\s*$", re.MULTILINE)


def schema_version() -> int:
    """The schema version declared in the header of schema/graph.cypher."""
    match = _VERSION_RE.search(read_cypher("schema", SCHEMA_NAME))
    if match is None:
        raise StorageError("schema/graph.cypher has no '// schema_version: N' header")
    return int(match.group(1))


_UPGRADES_RE = re.compile(r"^//\s*upgrades_from:\s*([\d, ]+)\s*$", re.MULTILINE)


def upgradable_versions() -> set[str]:
    """Older schema versions this schema only adds tables to (``// upgrades_from: 1, 2``):
    a memory of one of them is upgraded on open by creating the missing tables."""
    match = _UPGRADES_RE.search(read_cypher("schema", SCHEMA_NAME))
    if match is None:
        return set()
    return {part.strip() for part in match.group(1).split(",") if part.strip()}


_TABLE_RE = re.compile(r"CREATE\s+(?:NODE|REL)\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.I)


def schema_tables() -> set[str]:
    """The names of the tables schema/graph.cypher creates."""
    return {m.group(1) for s in _schema_statements() if (m := _TABLE_RE.match(s))}


def schema_statements() -> list[str]:
    """The statements of schema/graph.cypher (each creates a table IF NOT EXISTS)."""
    return _schema_statements()


def _schema_statements() -> list[str]:
    lines = [
        line
        for line in read_cypher("schema", SCHEMA_NAME).splitlines()
        if not line.lstrip().startswith("//")
    ]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
