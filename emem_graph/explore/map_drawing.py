"""The map's parts drawn on matplotlib axes: gist extents, trajectory, layers, entities.

Pure drawing: the records come in as typed columns (mapping.py reads them from the memory),
the axes come from a Figure with its own canvas (no pyplot state, safe across threads).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
import shapely.wkt
from matplotlib import colormaps, patheffects
from matplotlib.collections import LineCollection, PatchCollection, PathCollection
from matplotlib.patches import Circle, Patch
from matplotlib.patches import Polygon as PolygonPatch
from matplotlib.transforms import Bbox
from shapely.errors import ShapelyError
from shapely.geometry import MultiPolygon, Polygon

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_POINTS = 20_000
"""Observation markers drawn at most; beyond, an evenly spaced (in time) subset is drawn."""
MAX_TRAJECTORY = 50_000
"""Trajectory vertices drawn at most; beyond, an evenly spaced subset (first and last kept)."""
MAX_ENTITY_LABELS = 40
"""Entities labelled at most (the most often seen); the rest are markers only."""
MIN_GIST_RADIUS = 0.25
"""Metres: a gist without extent and of radius 0 is still drawn as a visible circle."""

_CROSS_LAYER = (0.45, 0.45, 0.45, 1.0)
_TEXT_HALO = [patheffects.withStroke(linewidth=3, foreground="white")]
_LABEL_SPOTS = (  # offset in points, horizontal and vertical alignment: tried in this order
    ((6, 4), "left", "bottom"),
    ((6, -4), "left", "top"),
    ((-6, 4), "right", "bottom"),
    ((-6, -4), "right", "top"),
    ((9, 0), "left", "center"),
    ((-9, 0), "right", "center"),
    ((0, 8), "center", "bottom"),
    ((0, -8), "center", "top"),
    ((6, 16), "left", "bottom"),
    ((-6, 16), "right", "bottom"),
    ((6, -16), "left", "top"),
    ((-6, -16), "right", "top"),
    ((0, 22), "center", "bottom"),
    ((0, -22), "center", "top"),
)


@dataclass(frozen=True)
class Bounds:
    """The part of the plane to draw (metres); with ``circle`` (x, y, radius), the box is the
    circle's bounding box."""

    xmin: float
    xmax: float
    ymin: float
    ymax: float
    circle: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class ObservationColumns:
    """Observations in time order, one array per column."""

    x: np.ndarray
    y: np.ndarray
    t: np.ndarray
    layer: np.ndarray
    perception: np.ndarray
    """True where the observation is a perception (it moves the robot: the trajectory)."""


@dataclass(frozen=True)
class MapEntity:
    name: str
    x: float
    y: float
    observation_count: int


@dataclass(frozen=True)
class MapGist:
    x: float
    y: float
    radius: float
    extent_wkt: str | None
    layer: str | None
    level: int


@dataclass(frozen=True)
class MapTopology:
    """The topological map: places, CONNECTS edges as segments, and a route."""

    place_x: np.ndarray
    place_y: np.ndarray
    segments: list[tuple[tuple[float, float], tuple[float, float]]]
    route_x: list[float]
    route_y: list[float]
    route_label: str | None = None


@dataclass(frozen=True)
class Drawn:
    """What draw_map put on the axes."""

    layers: dict[str, int]
    """Observations per layer (all that matched, not only the markers drawn)."""
    points: int
    labels: int


