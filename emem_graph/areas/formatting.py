"""How areas read in tool output (API.md's line style: x, y with one decimal, numbered lists)."""

from __future__ import annotations

from emem_graph.areas.forest import Area
from emem_graph.areas.walk import Chain
from emem_graph.retrieval.formatting import format_record, one_line

INDENT = "   "


def format_area(area: Area) -> str:
    """``[area/L{level}] ({x},{y}) [x {x0}..{x1}, y {y0}..{y1}] [{n} obs] {text}``"""
    x0, x1, y0, y1 = area.box
    return (
        f"[area/L{area.level}] ({area.x:.1f},{area.y:.1f}) "
        f"[x {x0:.1f}..{x1:.1f}, y {y0:.1f}..{y1:.1f}] [{area.count} obs] {one_line(area.text)}"
    )


def format_chain(areas: list[Area], leaf_line: str | None = None) -> str:
    """A leaf (when given) then its areas finest to root, one per line, the later ones
    indented under the first: ``   in [area/L2] ...``."""
    lines = [leaf_line] if leaf_line else []
    for area in areas:
        line = format_area(area)
        lines.append(line if not lines else f"{INDENT}in {line}")
    return "\n".join(lines)


def format_walk_chain(chain: Chain) -> str:
    """A global-search chain: the leaf memory, then its areas up to the root."""
    leaf = format_record(chain.leaf) if chain.leaf is not None else None
    return format_chain(chain.areas, leaf)
