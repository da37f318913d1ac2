"""A robot's day (day.py) as figures: JSON for machines, a table over time and a summary for
people."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from emem_graph.evals.bench.day import (
    EPISODE_EVERY,
    START_SHARE,
    TOOL_EVERY,
    DayLog,
    DayResult,
    ToolCall,
)
from emem_graph.evals.bench.report import _num

ALL_TOOLS = "all tools"


def day_figures(result: DayResult) -> dict[str, Any]:
    """Every figure of the day, as JSON-ready values (see docs/benchmarks.md for each)."""
    day = result.day
    growth = _growth(result)
    figures: dict[str, Any] = {
        "n": result.n,
        "engine": result.engine,
        "embedder": result.embedder,
        "configuration": "default",
        "episode_every": EPISODE_EVERY,
        "tool_every": TOOL_EVERY,
        "samples": [
            {
                "observations": s.observations,
                "obs_per_s": _round(s.obs_per_s),
                "day_obs_per_s": _round(s.day_obs_per_s),
                "rss_mb": _round(s.footprint.rss_mb),
                "fds": s.footprint.fds,
                "deleted_fds": s.footprint.deleted_fds,
            }
            for s in day.samples
        ],
        "ingest": {
            "obs_per_s": _round(day.obs_per_s),
            "day_obs_per_s": _round(day.day_obs_per_s),
            "write_s": _round(day.write_s),
            "wall_s": _round(day.wall_s),
            "open_s": _round(result.open_s),
            "close_s": _round(result.close_s),
        },
        "growth": growth,
        "tools": tool_p50s(result),
        "before_open": {
            "rss_mb": _round(result.before_open.rss_mb),
            "fds": result.before_open.fds,
            "deleted_fds": result.before_open.deleted_fds,
        },
        "after_close": {
            "rss_mb": _round(result.after_close.rss_mb),
            "fds": result.after_close.fds,
            "deleted_fds": result.after_close.deleted_fds,
        },
        "warning_records": sum(result.warnings.get("WARNING", {}).values()),
        "log_records": result.warnings,
        "consolidated": {
            "at_end_of_ingest": result.counts_at_end,
            "after_close": result.counts_after_close,
        },
        "emem": _emem(result),
    }
    if result.directory is not None:
        figures["directory"] = str(result.directory)
    return figures


def tool_p50s(result: DayResult) -> dict[str, dict[str, float | int | None]]:
    """Each tool's p50 (ms) over the calls in the first START_SHARE of the run and over the
    calls right after the last add, with their counts; ALL_TOOLS pools every call."""
    limit = math.ceil(START_SHARE * result.n)
    start = [c for c in result.day.calls if c.observations <= limit]
    names = list(dict.fromkeys(c.tool for c in (*result.end_calls, *result.day.calls)))
    rows: dict[str, dict[str, float | int | None]] = {}
    for name in [*names, ALL_TOOLS]:
        first = [c for c in start if name in (c.tool, ALL_TOOLS)]
        last = [c for c in result.end_calls if name in (c.tool, ALL_TOOLS)]
        rows[name] = {
            "start_p50_ms": _p50(first),
            "start_calls": len(first),
            "end_p50_ms": _p50(last),
            "end_calls": len(last),
        }
    return rows


def day_table(result: DayResult) -> str:
    """The day for people: what ran, the process over time, then the summary figures."""
    f = day_figures(result)
    ingest, growth = f["ingest"], f["growth"]
    vectors = "384-d vectors given" if result.embedder == "vectors" else "embedded by the model"
    lines = [
        f"emem-graph bench --day: {result.n:,} observations of the patrol into one memory "
        f"({result.engine}, default configuration, {vectors}), open throughout",
        f"one add() per observation; an episode ended every {EPISODE_EVERY} without waiting; "
        f"a tool call every {TOOL_EVERY}, the tools in turn",
        "obs/s: over the writing calls (what the memory accepts); day obs/s: over the whole "
        "loop, the tool calls included",
        "",
    ]
    header = ["observations", "obs/s", "day obs/s", "RSS MB", "fds", "deleted fds"]
    rows = [header]
    rows += [
        [
            f"{s['observations']:,}",
            _num(s["obs_per_s"]),
            _num(s["day_obs_per_s"]),
            _num(s["rss_mb"]),
            str(s["fds"]),
            str(s["deleted_fds"]),
        ]
        for s in f["samples"]
    ]
    lines += _columns(rows, names=False)
    lines.append("")
    summary = [
        ["ingest, whole run", "obs/s", _num(ingest["obs_per_s"])],
        ["ingest, whole run with the tools", "obs/s", _num(ingest["day_obs_per_s"])],
    ]
    emem = f["emem"]
    if "obs_per_s" in emem:
        summary += [
            [f"{emem['name']}, whole run", "obs/s", _num(emem["obs_per_s"])],
            [f"  emem_graph / {emem['name']}", "x", _num(emem["ratio"])],
            [f"{emem['name']}, whole run with the tools", "obs/s", _num(emem["day_obs_per_s"])],
            [f"  emem_graph / {emem['name']}", "x", _num(emem["day_ratio"])],
        ]
    summary += [
        ["open", "s", _num(ingest["open_s"])],
        ["close", "s", _num(ingest["close_s"])],
        [f"RSS growth after {growth['after']:,}", "KB/obs", _num(growth["rss_kb_per_obs"])],
        [f"fds after {growth['after']:,} -> end", "fds", _span(growth["fds"])],
        [f"deleted fds after {growth['after']:,} -> end", "fds", _span(growth["deleted_fds"])],
        ["fds before open -> after close", "fds", _pair(f, "fds")],
        ["deleted fds before open -> after close", "fds", _pair(f, "deleted_fds")],
        ["RSS before open -> after close", "MB", _pair(f, "rss_mb")],
        ["WARNING log records", "records", str(f["warning_records"])],
    ]
    lines += _columns([["figure", "unit", "value"], *summary])
    for level, loggers in f["log_records"].items():
        lines.append(f"  {level}: " + ", ".join(f"{name} {n}" for name, n in loggers.items()))
    if "note" in emem:
        lines.append(emem["note"])
    lines.append("")
    share = f"first {START_SHARE:.0%}"
    tools = [["tool p50 ms", share, "calls", "end", "calls"]]
    for name, row in f["tools"].items():
        tools.append(
            [
                name,
                _num(row["start_p50_ms"]),
                str(row["start_calls"]),
                _num(row["end_p50_ms"]),
                str(row["end_calls"]),
            ]
        )
    lines += _columns(tools)
    lines.append("end: right after the last add (consolidation and compaction may still run)")
    lines.append("")
    at_end, after = f["consolidated"]["at_end_of_ingest"], f["consolidated"]["after_close"]
    counted = [["consolidated", "end of ingest", "after close"]]
    counted += [[name, f"{at_end[name]:,}", f"{after[name]:,}"] for name in after]
    lines += _columns(counted)
    if "directory" in f:
        lines.append(f"memory kept in {f['directory']}")
    return "\n".join(lines) + "\n"


def _growth(result: DayResult) -> dict[str, Any]:
    """RSS per observation (the least-squares slope) and descriptors, from the first sample
    past the warm-up to the last."""
    after = [s for s in result.day.samples if s.observations >= result.warm_up]
    slope = None
    if len(after) >= 2:
        obs = np.asarray([s.observations for s in after], dtype=np.float64)
        rss = np.asarray([s.footprint.rss_bytes for s in after], dtype=np.float64)
        slope = float(np.polyfit(obs, rss, 1)[0]) / 1e3
    first, last = (after[0], after[-1]) if after else (None, None)

    def span(field: str) -> dict[str, int] | None:
        if first is None or last is None:
            return None
        a, b = getattr(first.footprint, field), getattr(last.footprint, field)
        return {"from": a, "to": b, "growth": b - a}

    return {
        "after": result.warm_up,
        "rss_kb_per_obs": _round(slope),
        "fds": span("fds"),
        "deleted_fds": span("deleted_fds"),
    }


def _emem(result: DayResult) -> dict[str, Any]:
    if result.emem is None:
        return {"note": result.emem_note}
    theirs: DayLog = result.emem
    return {
        "name": result.emem_note,
        "obs_per_s": _round(theirs.obs_per_s),
        "day_obs_per_s": _round(theirs.day_obs_per_s),
        "ratio": _round(_ratio(result.day.obs_per_s, theirs.obs_per_s)),
        "day_ratio": _round(_ratio(result.day.day_obs_per_s, theirs.day_obs_per_s)),
    }


def _p50(calls: list[ToolCall]) -> float | None:
    return _round(float(np.median([c.ms for c in calls]))) if calls else None


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def _round(value: float | None) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return float(f"{value:.4g}")


def _span(span: dict[str, int] | None) -> str:
    return "-" if span is None else f"{span['from']} -> {span['to']} ({span['growth']:+d})"


def _pair(figures: dict[str, Any], field: str) -> str:
    before, after = figures["before_open"][field], figures["after_close"][field]
    if isinstance(before, int) and isinstance(after, int):
        return f"{before} -> {after}"
    return f"{_num(before)} -> {_num(after)}"


def _columns(rows: list[list[str]], *, names: bool = True) -> list[str]:
    """Rows as aligned text, numbers right-aligned; the first column left-aligned when it
    holds ``names``."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.rjust(width) for cell, width in zip(row, widths, strict=True)]
        if names:
            cells[0] = row[0].ljust(widths[0])
        lines.append("  ".join(cells).rstrip())
    return lines
