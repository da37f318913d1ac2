"""The area forest in process memory: area gists, their children and the leaves they cover.

The graph is the source of truth (area gists are Gist nodes of level >= 1 with SUMMARIZES edges
to their children); this is the copy the tree walk and the incremental update work on, read
from the graph on open (three named queries) and kept in step with every change they write.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from emem_graph import validation
from emem_graph.storage import records

if TYPE_CHECKING:
    from emem_graph.models import Gist
    from emem_graph.storage.store import MemoryStore

LeafKind = Literal["observation", "gist"]


@dataclass
class Leaf:
    """Something the forest clusters: a perception observation or a level-0 gist."""

    id: str
    kind: LeafKind
    x: float
    y: float
    z: float
    t_start: float
    t_end: float
    layer: str | None

    def __post_init__(self) -> None:
        # A position an older version stored beyond validation.MAX_COORDINATE is clamped to
        # it: the clustering's distances and boxes overflowed there (catch_up and every area
        # tool failed). Bounded positions (all a current memory takes) pass unchanged.
        if not validation.in_bounds(self.x, self.y, self.z):
            self.x = validation.clamp_coordinate(float(self.x))
            self.y = validation.clamp_coordinate(float(self.y))
            self.z = validation.clamp_coordinate(float(self.z))


@dataclass
class Area:
    """One area gist: a node of the forest.

    Attributes:
        box: (xmin, xmax, ymin, ymax) of the leaves below it.
        count: leaves below it (observations and level-0 gists).
        children: child ids (leaf ids at level 1, area ids above).
        parent: the area above it, None for a root.
    """

    id: str
    level: int
    text: str
    x: float
    y: float
    z: float
    radius: float
    box: tuple[float, float, float, float]
    t_start: float
    t_end: float
    count: int
    layer: str | None
    created_at: float
    children: list[str] = field(default_factory=list)
    parent: str | None = None

    def extent_wkt(self) -> str:
        """The box as a WKT polygon (what Gist.extent_wkt holds)."""
        x0, x1, y0, y1 = self.box
        return f"POLYGON (({x0:.3f} {y0:.3f}, {x1:.3f} {y0:.3f}, {x1:.3f} {y1:.3f}, " + (
            f"{x0:.3f} {y1:.3f}, {x0:.3f} {y0:.3f}))"
        )

    def distance_to(self, x: float, y: float) -> float:
        """Metres from (x, y) to the area's box (0 inside)."""
        x0, x1, y0, y1 = self.box
        dx = max(x0 - x, 0.0, x - x1)
        dy = max(y0 - y, 0.0, y - y1)
        return float(np.hypot(dx, dy))


@dataclass
class Forest:
    """Areas by id, the area above each leaf, and the roots."""

    areas: dict[str, Area] = field(default_factory=dict)
    leaf_parent: dict[str, str] = field(default_factory=dict)
    """Leaf id -> its level-1 area."""
    leaf_kind: dict[str, LeafKind] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.areas

    @property
    def depth(self) -> int:
        return max((a.level for a in self.areas.values()), default=0)

    def roots(self) -> list[Area]:
        """Areas without a parent, largest first."""
        roots = [a for a in self.areas.values() if a.parent is None]
        return sorted(roots, key=lambda a: (-a.count, a.id))

    def at_level(self, level: int) -> list[Area]:
        return [a for a in self.areas.values() if a.level == level]

    def chain(self, area_id: str) -> list[Area]:
        """The area and its ancestors, finest first."""
        chain = []
        current: str | None = area_id
        while current is not None:
            area = self.areas[current]
            chain.append(area)
            current = area.parent
        return chain

    def add(self, area: Area) -> None:
        self.areas[area.id] = area
        if area.level == 1:
            for child in area.children:
                self.leaf_parent[child] = area.id
        else:
            for child in area.children:
                self.areas[child].parent = area.id


def load_forest(store: MemoryStore) -> Forest:
    """The forest as the graph holds it."""
    forest = Forest()
    nodes = [records.gist(row["g"]) for row in store.graph.query("areas_nodes")]
    for gist in nodes:
        forest.areas[gist.id] = area_of(gist)
    for row in store.graph.query("areas_edges"):
        parent = forest.areas.get(row["parent"])
        if parent is None:
            continue
        parent.children.append(row["child"])
        if row["child"] in forest.areas:
            forest.areas[row["child"]].parent = parent.id
        else:
            forest.leaf_parent[row["child"]] = parent.id
            forest.leaf_kind[row["child"]] = (
                "observation" if row["child_table"] == "Observation" else "gist"
            )
    return forest


def area_of(gist: Gist) -> Area:
    """The forest node of an area gist read from the graph (the box comes from its extent)."""
    box = _box_of(gist.extent_wkt) or (
        gist.x - gist.radius,
        gist.x + gist.radius,
        gist.y - gist.radius,
        gist.y + gist.radius,
    )
    return Area(
        id=gist.id,
        level=gist.level,
        text=gist.text,
        x=gist.x,
        y=gist.y,
        z=gist.z,
        radius=gist.radius,
        box=box,
        t_start=gist.time_start,
        t_end=gist.time_end,
        count=gist.source_observation_count,
        layer=gist.layer_name,
        created_at=gist.created_at,
    )


def _box_of(wkt: str | None) -> tuple[float, float, float, float] | None:
    if not wkt or not wkt.startswith("POLYGON"):
        return None
    try:
        numbers = [
            float(v) for v in wkt.replace("POLYGON", "").strip("() ").replace(",", " ").split()
        ]
    except ValueError:
        return None
    xs, ys = numbers[0::2], numbers[1::2]
    if not xs:
        return None
    return (min(xs), max(xs), min(ys), max(ys))


def load_leaves(store: MemoryStore) -> tuple[list[Leaf], dict[str, str]]:
    """Every leaf the forest may cluster, and the texts of the gist leaves."""
    leaves: list[Leaf] = []
    table = store.graph.query_arrow("areas_leaves")
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    for i, leaf_id in enumerate(columns["id"]):
        leaves.append(
            Leaf(
                leaf_id,
                "observation",
                columns["x"][i],
                columns["y"][i],
                columns["z"][i] or 0.0,
                columns["t_start"][i],
                columns["t_end"][i],
                columns["layer"][i],
            )
        )
    texts: dict[str, str] = {}
    for leaf, text in gist_leaves(store):
        leaves.append(leaf)
        texts[leaf.id] = text
    return leaves, texts


def gist_leaves(store: MemoryStore) -> Iterator[tuple[Leaf, str]]:
    """The level-0 gists as leaves, each with its text (queries/areas_gist_leaves.cypher)."""
    for row in store.graph.query("areas_gist_leaves"):
        leaf = Leaf(
            row["id"],
            "gist",
            row["x"],
            row["y"],
            row["z"] or 0.0,
            row["t_start"],
            row["t_end"],
            row["layer"],
        )
        yield leaf, row["text"] or ""
