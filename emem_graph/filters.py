"""The filter type of every search: which kinds, layers, source types, tiers, episode, time span
and area a search may return.

VectorFilter is what a capability, the retrieval tools and the facade hand the store; the vector
store turns it into a LanceDB SQL predicate (to_sql) and the in-process indexes test rows against
it (admits_row), both with the same semantics. SQL is built here from typed values only (LanceDB
has no parameter binding): numbers are checked finite and strings quoted, never pasted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from emem_graph.errors import InvalidInputError
from emem_graph.models import INTEROCEPTION

FILTER_PARAMETERS: tuple[str, ...] = (
    "layer",
    "time_after",
    "time_before",
    "near_x",
    "near_y",
    "spatial_radius",
    "episode_id",
)
"""The search filters a tool may take, in the order its parameters list them (the tool schemas
in retrieval/schemas.py describe them; perception_filter turns their values into a
VectorFilter). A tool takes a subset of them."""

AREA_PARAMETERS: tuple[str, ...] = ("near_x", "near_y", "spatial_radius")
"""The area filter: a circle of spatial_radius around (near_x, near_y), all three or none."""


class FilterableRow(Protocol):
    """The columns of a stored row that a VectorFilter tests (the vector table's row)."""

    @property
    def kind(self) -> str: ...
    @property
    def layer(self) -> str | None: ...
    @property
    def source_type(self) -> str | None: ...
    @property
    def tier(self) -> str: ...
    @property
    def episode_id(self) -> str | None: ...
    @property
    def t(self) -> float: ...
    @property
    def t_end(self) -> float: ...
    @property
    def x(self) -> float: ...
    @property
    def y(self) -> float: ...


@dataclass(frozen=True)
class VectorFilter:
    """Prefilter of a vector or keyword search; every field narrows, None means no condition.

    Time is an overlap test against [t, t_end] (an observation has t == t_end; a gist spans its
    observations). Area is a circle (center + radius, tested exactly) or a box.
    """

    kinds: tuple[str, ...] | None = None
    layers: tuple[str, ...] | None = None
    source_types: tuple[str, ...] | None = None
    exclude_source_types: tuple[str, ...] | None = None
    tiers: tuple[str, ...] | None = None
    exclude_tiers: tuple[str, ...] | None = None
    episode_id: str | None = None
    time_after: float | None = None
    time_before: float | None = None
    center: tuple[float, float] | None = None
    radius: float | None = None
    box: tuple[float, float, float, float] | None = None
    """(xmin, xmax, ymin, ymax)"""

    @property
    def exclusions_only(self) -> bool:
        """True when the filter only leaves out source types or tiers (the default perception
        filter: no body state, nothing archived): it removes few rows, so a search may run
        unfiltered, oversampled, and drop those rows itself (see VectorStore.search)."""
        return (
            self.kinds is None
            and self.layers is None
            and self.source_types is None
            and self.tiers is None
            and self.episode_id is None
            and self.time_after is None
            and self.time_before is None
            and self.center is None
            and self.box is None
        )

    def admits(self, source_type: str | None, tier: str | None) -> bool:
        """Whether a row of this source type and tier passes the exclusions (NULL passes, as
        in to_sql)."""
        if self.exclude_source_types and source_type in self.exclude_source_types:
            return False
        return not (self.exclude_tiers and tier in self.exclude_tiers)

    def area_relaxed(self) -> VectorFilter | None:
        """This filter with its circle widened to the circle's bounding box, or None when it has
        no circle (or a box besides). The box alone is what the x and y indexes answer; testing
        the circle in SQL costs a pass over every row in the box (at 1M rows, a 1% area search:
        30 ms exact with the circle, 20 ms with the box alone)."""
        if self.center is None or self.radius is None or self.box is not None:
            return None
        r = _radius(self.radius)
        cx, cy = float(self.center[0]), float(self.center[1])
        return replace(self, center=None, radius=None, box=(cx - r, cx + r, cy - r, cy + r))

    def in_circle(self, x: float | None, y: float | None) -> bool:
        """Whether (x, y) passes the circle, computed as to_sql's SQL computes it (True when
        the filter has no circle; a row without a position fails a circle, as NULL does)."""
        if self.center is None or self.radius is None:
            return True
        if x is None or y is None:
            return False
        cx, cy = float(self.center[0]), float(self.center[1])
        r = float(self.radius)
        return (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r

    def admits_row(self, row: FilterableRow) -> bool:
        """Whether a row passes this filter, computed as to_sql's SQL computes it (NULL
        fails IN and equality, passes NOT IN)."""
        for value, values in (
            (row.kind, self.kinds),
            (row.layer, self.layers),
            (row.source_type, self.source_types),
            (row.tier, self.tiers),
        ):
            if values is not None and (value is None or value not in values):
                return False
        for value, values in (
            (row.source_type, self.exclude_source_types),
            (row.tier, self.exclude_tiers),
        ):
            if values and value is not None and value in values:
                return False
        if self.episode_id is not None and row.episode_id != self.episode_id:
            return False
        if self.time_after is not None and not row.t_end >= self.time_after:
            return False
        if self.time_before is not None and not row.t <= self.time_before:
            return False
        if self.box is not None:
            xmin, xmax, ymin, ymax = self.box
            if not (xmin <= row.x <= xmax and ymin <= row.y <= ymax):
                return False
        return self.in_circle(row.x, row.y)

    def to_sql(self) -> str | None:
        """The SQL predicate of this filter, or None when it has no condition."""
        clauses: list[str] = []
        for column, values, negate in (
            ("kind", self.kinds, False),
            ("layer", self.layers, False),
            ("source_type", self.source_types, False),
            ("source_type", self.exclude_source_types, True),
            ("tier", self.tiers, False),
            ("tier", self.exclude_tiers, True),
        ):
            if values is not None:
                clauses.append(sql_in(column, values, negate))
        if self.episode_id is not None:
            clauses.append(f"episode_id = {sql_quote(self.episode_id)}")
        if self.time_after is not None:
            clauses.append(f"t_end >= {_number(self.time_after)}")
        if self.time_before is not None:
            clauses.append(f"t <= {_number(self.time_before)}")
        if self.box is not None:
            xmin, xmax, ymin, ymax = (_number(v) for v in self.box)
            clauses.append(f"x >= {xmin} AND x <= {xmax} AND y >= {ymin} AND y <= {ymax}")
        if self.center is not None and self.radius is not None:
            cx, cy = (_number(v) for v in self.center)
            r = _radius(self.radius)
            # The box lets the BTREE indexes on x and y prune; the circle is then exact.
            clauses.append(
                f"x >= {_number(float(cx) - r)} AND x <= {_number(float(cx) + r)} AND "
                f"y >= {_number(float(cy) - r)} AND y <= {_number(float(cy) + r)} AND "
                f"(x - {cx}) * (x - {cx}) + (y - {cy}) * (y - {cy}) <= {_number(r * r)}"
            )
        return " AND ".join(f"({c})" for c in clauses) if clauses else None


def _radius(value: float) -> float:
    r = float(value)
    if r < 0 or not math.isfinite(r):
        raise InvalidInputError(f"radius must be a finite number >= 0, got {r}")
    return r


def _number(value: float) -> str:
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInputError(f"filter values must be finite numbers, got {value!r}")
    return repr(number)


def sql_quote(value: str) -> str:
    """A SQL string literal of value (quotes doubled; NUL refused)."""
    text = str(value)
    if "\x00" in text:
        raise InvalidInputError("filter strings must not contain NUL characters")
    return "'" + text.replace("'", "''") + "'"


def sql_in(column: str, values: Sequence[str], negate: bool) -> str:
    """``column IN (values)``, or with negate a NOT IN that keeps NULL rows."""
    if not values:
        return "TRUE" if negate else "FALSE"
    listed = ", ".join(sql_quote(v) for v in values)
    # NULL columns (a gist's source_type) must not vanish from a NOT IN filter.
    if negate:
        return f"({column} IS NULL OR {column} NOT IN ({listed}))"
    return f"{column} IN ({listed})"


def area_of(
    near_x: float | None, near_y: float | None, spatial_radius: float | None
) -> tuple[float, float, float] | None:
    """The area filter's circle (x, y, radius), or None when none of the three is given.

    Raises:
        InvalidInputError: some but not all of near_x, near_y and spatial_radius are given.
    """
    given = [v is not None for v in (near_x, near_y, spatial_radius)]
    if not any(given):
        return None
    if not all(given):
        raise InvalidInputError(
            "near_x, near_y and spatial_radius go together: give all three or none"
        )
    return float(near_x), float(near_y), float(spatial_radius)  # type: ignore[arg-type]


def perception_filter(
    *,
    kinds: tuple[str, ...] | None = None,
    layer: str | None = None,
    time_after: float | None = None,
    time_before: float | None = None,
    area: tuple[float, float, float] | None = None,
    episode_id: str | None = None,
    include_body_state: bool = False,
) -> VectorFilter:
    """The prefilter of a perception search from a tool's filter values (times already
    resolved to seconds, the area from area_of): archived rows never, body state only on
    request."""
    return VectorFilter(
        kinds=kinds,
        layers=None if layer is None else (layer,),
        exclude_source_types=None if include_body_state else (INTEROCEPTION,),
        exclude_tiers=("archived",),
        episode_id=episode_id,
        time_after=time_after,
        time_before=time_before,
        center=None if area is None else (area[0], area[1]),
        radius=None if area is None else area[2],
    )
