"""The built wheel: it carries every module and Cypher file, and works installed on its own.

The wheel is built from a copy of the repository (so the build leaves no build/ or egg-info
behind in the checkout), installed non-editable into a temporary directory, and used from a
subprocess whose cwd is elsewhere, so nothing can be found in the source tree by accident.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv*",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".hypothesis",
    "*.db",
    "*.lance",
    "demo-memory",
    "bench-memory",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(wheel file, directory it was installed into with pip --target)."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    shutil.copytree(REPO, source, ignore=COPY_IGNORE)
    # setuptools from the environment when present: no index access needed to build.
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    _pip("wheel", str(source), "--no-deps", *isolation, "-w", str(work / "dist"))
    wheels = sorted((work / "dist").glob("emem_graph-*.whl"))
    assert len(wheels) == 1, wheels
    site = work / "site"
    _pip("install", "--no-deps", "--no-compile", "--target", str(site), str(wheels[0]))
    yield wheels[0], site


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"pip {args[0]} failed:\n{done.stdout}\n{done.stderr}"


def _wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_wheel_carries_the_cypher_resources(built: tuple[Path, Path]) -> None:
    names = _wheel_names(built[0])
    assert "emem_graph/_resources/schema/graph.cypher" in names
    for kind in ("schema", "queries"):
        shipped = sorted(p.name for p in (REPO / kind).glob("*.cypher"))
        assert shipped, f"no {kind}/*.cypher in the repository"
        for name in shipped:
            assert f"emem_graph/_resources/{kind}/{name}" in names, f"{kind}/{name} not shipped"


def test_wheel_carries_every_python_module(built: tuple[Path, Path]) -> None:
    names = _wheel_names(built[0])
    assert "ros_bridge/__init__.py" in names
    assert "emem_graph/py.typed" in names
    for package in ("emem_graph", "ros_bridge"):
        for module in sorted((REPO / package).rglob("*.py")):
            if "__pycache__" in module.parts:
                continue
            relative = module.relative_to(REPO).as_posix()
            assert relative in names, (
                f"{relative} is missing from the wheel: add its package to "
                "[tool.setuptools] packages in pyproject.toml"
            )


def test_wheel_declares_the_emem_graph_console_script(built: tuple[Path, Path]) -> None:
    wheel = built[0]
    with zipfile.ZipFile(wheel) as archive:
        entry_points = next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
        text = archive.read(entry_points).decode()
    assert "[console_scripts]" in text
    assert "emem-graph = emem_graph.cli:main" in text
    assert "emem_graph/cli/__init__.py" in _wheel_names(wheel)


INSTALLED_CHECK = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path

    site = Path(sys.argv[1]).resolve()
    memory_dir = Path(sys.argv[2])

    import emem_graph
    from emem_graph import HashingEmbedder, SpatioTemporalMemory
    from emem_graph.cli import main
    from emem_graph.resources import read_cypher, resource_dir

    result = {
        "package": str(Path(emem_graph.__file__).resolve()),
        "schema_dir": str(resource_dir("schema").resolve()),
        "queries_dir": str(resource_dir("queries").resolve()),
        "schema_text": read_cypher("schema", "graph"),
        "cli_main_callable": callable(main),
    }
    with SpatioTemporalMemory(str(memory_dir), embedding_provider=HashingEmbedder(384)) as mem:
        first = mem.add("a red chair next to the kitchen table", 1.0, 2.0)
        second = mem.add("the charging dock by the door", 8.0, -3.0)
        result["flushed"] = mem.flush()
        result["read_back"] = mem.store.get_observation(first).text
        query = mem.embed(["red chair kitchen"])[0]
        result["nearest"] = [record.text for _, record in mem.store.nearest(query, 1)]
    with SpatioTemporalMemory(str(memory_dir), embedding_provider=HashingEmbedder(384)) as mem:
        result["reopened"] = mem.store.get_observation(second).text
    print(json.dumps(result))
    """
)


def test_installed_wheel_works_without_the_source_tree(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    site = built[1].resolve()
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(site)  # ahead of the editable install of the checkout
    env.setdefault("HF_HUB_OFFLINE", "1")
    done = subprocess.run(
        [sys.executable, "-c", INSTALLED_CHECK, str(site), str(tmp_path / "memory")],
        cwd=run_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])

    for key in ("package", "schema_dir", "queries_dir"):
        assert Path(result[key]).is_relative_to(site), f"{key} not from the wheel: {result[key]}"
    assert Path(result["schema_dir"]) == site / "emem_graph" / "_resources" / "schema"
    assert Path(result["queries_dir"]) == site / "emem_graph" / "_resources" / "queries"
    assert result["schema_text"] == (REPO / "schema" / "graph.cypher").read_text(encoding="utf-8")
    assert result["cli_main_callable"] is True
    assert result["flushed"] == 2
    assert result["read_back"] == "a red chair next to the kitchen table"
    assert result["nearest"] == ["a red chair next to the kitchen table"]
    assert result["reopened"] == "the charging dock by the door"