def draw_map(
    axes: Axes,
    observations: ObservationColumns,
    entities: list[MapEntity],
    gists: list[MapGist],
    bounds: Bounds | None,
    topology: MapTopology | None = None,
) -> Drawn:
    """Draw everything on ``axes`` (limits: ``bounds``, else fitted to what is drawn); with
    ``topology``, also the places, their CONNECTS edges and a route over them."""
    gist_layers = {g.layer for g in gists if g.layer is not None}
    layer_names = sorted(set(observations.layer.tolist()) | gist_layers)
    palette = colormaps["tab10" if len(layer_names) <= 10 else "tab20"]
    colours = {name: palette(i % palette.N) for i, name in enumerate(layer_names)}
    handles: list[Any] = []
    extents: list[tuple[float, float, float, float]] = []

    extents += _draw_gists(axes, gists, colours, handles)
    _draw_trajectory(axes, observations, handles)
    layers, points = _draw_points(axes, observations, colours, handles)
    if topology is not None:
        extents += _draw_topology(axes, topology, handles)
    if len(observations.x):
        xs, ys = observations.x, observations.y
        extents.append((xs.min(), xs.max(), ys.min(), ys.max()))
    if entities:
        ex = np.array([e.x for e in entities])
        ey = np.array([e.y for e in entities])
        axes.scatter(
            ex,
            ey,
            s=55,
            marker="D",
            color="gold",
            edgecolors="black",
            linewidths=1.0,
            zorder=7,
            label=f"entity ({len(entities)})",
        )
        handles.append(axes.collections[-1])
        extents.append((ex.min(), ex.max(), ey.min(), ey.max()))

    set_limits(axes, bounds, extents)
    if bounds is not None and bounds.circle is not None:
        cx, cy, radius = bounds.circle
        axes.add_patch(Circle((cx, cy), radius, fill=False, ls=":", ec="0.5", lw=1.0, zorder=0))
        handles.append(Patch(fill=False, ls=":", ec="0.5", label="area"))
    labels = _label_entities(axes, entities[:MAX_ENTITY_LABELS])
    axes.set_xlabel("x (m)")
    axes.set_ylabel("y (m)")
    axes.grid(True, color="0.92", lw=0.6)
    axes.set_axisbelow(True)
    if handles:
        legend = axes.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            fontsize=9,
            frameon=False,
        )
        for handle in legend.legend_handles:  # markers as large as readable, whatever the data
            if isinstance(handle, PathCollection):
                handle.set_sizes([40.0])
    return Drawn(layers=layers, points=points, labels=labels)


def _draw_gists(
    axes: Axes, gists: list[MapGist], colours: dict[str, Any], handles: list[Any]
) -> list[tuple[float, float, float, float]]:
    if not gists:
        return []
    patches = [_gist_patch(g) for g in gists]
    rgba = [colours.get(g.layer, _CROSS_LAYER) if g.layer else _CROSS_LAYER for g in gists]
    axes.add_collection(
        PatchCollection(
            patches,
            facecolors=[(*c[:3], 0.07) for c in rgba],
            edgecolors=[(*c[:3], 0.6) for c in rgba],
            linewidths=[1.6 if g.level > 0 else 0.9 for g in gists],
            linestyles="--",
            zorder=1,
        )
    )
    handles.append(
        Patch(fc=(*_CROSS_LAYER[:3], 0.07), ec=_CROSS_LAYER, ls="--", label=f"gist ({len(gists)})")
    )
    return [_patch_extent(p) for p in patches]


def _draw_topology(
    axes: Axes, topology: MapTopology, handles: list[Any]
) -> list[tuple[float, float, float, float]]:
    extents: list[tuple[float, float, float, float]] = []
    if topology.segments:
        axes.add_collection(
            LineCollection(topology.segments, colors="0.35", linewidths=0.9, zorder=4)
        )
        handles.append(axes.collections[-1])
        handles[-1].set_label(f"CONNECTS ({len(topology.segments)})")
    if len(topology.place_x):
        axes.scatter(
            topology.place_x,
            topology.place_y,
            s=9,
            color="0.15",
            zorder=5,
            label=f"place ({len(topology.place_x)})",
        )
        handles.append(axes.collections[-1])
        extents.append(
            (
                float(topology.place_x.min()),
                float(topology.place_x.max()),
                float(topology.place_y.min()),
                float(topology.place_y.max()),
            )
        )
    if len(topology.route_x) >= 2:
        (line,) = axes.plot(
            topology.route_x,
            topology.route_y,
            color="crimson",
            lw=3.0,
            alpha=0.85,
            zorder=8,
            solid_capstyle="round",
            label=topology.route_label or "route",
        )
        handles.append(line)
        axes.scatter(
            [topology.route_x[0], topology.route_x[-1]],
            [topology.route_y[0], topology.route_y[-1]],
            s=70,
            marker="o",
            color=["white", "crimson"],
            edgecolors="crimson",
            linewidths=2.0,
            zorder=9,
        )
    return extents


