"""What an export holds: the whole graph, or the observations a filter selects and what is
linked to them, read from the graph as Arrow tables (one per node table and per rel table)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from emem_graph.errors import InvalidInputError
from emem_graph.storage.graph import GraphDB

CORE_NODE_TABLES = ("Observation", "Episode", "Gist", "Entity")
CAPABILITY_NODE_TABLES = (
    "Position",  # entities' whereabouts over time (consolidation.whereabouts)
    "Place",  # the topological map (emem_graph.spatial)
    "User", "Knowledge", "Pattern", "ProfileObject", "ProfileLocation",  # the user profile
)  # fmt: skip
NODE_TABLES = CORE_NODE_TABLES + CAPABILITY_NODE_TABLES
"""The node tables an export holds (MemoryInfo and VectorSync are internal bookkeeping)."""
CORE_REL_TABLES = (
    "BELONGS_TO", "FOLLOWS", "SUBTASK_OF", "SUMMARIZES", "OBSERVED_IN", "COOCCURS_WITH",
)  # fmt: skip
CAPABILITY_REL_TABLES = (
    "WAS_AT", "CONNECTS", "AT_PLACE",
    "REFERS_TO", "ENTAILS", "TARGET", "COMPOSED_OF", "BEFORE", "GROUNDED_AS",
)  # fmt: skip
REL_TABLES = CORE_REL_TABLES + CAPABILITY_REL_TABLES
REL_ENDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "BELONGS_TO": (("Observation",), ("Episode",)),
    "FOLLOWS": (("Episode",), ("Episode",)),
    "SUBTASK_OF": (("Episode",), ("Episode",)),
    "SUMMARIZES": (("Gist",), ("Observation", "Gist")),
    "OBSERVED_IN": (("Entity",), ("Observation",)),
    "COOCCURS_WITH": (("Entity",), ("Entity",)),
    "WAS_AT": (("Entity",), ("Position",)),
    "CONNECTS": (("Place",), ("Place",)),
    "AT_PLACE": (("Observation", "Entity"), ("Place",)),
    "REFERS_TO": (("User",), ("Knowledge",)),
    "ENTAILS": (("Knowledge",), ("Pattern",)),
    "TARGET": (("Pattern",), ("ProfileObject", "ProfileLocation")),
    "COMPOSED_OF": (("Knowledge",), ("ProfileObject",)),
    "BEFORE": (("Pattern",), ("Pattern",)),
    "GROUNDED_AS": (("ProfileObject",), ("Entity",)),
}
"""The node tables at each end (from, to) of each rel table."""
EDGE_ENDS = ("from", "to", "from_table", "to_table")
"""Columns of the rel tables that name the ends of an edge rather than its properties."""

_ALL_NODES = {
    "Observation": "export_observations",
    "Episode": "export_episodes",
    "Gist": "export_gists",
    "Entity": "export_entities",
    **{table: f"export_{table.lower()}" for table in CAPABILITY_NODE_TABLES},
}
_LINKED_NODES = {
    "Episode": "export_linked_episodes",
    "Gist": "export_linked_gists",
    "Entity": "export_linked_entities",
}
_ALL_EDGES = {rel: f"export_{rel.lower()}" for rel in REL_TABLES}

Area = tuple[float, float, float] | tuple[float, float, float, float]
"""(x, y, radius): a circle; (xmin, ymin, xmax, ymax): a box. Metres."""


@dataclass(frozen=True)
class ExportFilter:
    """Which observations an export holds; every field narrows, None means no condition.

    Raises:
        InvalidInputError: an area that is neither 3 nor 4 finite numbers, a negative radius, an
            inverted box, or time_after later than time_before.
    """

    time_after: float | None = None
    time_before: float | None = None
    area: Area | None = None
    layer: str | None = None
    episode_id: str | None = None

    def __post_init__(self) -> None:
        given = [
            v for v in (self.time_after, self.time_before, *(self.area or ())) if v is not None
        ]
        try:
            finite = all(math.isfinite(float(v)) for v in given)
        except (TypeError, ValueError):
            finite = False
        if not finite:
            raise InvalidInputError(f"filter times and area must be finite numbers, got {given}")
        if self.area is not None:
            if len(self.area) == 3:
                if self.area[2] < 0:
                    raise InvalidInputError(f"the area's radius must be >= 0, got {self.area[2]}")
            elif len(self.area) == 4:
                xmin, ymin, xmax, ymax = self.area
                if xmin > xmax or ymin > ymax:
                    raise InvalidInputError(
                        f"the box must be (xmin, ymin, xmax, ymax) with min <= max, got {self.area}"
                    )
            else:
                raise InvalidInputError(
                    "area is (x, y, radius) or (xmin, ymin, xmax, ymax), "
                    f"got {len(self.area)} numbers"
                )
        if (
            self.time_after is not None
            and self.time_before is not None
            and self.time_after > self.time_before
        ):
            raise InvalidInputError(
                f"the time window is empty: after ({self.time_after}) is later than "
                f"before ({self.time_before})"
            )

    @property
    def selects_all(self) -> bool:
        """True when no condition is set: the export is the whole graph."""
        return all(
            v is None
            for v in (self.time_after, self.time_before, self.area, self.layer, self.episode_id)
        )

    def params(self) -> dict[str, Any]:
        """The $parameters of queries/export_filter_observations.cypher."""
        circle = self.area if self.area is not None and len(self.area) == 3 else None
        box = self.area if self.area is not None and len(self.area) == 4 else None
        cx, cy, radius = (float(v) for v in circle) if circle else (0.0, 0.0, 0.0)
        xmin, ymin, xmax, ymax = (float(v) for v in box) if box else (0.0, 0.0, 0.0, 0.0)
        return {
            "time_after": None if self.time_after is None else float(self.time_after),
            "time_before": None if self.time_before is None else float(self.time_before),
            "in_circle": circle is not None,
            "cx": cx,
            "cy": cy,
            "radius": radius,
            "in_box": box is not None,
            "xmin": xmin,
            "ymin": ymin,
            "xmax": xmax,
            "ymax": ymax,
            "layer": self.layer,
            "episode_id": self.episode_id,
        }

    def describe(self) -> dict[str, Any]:
        """The conditions that are set, for the export's metadata."""
        return {
            name: value
            for name, value in (
                ("time_after", self.time_after),
                ("time_before", self.time_before),
                ("area", list(self.area) if self.area is not None else None),
                ("layer", self.layer),
                ("episode_id", self.episode_id),
            )
            if value is not None
        }


