"""The demo (the README's first command) builds its patrol memory and every tool answers."""

from __future__ import annotations

from pathlib import Path

from emem_graph.evals.demo import demo_questions, run_demo
from emem_graph.retrieval.schemas import TOOL_SCHEMAS

EMPTY_ANSWERS = (
    "No results found.",
    "No observations found.",
    "No gists found.",
    "No entities found.",
    "No episodes found.",
    "Could not locate",
    "No memories found",
    "No body state data available.",
)


def _answers(lines: list[str]) -> dict[str, str]:
    """Split the demo's printed output into {">>> tool(...)" header: answer text}."""
    answers: dict[str, str] = {}
    header = None
    for chunk in lines:
        if chunk.startswith("\n>>> "):
            header = chunk.strip()
            answers[header] = ""
        elif header is not None:
            answers[header] += chunk
    return answers


def test_demo_asks_every_tool_and_gets_a_real_answer(tmp_path: Path, minilm) -> None:
    printed: list[str] = []
    run_demo(tmp_path / "demo", embedder=minilm, rounds=1, echo=printed.append)

    asked = {tool for tool, _ in demo_questions()}
    assert asked == set(TOOL_SCHEMAS)  # the ten retrieval tools and the capabilities' six
    answers = _answers(printed)
    assert len(answers) == len(demo_questions())
    for header, answer in answers.items():
        assert answer.strip(), header
        assert not answer.startswith("Error"), (header, answer)
        assert not answer.startswith(EMPTY_ANSWERS), (header, answer)

    by_tool: dict[str, str] = {}  # the first answer of each tool
    for header, answer in answers.items():
        by_tool.setdefault(header.split("(")[0].removeprefix(">>> "), answer)
    assert "coffee machine" in by_tool["semantic_search"]
    assert by_tool["get_current_context"].startswith("Position: (")
    assert "Body Status:" in by_tool["body_status"]
    assert "battery" in by_tool["body_status"]
    assert "battery" not in by_tool["semantic_search"]
    assert "red chair" in by_tool["locate"]
    assert by_tool["search_gists"].startswith("1. [gist/")
