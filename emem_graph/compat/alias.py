"""alias_emem(): ``import emem`` answered by emem_graph, through a meta path finder.

The finder serves the modules of emem_api.EMEM_MODULES with proper module specs, so
``importlib.util.find_spec("emem")`` (EmbodiedAgents checks it before anything else) finds them
and ``import emem.config`` works as with the real package. Nothing happens at import of
emem_graph: the alias is one explicit call, and it refuses to hide a real eMEM install unless
told to.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import threading
import warnings
from collections.abc import Sequence
from types import ModuleType

from emem_graph.compat.emem_api import EMEM_MODULES
from emem_graph.errors import EmemGraphError

ORIGIN = "emem_graph.compat"
"""The ``origin`` of every aliased module's spec (where ``emem`` really comes from)."""


class EmemAliasError(EmemGraphError):
    """``import emem`` cannot be pointed at emem_graph (a real eMEM is installed or imported)."""


class EmemAliasWarning(UserWarning):
    """alias_emem(shadow_installed=True) hid a real eMEM install."""


class _EmemLoader(importlib.abc.Loader):
    """Fills an aliased eMEM module with its names from EMEM_MODULES."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        names = EMEM_MODULES[module.__name__]
        module.__dict__.update(names)
        module.__all__ = list(names)  # type: ignore[attr-defined]
        if module.__name__ == "emem":
            # eMEM's package imports its submodules, so ``import emem; emem.config`` works.
            for name in EMEM_MODULES:
                if name != "emem":
                    importlib.import_module(name)


class _EmemFinder(importlib.abc.MetaPathFinder):
    """Finds ``emem`` and the eMEM submodules emem_graph answers; nothing else."""

    def __init__(self) -> None:
        self.loader = _EmemLoader()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in EMEM_MODULES:
            # Other emem.* names (eMEM's internals) fall through and are not found: the
            # aliased package's __path__ is empty.
            return None
        return importlib.util.spec_from_loader(
            fullname, self.loader, origin=ORIGIN, is_package=fullname == "emem"
        )


_finder: _EmemFinder | None = None
_lock = threading.Lock()


def alias_emem(*, shadow_installed: bool = False) -> None:
    """Make ``import emem`` (and emem.config, emem.tools, emem.embeddings, emem.consolidation,
    emem.memory, emem.types) resolve to emem_graph, so code written for eMEM runs unchanged on
    it. Call it once, before that code imports emem (a launch file's first line). Calling it
    again does nothing.

    Args:
        shadow_installed: hide a real eMEM that is installed (or already imported) instead of
            refusing; an EmemAliasWarning names it.

    Raises:
        EmemAliasError: a real ``emem`` is importable or imported, and shadow_installed is
            False.
    """
    global _finder
    with _lock:
        if _finder is not None and _finder in sys.meta_path:
            return
        real = _real_emem()
        if real is not None:
            if not shadow_installed:
                raise EmemAliasError(
                    f"a real eMEM is installed ({real}); alias_emem() would hide it: uninstall "
                    "it (pip uninstall emem) or call alias_emem(shadow_installed=True)"
                )
            warnings.warn(
                f"alias_emem(): emem_graph now answers 'import emem'; the eMEM at {real} is hidden",
                EmemAliasWarning,
                stacklevel=2,
            )
            for name in [n for n in sys.modules if n == "emem" or n.startswith("emem.")]:
                del sys.modules[name]
        _finder = _EmemFinder()
        sys.meta_path.insert(0, _finder)
        importlib.invalidate_caches()


def unalias_emem() -> None:
    """Undo alias_emem(): remove the finder and the aliased modules (a real eMEM, if installed,
    is importable again). Does nothing when no alias is active."""
    global _finder
    with _lock:
        if _finder is None:
            return
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        for name in [n for n in sys.modules if n == "emem" or n.startswith("emem.")]:
            if _is_alias(sys.modules[name]):
                del sys.modules[name]
        _finder = None
        importlib.invalidate_caches()


def is_aliased() -> bool:
    """Whether alias_emem() is in effect."""
    return _finder is not None and _finder in sys.meta_path


def _real_emem() -> str | None:
    """Where a real ``emem`` comes from (its file or search path), or None when there is none:
    an imported module that is not the alias, or one the import system would find."""
    module = sys.modules.get("emem")
    if module is not None:
        return None if _is_alias(module) else str(getattr(module, "__file__", None) or module)
    try:
        spec = importlib.util.find_spec("emem")
    except (ImportError, ValueError) as exc:
        return f"an 'emem' that fails to import ({exc})"
    if spec is None:
        return None
    if spec.origin not in (None, "namespace"):
        return spec.origin  # a module file: emem.py, or a package's __init__.py
    # A folder named emem without a module file is a namespace package, not eMEM: for
    # example a memory opened with db_path="emem" beside a launch file. An eMEM installed
    # without a module file still has its distribution.
    return _installed_distribution()


def _installed_distribution() -> str | None:
    """Where the installed ``emem`` distribution lies, or None when none is installed."""
    try:
        distribution = importlib.metadata.distribution("emem")
    except importlib.metadata.PackageNotFoundError:
        return None
    return f"the emem {distribution.version} distribution at {distribution.locate_file('')}"


def _is_alias(module: ModuleType) -> bool:
    spec = getattr(module, "__spec__", None)
    return spec is not None and spec.origin == ORIGIN