@dataclass
class GraphSelection:
    """The nodes (all properties, ``id`` first) and edges (``from``, ``to``, properties) of an
    export, one Arrow table per node table and per rel table, every table present."""

    nodes: dict[str, pa.Table] = field(default_factory=dict)
    edges: dict[str, pa.Table] = field(default_factory=dict)

    def node_counts(self) -> dict[str, int]:
        """Rows per node table."""
        return {name: table.num_rows for name, table in self.nodes.items()}

    def edge_counts(self) -> dict[str, int]:
        """Rows per rel table."""
        return {name: table.num_rows for name, table in self.edges.items()}


def select_graph(graph: GraphDB, where: ExportFilter, *, progress: bool = True) -> GraphSelection:
    """Read what an export holds from the graph.

    With no condition: every node and edge. Otherwise the observations matching ``where``, the
    episodes they BELONG_TO, the gists that SUMMARIZE them (and gists of those gists), the
    entities OBSERVED_IN them, and every edge whose two ends are among those nodes.

    Args:
        graph: the memory's graph (opened read-only by the caller).
        where: the filter.
        progress: show a progress bar on stderr.
    """
    selection = GraphSelection()
    total = len(NODE_TABLES) + len(REL_TABLES)
    with tqdm(total=total, desc="reading graph", unit="table", disable=not progress) as bar:
        if where.selects_all:
            for table, query in _ALL_NODES.items():
                selection.nodes[table] = _node_table(graph.query_arrow(query))
                bar.update()
        else:
            observations = _node_table(
                graph.query_arrow("export_filter_observations", where.params())
            )
            selection.nodes["Observation"] = observations
            bar.update()
            ids = {"ids": observations.column("id").to_pylist()}
            for table, query in _LINKED_NODES.items():
                selection.nodes[table] = _node_table(graph.query_arrow(query, ids))
                bar.update()
            # The filter selects observations and what the core edges link to them (and the
            # stays of the entities among them); the other capability tables (places, user
            # profiles) come only with the whole graph.
            for table in CAPABILITY_NODE_TABLES:
                if table == "Position":  # the whereabouts of the entities selected
                    entities = {"ids": selection.nodes["Entity"].column("id").to_pylist()}
                    found = graph.query_arrow("export_linked_positions", entities)
                    selection.nodes[table] = _node_table(found)
                else:
                    selection.nodes[table] = _node_table(
                        graph.query_arrow(_ALL_NODES[table])
                    ).slice(0, 0)
                bar.update()
        for rel, query in _ALL_EDGES.items():
            edges = graph.query_arrow(query)
            if not where.selects_all:
                # Each rel table is read whole (one scan, ids only) and kept where both ends
                # were selected: no Cypher per end, and never an edge to a node left out.
                from_tables, to_tables = REL_ENDS[rel]
                keep = pc.and_(
                    pc.is_in(edges.column("from"), value_set=_ids(selection, from_tables)),
                    pc.is_in(edges.column("to"), value_set=_ids(selection, to_tables)),
                )
                edges = edges.filter(keep)
            selection.edges[rel] = edges
            bar.update()
    return selection


def _node_table(table: pa.Table) -> pa.Table:
    """Columns named as the node's properties ("n.text" -> "text")."""
    return table.rename_columns([name.split(".", 1)[-1] for name in table.column_names])


def _ids(selection: GraphSelection, tables: tuple[str, ...]) -> pa.Array:
    columns = [selection.nodes[t].column("id").combine_chunks() for t in tables]
    return pa.concat_arrays(columns) if columns else pa.array([], type=pa.string())
