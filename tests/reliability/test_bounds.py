"""Every input is bounded, and close() racing other calls is clean.

Tools: an oversized text, list, number, argument count, JSON text or nesting is refused with
one ``Error:`` line by dispatch (an InvalidInputError by a Python call) before any work: a
12 MB query is refused with a small fraction of its size in extra memory, where it used to be
embedded (25 s, 1.75 GiB). CLI: every such input is one ``emem-graph: error:`` line and exit
status 2, never a traceback. close() racing other calls: tests/reliability/test_close.py.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.cli import main
from emem_graph.errors import InvalidInputError
from emem_graph.limits import (
    MAX_JSON_DEPTH,
    MAX_TOOL_CALL_CHARS,
    MAX_TOOL_LIST_ITEMS,
    MAX_TOOL_TEXT_CHARS,
)
from emem_graph.retrieval.schemas import ALL_SCHEMAS

BIG = 12_000_000


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = tmp_path_factory.mktemp("bounds") / "mem"
    config = MemoryConfig(db_path=str(directory), maintenance_interval=None)
    memory = SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))
    for i in range(30):
        memory.add(f"a red cup number {i}", float(i), 1.0)
    memory.add_entity("red cup", 1.0, 1.0)
    memory.flush()
    yield memory
    memory.close()


def one_error_line(answer: Any) -> str:
    assert isinstance(answer, str)
    assert answer.startswith("Error: ") and "\n" not in answer, answer[:300]
    assert "RecursionError" not in answer and "OverflowError" not in answer, answer
    return answer


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _parameters(tool: str) -> dict[str, dict[str, Any]]:
    return ALL_SCHEMAS[tool]["parameters"]["properties"]


def _oversized_cases() -> list[tuple[str, str, Any]]:
    """(tool, argument, oversized value) for every parameter of every tool that has a size."""
    cases: list[tuple[str, str, Any]] = []
    for tool in ALL_SCHEMAS:
        for name, spec in _parameters(tool).items():
            kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            if "string" in kinds and "enum" not in spec:
                cases.append((tool, name, "x" * (spec.get("maxLength", 0) + 1)))
            if "array" in kinds:
                cases.append((tool, name, ["battery"] * (MAX_TOOL_LIST_ITEMS + 1)))
            if kinds in (["number"], ["integer"]):
                cases.append((tool, name, 1e300 if kinds == ["number"] else 10**30))
    return cases


def test_every_tool_parameter_is_bounded_in_its_published_schema() -> None:
    for tool in ALL_SCHEMAS:
        for name, spec in _parameters(tool).items():
            kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            if "string" in kinds and "enum" not in spec:
                assert spec["maxLength"] <= 100_000, (tool, name)
            if "array" in kinds:
                assert spec["maxItems"] <= MAX_TOOL_LIST_ITEMS, (tool, name)
            if kinds in (["number"], ["integer"]):
                assert abs(spec["maximum"]) <= 1e15 and abs(spec["minimum"]) <= 1e15


def test_every_oversized_argument_is_one_error_line_and_a_python_error(
    memory: SpatioTemporalMemory, summary: list[str]
) -> None:
    cases = _oversized_cases()
    for tool, name, value in cases:
        one_error_line(memory.dispatch_tool_call(tool, {name: value}))
        if tool in _read_tools():
            with pytest.raises(InvalidInputError):
                memory.tools.tool(tool)(**{name: value})
    summary.append(f"bounds: {len(cases)} oversized tool arguments, {len(cases)} refused")


def _read_tools() -> set[str]:
    from emem_graph.retrieval.schemas import ACTION_SCHEMAS

    return set(ALL_SCHEMAS) - set(ACTION_SCHEMAS)


def test_a_12_mb_query_is_refused_before_it_is_embedded(memory: SpatioTemporalMemory) -> None:
    query = "cup " * (BIG // 4)
    for tool in ("semantic_search", "recall", "locate", "search_gists", "global_search"):
        key = "concept" if tool == "locate" else "query"
        tracemalloc.start()
        answer = memory.dispatch_tool_call(tool, {key: query})
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert "the limit is 10,000" in one_error_line(answer)
        # Refused before work: no copy of the text, no embedding (that took 25 s and 1.75 GiB;
        # the peak proves it without a timing a loaded machine could miss).
        assert peak < BIG // 10, peak
        with pytest.raises(InvalidInputError):
            getattr(memory, tool)(query)


def test_a_huge_or_deep_json_call_is_refused_before_it_is_parsed(
    memory: SpatioTemporalMemory,
) -> None:
    deep = "[" * 150_000 + "]" * 150_000
    assert "characters" in one_error_line(memory.dispatch_tool_call("semantic_search", deep))
    shallow_deep = '{"query": ' + "[" * (MAX_JSON_DEPTH + 5) + "]" * (MAX_JSON_DEPTH + 5) + "}"
    assert "nested deeper" in one_error_line(
        memory.dispatch_tool_call("semantic_search", shallow_deep)
    )
    long_text = json.dumps({"query": "y" * MAX_TOOL_CALL_CHARS})
    one_error_line(memory.dispatch_tool_call("semantic_search", long_text))
    many = json.dumps({f"a{i}": 1 for i in range(1000)})
    one_error_line(memory.dispatch_tool_call("semantic_search", many))


def test_deeply_nested_python_arguments_never_raise_recursion_error(
    memory: SpatioTemporalMemory,
) -> None:
    deep = nested_list(100_000)
    for tool in ALL_SCHEMAS:
        for name in _parameters(tool):
            one_error_line(memory.dispatch_tool_call(tool, {name: deep}))
    with pytest.raises(InvalidInputError):
        memory.semantic_search(deep)  # type: ignore[arg-type]
    loop: list[Any] = []
    loop.append(loop)
    one_error_line(memory.dispatch_tool_call("body_status", {"layers": loop}))
    one_error_line(memory.dispatch_tool_call("x" * BIG, {}))


def test_huge_radii_and_coordinates_are_refused_not_overflowing(
    memory: SpatioTemporalMemory,
) -> None:
    for arguments in (
        {"x": 0, "y": 0, "radius": 1e308},
        {"x": 1e308, "y": 0, "radius": 1e308},
        {"x": 1e10, "y": 0},
    ):
        one_error_line(memory.dispatch_tool_call("spatial_query", arguments))
    one_error_line(
        memory.dispatch_tool_call(
            "semantic_search", {"query": "cup", "near_x": 0, "near_y": 0, "spatial_radius": 1e300}
        )
    )
    one_error_line(memory.dispatch_tool_call("get_current_context", {"radius": 1e300}))
    # Whole numbers too long to turn into text (Python's 4,300-digit limit) are refused too.
    huge = 10**5000
    one_error_line(memory.dispatch_tool_call("semantic_search", {"query": "x", "n_results": huge}))
    one_error_line(memory.dispatch_tool_call("spatial_query", '{"x": 1' + "0" * 5000 + ', "y": 0}'))
    one_error_line(memory.dispatch_tool_call("body_status", {"layers": [huge]}))
    with pytest.raises(InvalidInputError):
        memory.semantic_search("x", n_results=huge)
    # Within the bounds every extreme still answers (no OverflowError at the bound itself).
    answer = memory.dispatch_tool_call("spatial_query", {"x": 1e9, "y": -1e9, "radius": 1e10})
    assert isinstance(answer, str) and "OverflowError" not in answer


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=30)
    | st.integers(MAX_TOOL_TEXT_CHARS - 2, MAX_TOOL_TEXT_CHARS + 2).map(lambda n: "a" * n),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def test_random_arguments_to_every_tool_answer_text_or_one_error_line(
    memory: SpatioTemporalMemory, scale: Any, summary: list[str]
) -> None:
    tools = sorted(set(ALL_SCHEMAS) - {"start_episode", "end_episode", "store_specific_memory"})
    seen = {"calls": 0, "errors": 0}

    @settings(
        max_examples=scale.hostile_examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(
        tool=st.sampled_from(tools),
        arguments=st.dictionaries(
            st.sampled_from(["query", "x", "y", "radius", "layers", "n_results", "concept"])
            | st.text(max_size=5),
            _json_values,
            max_size=4,
        ),
        as_text=st.booleans(),
    )
    def run(tool: str, arguments: dict[str, Any], as_text: bool) -> None:
        payload: Any = arguments
        if as_text:
            try:
                payload = json.dumps(arguments)
            except ValueError:
                payload = arguments
        answer = memory.dispatch_tool_call(tool, payload)
        assert isinstance(answer, str)
        seen["calls"] += 1
        if answer.startswith("Error: "):
            one_error_line(answer)
            seen["errors"] += 1

    run()
    summary.append(
        f"bounds: {seen['calls']} random tool calls ({scale.label()}), {seen['errors']} "
        "refused with one Error line, 0 raised"
    )


# --- the command line ---------------------------------------------------------------------


def cli_refuses(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2, (argv[:3], rc, err[:300])
    assert err.startswith("emem-graph: error: ") and "\n" not in err, err[:500]
    assert "Traceback" not in err
    return err


def test_cli_params_nested_or_huge_are_one_line(
    memory: SpatioTemporalMemory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    closed = tmp_path / "closed"
    with SpatioTemporalMemory(str(closed), embedding_provider=HashingEmbedder(384)) as other:
        other.add("a cup", 0.0, 0.0)
    nested = "[" * 10_000 + "]" * 10_000
    for command in (["cypher", str(closed), "RETURN $a AS a"], ["query", str(closed), "x"]):
        err = cli_refuses(capsys, [*command, "--param", f"a={nested}"])
        assert "nested deeper" in err
    cli_refuses(capsys, ["cypher", str(closed), "RETURN 1", "--param", "a=" + "1" * 2_000_000])
    cli_refuses(capsys, ["cypher", str(closed), "RETURN '" + "x" * 2_000_000 + "'"])
    cli_refuses(capsys, ["export", str(closed), "--format", "json", "o.json", "--near", "0", "0",
                         "1e300"])  # fmt: skip
    cli_refuses(capsys, ["demo", str(tmp_path / "d"), "--rounds", "10000000"])
    cli_refuses(capsys, ["make-bag", str(tmp_path / "b"), "--duration", "1e12"])
    cli_refuses(capsys, ["stats", str(closed) + "\x00"])
    deep_file = tmp_path / "previous.json"
    deep_file.write_text(nested)
    err = cli_refuses(capsys, ["bench", "--scale-from", str(deep_file), "--out", "x"])
    assert "nested deeper" in err


def test_cli_never_prints_a_traceback_for_recursion_or_overflow(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import emem_graph.explore.stats as stats

    errors = (
        RecursionError("deep"),
        OverflowError("big"),
        MemoryError(),
        UnicodeError("x"),
        PermissionError(13, "Permission denied", "/somewhere"),
    )
    for error in errors:

        def explode(*_args: Any, error: BaseException = error, **_kwargs: Any) -> Any:
            raise error

        monkeypatch.setattr(stats, "memory_stats", explode)
        cli_refuses(capsys, ["stats", "anywhere"])