def _draw_trajectory(axes: Axes, observations: ObservationColumns, handles: list[Any]) -> None:
    walk = np.flatnonzero(observations.perception)
    if len(walk) < 2:
        return
    keep = walk[thin(len(walk), MAX_TRAJECTORY)]
    (line,) = axes.plot(
        observations.x[keep],
        observations.y[keep],
        color="0.3",
        lw=0.9,
        alpha=0.75,
        zorder=2,
        label="trajectory",
    )
    handles.append(line)
    for index, marker, colour, label in (
        (walk[0], "o", "green", "start"),
        (walk[-1], "s", "red", "end"),
    ):
        (end,) = axes.plot(
            observations.x[index],
            observations.y[index],
            marker,
            ms=10,
            mfc="none",
            mec=colour,
            mew=2,
            zorder=6,
            label=label,
        )
        handles.append(end)


def _draw_points(
    axes: Axes, observations: ObservationColumns, colours: dict[str, Any], handles: list[Any]
) -> tuple[dict[str, int], int]:
    """Observations as markers per layer: the largest layers first, so that rarer ones (often
    taken at the same places) stay visible on top. Body-state layers are crosses."""
    shown = thin(len(observations.x), MAX_POINTS)
    size = float(np.clip(8000.0 / max(len(shown), 1), 6.0, 36.0))
    counts = Counter(str(name) for name in observations.layer.tolist())
    entries = []
    for order, name in enumerate(sorted(counts, key=lambda n: (-counts[n], n))):
        here = shown[observations.layer[shown] == name]
        body = not observations.perception[observations.layer == name].any()
        label = f"{_short(name)} ({counts[name]})" + (", body state" if body else "")
        style = {"marker": "x", "linewidths": 1.1} if body else {"edgecolors": "white"}
        axes.scatter(
            observations.x[here],
            observations.y[here],
            s=size,
            color=colours[name],
            alpha=0.9,
            zorder=3 + order / 100,
            label=label,
            **({"linewidths": 0.4} | style),
        )
        entries.append((name, axes.collections[-1]))
    handles.extend(handle for _, handle in sorted(entries, key=lambda e: e[0]))
    return dict(sorted(counts.items())), len(shown)


def _label_entities(axes: Axes, entities: list[MapEntity]) -> int:
    """Label each entity "name (times seen)" at the first spot around its marker that covers
    no other label or marker (else the least covered one)."""
    if not entities:
        return 0
    renderer = axes.get_figure().canvas.get_renderer()  # type: ignore[union-attr]
    frame = axes.get_window_extent(renderer)
    pad = 6.0 * axes.get_figure().dpi / 72  # type: ignore[union-attr]
    markers = [
        Bbox.from_bounds(px - pad, py - pad, 2 * pad, 2 * pad)
        for px, py in axes.transData.transform([(e.x, e.y) for e in entities])
    ]
    taken: list[Bbox] = []
    for index, entity in enumerate(entities):
        text = axes.annotate(
            f"{_short(entity.name)} ({entity.observation_count})",
            (entity.x, entity.y),
            xytext=_LABEL_SPOTS[0][0],
            textcoords="offset points",
            fontsize=8.5,
            zorder=8,
            path_effects=_TEXT_HALO,
        )
        obstacles = taken + markers[:index] + markers[index + 1 :]
        best: tuple[float, int] | None = None
        for spot, (offset, ha, va) in enumerate(_LABEL_SPOTS):
            _place(text, offset, ha, va)
            box = text.get_window_extent(renderer)
            cost = sum(_overlap(box, other) for other in obstacles)
            cost += box.width * box.height - _overlap(box, frame)  # outside the axes
            if best is None or cost < best[0]:
                best = (cost, spot)
            if cost == 0:
                break
        assert best is not None
        _place(text, *_LABEL_SPOTS[best[1]])
        taken.append(text.get_window_extent(renderer))
    return len(entities)


