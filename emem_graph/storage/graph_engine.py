"""Which graph engine a memory runs on: the engines' names, the default, the environment
variable that overrides it, and which engine wrote a database file.

Nothing here loads an engine: storage/graph.py is the only module that imports one
(load_engine), by the name chosen here."""

from __future__ import annotations

import os
from pathlib import Path

from emem_graph.errors import ConfigError, GraphEngineMismatchError

ENGINES = ("kuzu", "ladybug")
"""The graph engines a memory runs on, by module name."""
DEFAULT_ENGINE = "ladybug"
"""The engine of a memory whose configuration and environment name none: LadybugDB, chosen by
the measured table in docs/graph-engine.md (the whole suite passes on it, it lost nothing in
the crash matrix, and it is maintained; Kuzu is archived). Memories written by Kuzu open with
graph_engine="kuzu" / EMEM_GRAPH_ENGINE=kuzu, or are copied with ``emem-graph migrate``."""
ENGINE_ENV = "EMEM_GRAPH_ENGINE"
"""The environment variable naming the engine when the configuration names none."""
_MAGIC = {b"KUZU": "kuzu", b"LBUG": "ladybug"}
"""The first bytes of each engine's database file (their formats differ both ways)."""


def resolve_engine(configured: str | None = None) -> str:
    """The graph engine to use: the configured one, else EMEM_GRAPH_ENGINE, else the default
    (DEFAULT_ENGINE: ladybug).

    Raises:
        ConfigError: the name is not one of ENGINES.
    """
    name = configured or os.environ.get(ENGINE_ENV, "").strip() or DEFAULT_ENGINE
    if name not in ENGINES:
        source = "graph_engine" if configured else ENGINE_ENV
        raise ConfigError(f"{source}={name!r} is not a graph engine; use one of {ENGINES}")
    return name


def file_engine(path: Path) -> str | None:
    """Which engine wrote the database file ``path`` (None: absent, empty or unknown)."""
    try:
        with open(path, "rb") as file:
            return _MAGIC.get(file.read(4))
    except OSError:
        return None


def refuse_other_engine(path: Path, engine: str) -> None:
    """Refuse a database file written by another engine than ``engine``.

    Raises:
        GraphEngineMismatchError: it was (the formats are incompatible both ways).
    """
    written = file_engine(path)
    if written is not None and written != engine:
        memory = path.parent
        raise GraphEngineMismatchError(
            f"the memory {memory} was written by graph engine {written}, this process runs "
            f"{engine}: set graph_engine={written!r} (or {ENGINE_ENV}={written}), or copy it "
            f"with: emem-graph migrate {memory} NEW_DIR --engine {engine}"
        )
