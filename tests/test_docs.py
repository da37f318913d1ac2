"""README.md and docs/*.md: every code block runs (or says why not) and prints what the page
shows, every link stays in the repository and resolves, and the README keeps what a newcomer
needs. The machinery is tests/docs_blocks.py; docs/docs-tests.md describes it."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docs_blocks

PAGES = docs_blocks.pages()
ROOT = docs_blocks.ROOT


def _name(path: Path) -> str:
    return docs_blocks.shown(path)


@pytest.fixture(scope="module")
def page_runs() -> Iterator[dict[Path, docs_blocks.PageResult]]:
    """Every page's blocks run once, two pages at a time (each page is its own processes)."""
    order = docs_blocks.run_order(PAGES)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(order, pool.map(docs_blocks.run_page, order), strict=True))
    yield results


def _report(problems: list[docs_blocks.Problem]) -> str:
    text = "\n\n".join(f"{p.where}: {p.what}" for p in problems)
    if any(p.stale for p in problems):
        text += (
            "\n\nAn output on the page differs from what the command prints now. If the new "
            f"output is right, regenerate the pages with `{docs_blocks.REGENERATE}` "
            "(docs/docs-tests.md) and read the diff."
        )
    return text


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_block_runs_and_prints_what_the_page_shows(
    page: Path, page_runs: dict[Path, docs_blocks.PageResult]
) -> None:
    problems = page_runs[page].problems
    assert not problems, _report(problems)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_block_is_run_or_says_why_and_what_is_not_run_still_holds(page: Path) -> None:
    problems = [p for block in docs_blocks.parse(page) for p in docs_blocks.static_problems(block)]
    assert not problems, _report(problems)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_links_stay_in_the_repository_and_resolve(page: Path) -> None:
    problems = docs_blocks.link_problems(page)
    assert not problems, _report(problems)


def test_every_doc_page_is_reached_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    reached = {m.split("#")[0] for m in re.findall(r"\]\((docs/[^)]+)\)", readme)}
    for page in PAGES[1:]:
        linked_from_docs = any(
            f"]({page.name}" in other.read_text() for other in PAGES[1:] if other != page
        )
        assert f"docs/{page.name}" in reached or linked_from_docs, f"nothing links {page.name}"


def test_the_readme_is_a_newcomers_page() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.split("\n")) <= 500
    first = docs_blocks.parse(ROOT / "README.md")[0]
    commands = [line for line in first.body if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].startswith("python3 -m venv .venv") and commands[0].endswith(
        "emem-graph demo"
    )
    assert commands[1] == "bash .ci/run"
    assert (ROOT / ".ci" / "run").is_file()
    assert "`bash .ci/run` is the test command" in text
    status = text[text.index("## Status") :]
    status = status[: status.index("\n## ", 4)]
    for capability in (
        "reliability",
        "retrieval quality",
        "objects move",
        "user profile",
        "structure",
        "speed at every scale",
        "MCP server",
        "graph engine",
        "fleet memory",
    ):
        assert f"\n| {capability}" in status, f"the Status table has no row for {capability}"
    for tool in ("semantic_search", "locate", "recall", "body_status", "user_profile"):
        assert f"| `{tool}`" in text


# -- the checks can fail ----------------------------------------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text)
    return path


def test_a_stale_output_fails_and_write_mode_regenerates_it(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "```console\n$ echo 301 nodes\n283 nodes\n```\n\n"
        "```python\nprint('24 files')\n```\n\n```text\n10 files\n```\n",
    )
    result = docs_blocks.run_page(page)
    assert [p.stale for p in result.problems] == [True, True], result.problems
    docs_blocks.write(page, result.rewrites)
    assert "$ echo 301 nodes\n301 nodes\n" in page.read_text()
    assert "```text\n24 files\n```" in page.read_text()
    assert docs_blocks.run_page(page).problems == []


def test_ids_times_and_sizes_are_normalised_but_counts_are_not() -> None:
    a = "id 0123456789abcdef0123456789abcdef at 2026-11-22 08:00:00, 30.5 MB in 1.2 s; 13 gists"
    b = "id fedcba9876543210fedcba9876543210 at 2026-11-25 10:00:01, 56.9 MB in 3 s; 13 gists"
    assert docs_blocks.normalise(a) == docs_blocks.normalise(b)
    assert docs_blocks.normalise(a) != docs_blocks.normalise(a.replace("13 gists", "19 gists"))


def test_a_varying_output_is_compared_by_calls_and_forms() -> None:
    page = ">>> locate()\nLocation: (1.0, 2.0)\nRadius: 1.0m\n>>> recall()\n1. [captions] a cup\n"
    other = ">>> locate()\nLocation: (1.5, 2.5)\nRadius: 2.0m\n>>> recall()\n1. [entity] cup\n"
    assert docs_blocks.loosely_equal(page, other) is None
    assert docs_blocks.loosely_equal(page, other.replace(">>> recall()", ">>> search()"))
    assert docs_blocks.loosely_equal(page, other.replace("Location:", "Error:"))


def test_a_block_that_is_neither_run_nor_explained_fails(tmp_path: Path) -> None:
    page = _page(tmp_path, "```text\nsome output\n```\n\n```\nno language\n```\n")
    problems = [p for b in docs_blocks.parse(page) for p in docs_blocks.static_problems(b)]
    assert len(problems) == 2


def test_what_is_not_run_must_still_parse_exist_and_import(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "<!-- docs-test: not run: too long -->\n```console\n$ emem-graph bench --n 10 --nope\n"
        "output\n```\n\n<!-- docs-test: not run: too long -->\n```bash\nbash .ci/missing\n"
        'pip install -e ".[nothing]"\n```\n\n<!-- docs-test: not run: a server -->\n'
        "```python\nfrom emem_graph import NoSuchThing\n```\n\n"
        '<!-- docs-test: not run: a format -->\n```json\n{"a": }\n```\n',
    )
    problems = [p.what for b in docs_blocks.parse(page) for p in docs_blocks.static_problems(b)]
    assert any("--nope" in p for p in problems), problems
    assert any(".ci/missing" in p for p in problems), problems
    assert any("'nothing'" in p for p in problems), problems
    assert any("NoSuchThing" in p for p in problems), problems
    assert any("JSON" in p for p in problems), problems
    assert len(problems) == 5


def test_links_out_of_the_repository_and_to_missing_anchors_fail(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "page.md"
    page.write_text(
        "# A page\n\n## Bag replay (`ros_bridge.bag`)\n\n"
        "[ok](#bag-replay-ros_bridgebag) [web](https://kuzudb.com) [design](../../shared/API.md)\n"
        "[gone](missing.md) [anchor](#no-such-heading) `https://in.code/is/fine`\n"
        "run .venv/bin/emem-graph demo\n"
    )
    root = docs_blocks.ROOT
    docs_blocks.ROOT = tmp_path
    try:
        problems = [p.what for p in docs_blocks.link_problems(page)]
    finally:
        docs_blocks.ROOT = root
    assert len(problems) == 6, problems  # the web link counts twice: as a URL and as a link
    assert not any("bag-replay" in p for p in problems)
