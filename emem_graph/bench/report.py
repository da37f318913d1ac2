"""The benchmark's figures: each one measured for emem_graph and for a baseline (and for eMEM
with ``--compare emem``), printed as a table of ratios or as JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

SECTIONS = ("ingest", "tools", "filtered search", "reopen", "disk")


@dataclass(frozen=True)
class Target:
    """A goal for a figure: ``ours / eMEM`` at least or at most ``value`` (of="emem"), or
    ours itself at least ``value`` (of="ours")."""

    op: Literal[">=", "<="]
    value: float
    of: Literal["emem", "ours"] = "emem"

    def text(self) -> str:
        return f"{self.op} {self.value:g}x" if self.of == "emem" else f"{self.op} {self.value:g}"

    def met(self, figure: Figure) -> bool | None:
        """Whether the figure meets the target; None when it cannot be told."""
        value = figure.ours if self.of == "ours" else figure.vs_emem
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


def to_json(setup: dict[str, Any], figures: list[Figure]) -> dict[str, Any]:
    """The result for machines: the setup, then one list of figures per section."""
    sections: dict[str, list[dict[str, Any]]] = {s: [] for s in SECTIONS}
    for figure in figures:
        sections[figure.section].append(figure.as_dict())
    return {**setup, "sections": sections}


def table(setup: dict[str, Any], figures: list[Figure]) -> str:
    """The result for people: a header saying what was measured, then a table of figures."""
    compare = any(f.emem is not None for f in figures)
    lines = [
        f"emem-graph bench: {setup['n']:,} observations of a patrol ({setup['workload']}), "
        f"{setup['dim']}-d vectors given, {setup['queries']} queries per figure",
        "baseline: " + "; ".join(f"{k} = {v}" for k, v in setup["baselines"].items()),
        f"'ingest, with entity extraction' is measured on the first {setup['extract_n']:,} "
        "observations",
        "ratio = emem_graph / baseline"
        + (f"; vs eMEM = emem_graph / {setup['emem']}" if compare else ""),
        "",
    ]
    header = ["figure", "unit", "emem_graph", "baseline", "ratio"]
    if compare:
        header += ["eMEM", "vs eMEM", "target"]
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
