"""The benchmark's figures: each one measured for emem_graph and for a baseline (and for eMEM
with ``--compare emem``), printed as a table of ratios or as JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

SECTIONS = ("ingest", "tools", "filtered search", "reopen", "disk")


@dataclass(frozen=True)
class Target:
    """A goal for a figure: ``ours / eMEM`` at least or at most ``value`` (of="emem"),
    ``ours / baseline`` (of="baseline"), or ours itself at least ``value`` (of="ours")."""

    op: Literal[">=", "<="]
    value: float
    of: Literal["emem", "baseline", "ours"] = "emem"

    def text(self) -> str:
        if self.of == "ours":
            return f"{self.op} {self.value:g}"
        return f"{self.op} {self.value:g}x" + (" baseline" if self.of == "baseline" else "")

    def met(self, figure: Figure) -> bool | None:
        """Whether the figure meets the target; None when it cannot be told."""
        value = {"ours": figure.ours, "baseline": figure.ratio, "emem": figure.vs_emem}[self.of]
        if value is None or math.isnan(value):
            return None
        return value >= self.value if self.op == ">=" else value <= self.value


@dataclass(frozen=True)
class Figure:
    """One measured quantity: ours next to the baseline (and eMEM), ratios ours / other."""

    section: str
    name: str
    unit: str
    ours: float
    baseline: float
    emem: float | None = None
    target: Target | None = None

    @property
    def ratio(self) -> float:
        """ours / baseline."""
        return _ratio(self.ours, self.baseline)

    @property
    def vs_emem(self) -> float | None:
        """ours / eMEM, None without a comparison."""
        return None if self.emem is None else _ratio(self.ours, self.emem)

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "name": self.name,
            "unit": self.unit,
            "ours": _round(self.ours),
            "baseline": _round(self.baseline),
            "ratio": _round(self.ratio),
        }
        if self.emem is not None:
            row["emem"] = _round(self.emem)
            row["vs_emem"] = _round(self.vs_emem)
        if self.target is not None:
            row["target"] = self.target.text()
            row["target_met"] = self.target.met(self)
        return row


def to_json(
    setup: dict[str, Any],
    figures: list[Figure],
    previous: tuple[int, dict[str, float]] | None = None,
) -> dict[str, Any]:
    """The result for machines: the setup, then one list of figures per section. A figure
    with a figure of the same name at a smaller N (``previous``, else the smaller memory of
    this run: setup["scale"]) gets "scaling": {"n", "ratio", "met"} (met: None unless a p50
    latency)."""
    previous = previous or same_run_scale(setup)
    sections: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    for figure in figures:
        row = figure.as_dict()
        if previous is not None:
            ratio, kept = scaling(figure, previous[1])
            if ratio is not None:
                row["scaling"] = {"n": previous[0], "ratio": _round(ratio), "met": kept}
        sections[figure.section].append(row)
    return {**setup, "sections": sections}


SCALING_LIMIT = 2.0
"""The scaling goal: a tool's p50 latency at 1M observations at most 2x its latency at 100k."""


def previous_run(data: dict[str, Any]) -> tuple[int, dict[str, float]]:
    """From the JSON of an earlier run (``--json``): its N and our figure of each name.

    Raises:
        ValueError: not the JSON ``emem-graph bench --json`` prints.
    """
    try:
        n = int(data["n"])
        ours = {
            row["name"]: float(row["ours"])
            for rows in data["sections"].values()
            for row in rows
            if row.get("ours") is not None
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not the JSON of 'emem-graph bench --json': {exc!r}") from exc
    return n, ours


def same_run_scale(setup: dict[str, Any]) -> tuple[int, dict[str, float]] | None:
    """The smaller memory's N and latency figures of a run with ``scale_n`` (None without)."""
    scale = setup.get("scale")
    if not scale:
        return None
    return int(scale["n"]), {name: float(ms) for name, ms in scale["ours"].items()}


def scaling(figure: Figure, previous: dict[str, float]) -> tuple[float | None, bool | None]:
    """ours / ours of the earlier run, and whether a p50 latency kept within SCALING_LIMIT
    (None for the other figures)."""
    before = previous.get(figure.name)
    if before is None:
        return None, None
    ratio = _ratio(figure.ours, before)
    latency = figure.unit == "ms" and figure.name.endswith(" p50")
    return ratio, (ratio <= SCALING_LIMIT) if latency else None


def table(
    setup: dict[str, Any],
    figures: list[Figure],
    previous: tuple[int, dict[str, float]] | None = None,
) -> str:
    """The result for people: a header saying what was measured, then a table of figures
    (with ``previous``, from previous_run(), or with a smaller memory measured in this run,
    a column of ratios to its figures)."""
    compare = any(f.emem is not None for f in figures)
    same_run = previous is None and same_run_scale(setup) is not None
    previous = previous or same_run_scale(setup)
    lines = [
        f"emem-graph bench: {setup['n']:,} observations of a patrol ({setup['workload']}), "
        f"{setup['dim']}-d vectors given, {setup['queries']} queries per figure",
        "baseline: " + "; ".join(f"{k} = {v}" for k, v in setup["baselines"].items()),
        f"'ingest, with entity extraction' is measured on the first {setup['extract_n']:,} "
        "observations",
        "ratio = emem_graph / baseline"
        + (f"; vs eMEM = emem_graph / {setup['emem']}" if compare else "")
        + (
            f"; vs {previous[0]:,} = emem_graph here / emem_graph at {previous[0]:,} observations"
            + (
                " (measured in this run, each call timed in turn on both memories)"
                if same_run
                else ""
            )
            + f" (target: p50 latencies <= {SCALING_LIMIT:g}x)"
            if previous
            else ""
        ),
        "",
    ]
    header = ["figure", "unit", "emem_graph", "baseline", "ratio"]
    if compare:
        header += ["eMEM", "vs eMEM", "target"]
    if previous:
        header += [f"vs {previous[0]:,}", "scaling"]
    rows = [header]
    for section in SECTIONS:
        chosen = [f for f in figures if f.section == section]
        if not chosen:
            continue
        rows.append([f"[{section}]"])
        for f in chosen:
            row = [f.name, f.unit, _num(f.ours), _num(f.baseline), f"{_num(f.ratio)}x"]
            if compare:
                row += [
                    _num(f.emem) if f.emem is not None else "-",
                    f"{_num(f.vs_emem)}x" if f.vs_emem is not None else "-",
                    _target_cell(f),
                ]
            if previous:
                ratio, kept = scaling(f, previous[1])
                row += [
                    "-" if ratio is None else f"{_num(ratio)}x",
                    "" if kept is None else ("ok" if kept else "MISS"),
                ]
            rows.append(row)
    widths = [max(len(r[c]) for r in rows if len(r) > c) for c in range(len(header))]
    for row in rows:
        if len(row) == 1:
            lines.append(row[0])
            continue
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _target_cell(figure: Figure) -> str:
    if figure.target is None:
        return ""
    met = figure.target.met(figure)
    return f"{figure.target.text()} {'ok' if met else 'MISS' if met is not None else '?'}"


def _ratio(a: float, b: float) -> float:
    if b == 0:
        return math.inf if a else 1.0
    return a / b


def _round(value: float | None) -> float | None:
    # JSON has no infinity or NaN: a figure that cannot be told is null.
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return float(f"{value:.4g}")


def _num(value: float | None) -> str:
    """Three significant figures, thousands separated: 123,456 / 12.3 / 0.0123."""
    if value is None:
        return "-"
    if math.isinf(value) or math.isnan(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"
