"""``emem-graph bench --scales 20000,100000[,1000000]``: one benchmark run at every scale.

Each scale is the benchmark of one size (run.py) in a process of its own, so its peak resident
memory is its own: the figures of every scale against the exact NumPy floor and eMEM (when
installed), then the memory itself measured apart (resident.py: a fresh process opens the
memory the benchmark wrote and calls every tool once: its peak RSS, and the bytes per
observation it holds), its disk, and each p50 latency's ratio to the next smaller scale
(the goal: 1M against 100k at most 2x).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from emem_graph.errors import EmemGraphError, InvalidInputError
from emem_graph.evals.bench.compare import emem_version
from emem_graph.evals.bench.report import SCALING_LIMIT, _num
from emem_graph.outputs import claim_directory, record_entries, remove_recorded

MAX_SCALES = 6
Runner = Callable[[list[str]], str]
"""Runs a command line (a Python module's) and returns its standard output; raises
EmemGraphError when it fails."""


def parse_scales(text: str) -> list[int]:
    """The sizes of ``--scales`` ("20000,100000,1e6" or "20k,100k,1m"), ascending, unique.

    Raises:
        InvalidInputError: not a list of 1 to MAX_SCALES sizes of at least 1,000.
    """
    sizes: list[int] = []
    for part in text.split(","):
        word = part.strip().lower().replace("_", "")
        factor = {"k": 1_000, "m": 1_000_000}.get(word[-1:], 1)
        number = word[:-1] if factor > 1 else word
        try:
            value = float(number) * factor
        except ValueError:
            raise InvalidInputError(
                f"--scales {text!r}: {part.strip()!r} is not a number of observations "
                "(e.g. --scales 20000,100000,1000000)"
            ) from None
        if not value.is_integer() or value < 1_000:
            raise InvalidInputError(f"--scales: {part.strip()!r}: each size is at least 1,000")
        sizes.append(int(value))
    unique = sorted(set(sizes))
    if not 1 <= len(unique) <= MAX_SCALES:
        raise InvalidInputError(f"--scales: 1 to {MAX_SCALES} sizes, got {len(unique)}")
    return unique


def run_module(argv: list[str]) -> str:
    """Run ``python -m <argv>`` in a child process; its standard output."""
    done = subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise EmemGraphError(f"{' '.join(argv[:4])} ... failed ({done.returncode}): {last}")
    return done.stdout


def run_scales(
    scales: Sequence[int],
    out_dir: Path,
    options: Sequence[str],
    *,
    keep: bool = False,
    run: Runner = run_module,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The benchmark at each scale, then each memory measured apart, combined.

    Args:
        scales: sizes, ascending.
        out_dir: scratch directory; scale N goes to ``out_dir/nN`` (removed unless ``keep``).
        options: the other options of the benchmark, given to every scale (--queries...).
        keep: leave every scale's databases.
        run: runs a module's command line (a child process; tests may pass their own).
        progress: told a line before each step.

    Returns:
        {"scales", "emem", "runs": [each scale's bench JSON with "memory" added], "scaling"}.
    """
    claim_directory(out_dir, "bench", replace=True)
    record_entries(out_dir, "bench", [f"n{n}" for n in scales])
    runs: list[dict[str, Any]] = []
    for n in scales:
        directory = out_dir / f"n{n}"
        if progress is not None:
            progress(f"bench at {n:,} observations")
        text = run(
            [
                "emem_graph.evals.bench",
                "--n",
                str(n),
                "--out",
                str(directory),
                "--json",
                "--keep",
                "-q",
                *options,
            ]
        )
        result: dict[str, Any] = json.loads(text)
        if progress is not None:
            progress(f"memory of {n:,} observations: open and call every tool in a new process")
        try:
            result["memory"] = json.loads(
                run(["emem_graph.evals.bench.resident", str(directory / "ours"), str(n)])
            )
        finally:
            if not keep:
                remove_recorded(directory, "bench")
        runs.append(result)
    if not keep:
        remove_recorded(out_dir, "bench")
    return {
        "scales": list(scales),
        "emem": emem_version(),
        "runs": runs,
        "scaling": _scaling(runs),
    }


def _latencies(run: dict[str, Any]) -> dict[str, float]:
    return {
        row["name"]: float(row["ours"])
        for rows in run["sections"].values()
        for row in rows
        if row.get("unit") == "ms" and row.get("ours") is not None
    }


def _scaling(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each scale's p50 latencies against the next smaller scale's."""
    found = []
    for small, large in itertools.pairwise(runs):
        before, after = _latencies(small), _latencies(large)
        ratios = {
            name: round(after[name] / before[name], 3)
            for name in after
            if name.endswith(" p50") and before.get(name)
        }
        found.append(
            {
                "from": small["n"],
                "to": large["n"],
                "p50_ratios": ratios,
                "limit": SCALING_LIMIT,
                "over_limit": sorted(name for name, r in ratios.items() if r > SCALING_LIMIT),
            }
        )
    return found


def scales_table(combined: dict[str, Any]) -> str:
    """The combined result for people: one column group per scale (ours, x floor, x eMEM),
    then the memory's resident bytes and the scaling of p50 latencies."""
    runs = combined["runs"]
    compare = any("emem" in run for run in runs)
    lines = [
        f"emem-graph bench --scales: {', '.join(f'{n:,}' for n in combined['scales'])} "
        "observations, one run (each scale in a process of its own)",
        "x floor = emem_graph / exact NumPy floor (or the floor ingest)"
        + (f"; x eMEM = emem_graph / eMEM {combined['emem']}" if compare else "; eMEM not run")
        + "; scaling = p50 here / p50 at the previous scale",
        "",
    ]
    header = ["figure", "unit"]
    for run in runs:
        header += [f"{run['n']:,}", "x floor"] + (["x eMEM"] if compare else [])
        if run is not runs[0]:
            header.append("scaling")
    rows = [header]
    names: list[tuple[str, str, str]] = []
    for section, figures in runs[0]["sections"].items():
        names += [(section, row["name"], row["unit"]) for row in figures]
    by_run = [
        {row["name"]: row for rows in run["sections"].values() for row in rows} for run in runs
    ]
    for _, name, unit in names:
        row = [name, unit]
        for at, figures in enumerate(by_run):
            found = figures.get(name, {})
            row += [_num(found.get("ours")), _cell(found.get("ratio"))]
            if compare:
                row.append(_cell(found.get("vs_emem")))
            if at:
                ratio = combined["scaling"][at - 1]["p50_ratios"].get(name)
                mark = "" if ratio is None or ratio <= SCALING_LIMIT else " MISS"
                row.append("" if ratio is None else f"{_num(ratio)}x{mark}")
        rows.append(row)
    for label, key, unit in (
        ("memory: peak RSS, open + every tool", "peak_rss_bytes", "MB"),
        ("memory: held per observation", "bytes_per_observation", "B"),
    ):
        row = [label, unit]
        for at, run in enumerate(runs):
            value = run.get("memory", {}).get(key)
            scale = 1e-6 if unit == "MB" else 1.0
            row += [_num(None if value is None else value * scale), ""]
            if compare:
                row.append("")
            if at:
                row.append("")
        rows.append(row)
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    for step in combined["scaling"]:
        over = step["over_limit"]
        lines.append(
            f"p50 latencies {step['to']:,} vs {step['from']:,}: "
            + (
                f"over {SCALING_LIMIT:g}x: {', '.join(over)}"
                if over
                else f"all <= {SCALING_LIMIT:g}x"
            )
        )
    return "\n".join(lines) + "\n"


def _cell(ratio: float | None) -> str:
    return "-" if ratio is None else f"{_num(ratio)}x"
