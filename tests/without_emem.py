"""A Python child that sees no installed eMEM, as in an environment where eMEM is not installed.

alias_emem() refuses to hide a real eMEM (EmemAliasError), so code that calls it plainly, as
docs/embodied-agents.md and eMEM's own tests run through the alias do, only runs where no eMEM
is installed. The development venv may hold eMEM 0.3.0 (for the benchmarks); CI's venv does
not. ``prelude()`` is Python source that a child runs first: it replaces every import path
entry that holds eMEM (its package or its distribution) with a view of that entry without them
(a folder of links to everything else), so the child is what it would be without eMEM. Where
no eMEM is installed the prelude is empty. The alias's check is untouched: the child checks
that no eMEM is left to hide, and alias_emem() in it still refuses one that is.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

_EMEM_NAMES = ("emem", "emem.py")
_views: dict[str, str] | None = None


def _is_emem(name: str) -> bool:
    if name in _EMEM_NAMES:
        return True
    return name.startswith("emem-") and name.endswith((".dist-info", ".egg-info"))


def _holds_emem(entry: Path) -> bool:
    if (entry / "emem" / "__init__.py").is_file() or (entry / "emem.py").is_file():
        return True
    return any(entry.glob("emem-*.dist-info")) or any(entry.glob("emem-*.egg-info"))


def views() -> dict[str, str]:
    """Import path entry holding eMEM -> a folder with links to all of it but eMEM (built
    once a process, removed at exit). Empty when no eMEM is installed."""
    global _views
    if _views is None:
        _views = {}
        entries = [e for e in sys.path if e and Path(e).is_dir() and _holds_emem(Path(e))]
        if entries:
            root = Path(tempfile.mkdtemp(prefix="without-emem-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            for i, entry in enumerate(entries):
                view = root / str(i)
                view.mkdir()
                for item in Path(entry).iterdir():
                    if not _is_emem(item.name):
                        (view / item.name).symlink_to(item)
                _views[entry] = str(view)
    return _views


def prelude() -> str:
    """Python source a child runs before anything else: no installed eMEM is importable or
    found as a distribution after it ("" where none is installed)."""
    mapping = views()
    if not mapping:
        return ""
    return (
        "import importlib, importlib.metadata, importlib.util, sys\n"
        f"sys.path[:] = [{mapping!r}.get(entry, entry) for entry in sys.path]\n"
        "importlib.invalidate_caches()\n"
        'assert importlib.util.find_spec("emem") is None, "an installed eMEM is still found"\n'
        'assert not list(importlib.metadata.distributions(name="emem")), "eMEM is installed"\n'
    )
