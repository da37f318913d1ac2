"""The tool-latency benchmark runs end to end on a small memory and reports every tool."""

from __future__ import annotations

import json

from emem_graph.bench_tools import TOOLS, bench_tools


def test_bench_tools_reports_p50_of_every_tool_next_to_numpy(tmp_path):
    result = bench_tools(1_500, tmp_path, repeats=2)
    assert result["n"] == 1_500
    assert list(result["tools"]) == list(TOOLS)
    for row in result["tools"].values():
        assert row["p50_ms"] > 0 and row["numpy_p50_ms"] >= 0 and row["ratio"] > 0
    assert json.loads((tmp_path / "bench_tools.json").read_text()) == result
    table = (tmp_path / "bench_tools.md").read_text()
    assert "| semantic_search |" in table and "| body_status |" in table
