"""The code's layers (README "Development"): the import-linter contracts in pyproject.toml hold,
and no module inside the packages takes a name from the package root (``from emem_graph import
SpatioTemporalMemory`` inside emem_graph would import the facade and everything under it from
wherever it stands; import-linter sees only ``emem_graph``, which is in no layer)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    run = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "2 kept, 0 broken" in run.stdout


def test_no_module_takes_names_from_the_package_root() -> None:
    offenders = []
    for package in ("emem_graph", "ros_bridge"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / package / "__init__.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "emem_graph":
                    for alias in node.names:
                        if importlib.util.find_spec(f"emem_graph.{alias.name}") is None:
                            offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
    assert offenders == []