def _place(text: Any, offset: tuple[int, int], ha: str, va: str) -> None:
    text.xyann = offset
    text.set_horizontalalignment(ha)
    text.set_verticalalignment(va)


def _overlap(a: Bbox, b: Bbox) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0


def _gist_patch(gist: MapGist) -> PolygonPatch | Circle:
    """The gist's extent polygon, or a circle of its radius where it has no (readable) one."""
    if gist.extent_wkt:
        try:
            shape = shapely.wkt.loads(gist.extent_wkt)
        except ShapelyError:
            shape = None
        if isinstance(shape, MultiPolygon) and not shape.is_empty:
            shape = max(shape.geoms, key=lambda part: part.area)
        if isinstance(shape, Polygon) and not shape.is_empty:
            return PolygonPatch(np.asarray(shape.exterior.coords)[:, :2], closed=True)
    return Circle((gist.x, gist.y), max(gist.radius, MIN_GIST_RADIUS))


def _patch_extent(patch: PolygonPatch | Circle) -> tuple[float, float, float, float]:
    if isinstance(patch, Circle):
        (x, y), r = patch.center, patch.radius
        return x - r, x + r, y - r, y + r
    xy = patch.get_xy()
    return xy[:, 0].min(), xy[:, 0].max(), xy[:, 1].min(), xy[:, 1].max()


def set_limits(
    axes: Axes, bounds: Bounds | None, extents: list[tuple[float, float, float, float]]
) -> None:
    """Limits that show ``bounds`` (else every extent, with a margin) at equal aspect, grown to
    the axes' shape so that the axes box keeps its place (matplotlib would shrink it)."""
    if bounds is not None:
        xmin, xmax, ymin, ymax = bounds.xmin, bounds.xmax, bounds.ymin, bounds.ymax
    elif extents:
        spans = np.array(extents, dtype=np.float64)
        xmin, xmax = float(spans[:, 0].min()), float(spans[:, 1].max())
        ymin, ymax = float(spans[:, 2].min()), float(spans[:, 3].max())
        margin = max(0.05 * max(xmax - xmin, ymax - ymin), 1.0)
        xmin, xmax, ymin, ymax = xmin - margin, xmax + margin, ymin - margin, ymax + margin
    else:
        xmin, xmax, ymin, ymax = -1.0, 1.0, -1.0, 1.0
    box = axes.get_position()
    width, height = axes.get_figure().get_size_inches()  # type: ignore[union-attr]
    shape = (box.width * width) / (box.height * height)
    xspan, yspan = xmax - xmin, ymax - ymin
    if xspan / yspan < shape:
        grow = (yspan * shape - xspan) / 2
        xmin, xmax = xmin - grow, xmax + grow
    else:
        grow = (xspan / shape - yspan) / 2
        ymin, ymax = ymin - grow, ymax + grow
    axes.set_xlim(xmin, xmax)
    axes.set_ylim(ymin, ymax)
    axes.set_aspect("equal", adjustable="box")


def thin(n: int, limit: int) -> np.ndarray:
    """Indices 0..n-1, thinned evenly to at most ``limit`` (first and last kept)."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def _short(name: str, limit: int = 28) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def title_text(
    name: str, span: tuple[float, float] | None, filters: list[str], *, windowed: bool = False
) -> str:
    """The map's title: the memory's name, the time span shown (the window asked for, when
    ``windowed``), the other filters applied."""
    lines = [f"Memory map: {name}"]
    if span is not None:
        lines.append(("window: " if windowed else "") + _format_span(*span))
    if filters:
        lines.append("; ".join(filters))
    return "\n".join(lines)


def _format_span(start: float, end: float) -> str:
    length = _format_duration(end - start)
    if start < 1e8:  # a simulation clock that started near 0, not a date
        return f"t = {start:.1f} s to {end:.1f} s ({length})"
    first = datetime.fromtimestamp(start, tz=timezone.utc)
    last = datetime.fromtimestamp(end, tz=timezone.utc)
    until = last.strftime("%H:%M:%S" if first.date() == last.date() else "%Y-%m-%d %H:%M:%S")
    return f"{first:%Y-%m-%d %H:%M:%S} to {until} UTC ({length})"


def _format_duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
