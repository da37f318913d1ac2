"""Find schema/ and queries/ at run time: in the wheel (emem_graph/_resources) or the repo."""

from __future__ import annotations

import functools
from pathlib import Path

from emem_graph.errors import StorageError

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Return the directory holding the ``schema`` or ``queries`` files.

    An installed wheel carries them as ``emem_graph/_resources/<name>``; a source checkout
    (editable install, or the tests run from the repository) has them at the top level.

    Raises:
        StorageError: neither location exists (a broken install).
    """
    for candidate in (_PACKAGE_DIR / "_resources" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir() and any(candidate.glob("*.cypher")):
            return candidate
    raise StorageError(f"cannot find the {name}/ directory of emem_graph (broken install?)")


@functools.cache
def read_cypher(kind: str, name: str) -> str:
    """Return the text of ``<kind>/<name>.cypher``, e.g. ``read_cypher("queries", "recall")``.

    Raises:
        KeyError: no such file.
    """
    path = resource_dir(kind) / f"{name}.cypher"
    if not path.is_file():
        raise KeyError(f"no {kind} file named {name!r} in {path.parent}")
    return path.read_text(encoding="utf-8")
