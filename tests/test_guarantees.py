"""Every promise in the Guarantees section of docs/reliability-and-security.md names tests that
exist and that the default run (``bash .ci/run``) executes: a renamed or removed test would
otherwise leave a promise proven by nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reliability-and-security.md"

# `tests/x.py::name`, `R/x.py::name` (R/ is tests/reliability/), `::name` (the file named last),
# `tests/x.py` (a whole suite); a parametrized id in brackets may follow a name.
_NAMED = re.compile(r"`((?:tests|R)/[\w/]+\.py)?(?:::(\w+)(?:\[[^\]`]*\])?)?`")


def _section() -> str:
    text = PAGE.read_text()
    start = text.index("## Guarantees")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _promises() -> list[tuple[str, list[tuple[str, str | None]]]]:
    """(the promise's bold title, [(test file, test name or None for the whole file)])."""
    promises = []
    for block in re.split(r"\n- ", _section())[1:]:
        title = re.match(r"\*\*(.+?)\*\*", block)
        if "→" not in block:
            continue
        named: list[tuple[str, str | None]] = []
        current = None
        for match in _NAMED.finditer(block.split("→", 1)[1]):
            path, name = match.group(1), match.group(2)
            if path:
                current = path.replace("R/", "tests/reliability/", 1)
            if current is None or (not path and not name):
                continue
            named.append((current, name))
        promises.append((title.group(1) if title else block[:60], named))
    return promises


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    }


def test_every_promise_names_a_test_that_exists() -> None:
    promises = _promises()
    assert len(promises) >= 20, "the Guarantees section was not read"
    problems = []
    for title, named in promises:
        if not named:
            problems.append(f"{title}: names no test")
        for file, name in named:
            path = ROOT / file
            if not path.is_file():
                problems.append(f"{title}: {file} does not exist")
            elif name is not None and name not in _test_names(path):
                problems.append(f"{title}: {file} has no test {name}")
    assert not problems, "\n".join(problems)


def test_the_default_run_collects_every_named_file() -> None:
    """.ci/run's default run: every file under tests/ (tests/ros in its own environment);
    none of the named files is left to the long campaigns only."""
    run = (ROOT / ".ci" / "run").read_text()
    ignored = set(re.findall(r"--ignore=(tests/[\w/.]+)", run.split("main_part()", 1)[1]))
    reliability = re.search(r'"\$\{PYTEST\[@\]\}" --durations=\d+ ([^"]+?) "\$@"', run)
    assert reliability, "the reliability part's pytest line was not found"
    run_apart = reliability.group(1).split()
    for _title, named in _promises():
        for file, _name in named:
            in_main = not any(file == i or file.startswith(i.rstrip("/") + "/") for i in ignored)
            in_reliability = any(
                file == r or file.startswith(r.rstrip("/") + "/") for r in run_apart
            )
            assert in_main or in_reliability, f"{file} is run by neither part of .ci/run"
