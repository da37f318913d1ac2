"""The map: a top-down picture of a memory (trajectory, observations by layer, entities, gists).

render_map opens the memory read-only, reads what the filters select with the map_* queries,
and draws it (map_drawing.py) on a matplotlib Figure with its own Agg canvas: no pyplot state,
so maps may be rendered from several threads, and no display is needed.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tqdm import tqdm

from emem_graph import validation
from emem_graph.errors import InvalidInputError
from emem_graph.explore.map_drawing import (
    Bounds,
    MapEntity,
    MapGist,
    MapTopology,
    ObservationColumns,
    draw_map,
    title_text,
)
from emem_graph.explore.readonly import ReadOnlyMemory
from emem_graph.models import AGENT_NOTE, INTEROCEPTION
from emem_graph.outputs import claim_file, record_file
from emem_graph.retrieval.timeparse import parse_time_window

MAX_PIXELS_PER_SIDE = 10_000
_AXES_RECT = (0.08, 0.07, 0.64, 0.82)
"""Axes position in figure fractions, fixed so that the legend (right) never covers data and
two maps of the same area and size share their data-to-pixel transform."""

Area = tuple[float, float, float] | tuple[float, float, float, float]
"""(x, y, radius): a circle; (xmin, ymin, xmax, ymax): a box. Metres."""


@dataclass(frozen=True)
class MapSummary:
    """What a map shows, and where its data lies in the image.

    Counts are of what matched the filters; ``points_drawn`` is fewer than ``observations``
    when the markers were downsampled.
    """

    path: Path
    observations: int
    points_drawn: int
    downsampled: bool
    trajectory_points: int
    body_state: int
    layers: dict[str, int]
    entities: int
    entity_labels: int
    gists: int
    time_span: tuple[float, float] | None
    """First and last time shown: the window asked for, else the observations' own span."""
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    axes_box: tuple[float, float, float, float]
    """The axes in image pixels: left, bottom, right, top, measured from the bottom left."""
    image_size: tuple[int, int]
    """Width and height in pixels."""
    empty: bool
    """Nothing matched (an empty memory, or a window or area with nothing in it)."""
    places: int = 0
    """Places of the topological map drawn (with ``places`` or a route)."""
    route_length: float | None = None
    """Length in metres of the route drawn over CONNECTS (None: no route asked, or none)."""

    def to_pixel(self, x: float, y: float) -> tuple[float, float]:
        """Image (column, row) of the map point (x, y) in metres; row 0 is the top row."""
        left, bottom, right, top = self.axes_box
        column = left + (x - self.xlim[0]) / (self.xlim[1] - self.xlim[0]) * (right - left)
        up = bottom + (y - self.ylim[0]) / (self.ylim[1] - self.ylim[0]) * (top - bottom)
        return column, self.image_size[1] - up

    def describe(self) -> str:
        """One line for the command line: what was drawn, and where."""
        if self.empty:
            return f"wrote {self.path}: nothing to draw (an empty memory, window or area)"
        shown = f"{self.observations} observations"
        if self.downsampled:
            shown += f" ({self.points_drawn} drawn)"
        layers = ", ".join(f"{name} {n}" for name, n in self.layers.items())
        text = (
            f"wrote {self.path}: {shown} in {len(self.layers)} "
            f"layer{'' if len(self.layers) == 1 else 's'} ({layers}), "
            f"{self.entities} entities, {self.gists} gists"
        )
        if self.places:
            text += f", {self.places} places"
        if self.route_length is not None:
            text += f", a route of {self.route_length:.1f} m"
        return text


def render_map(
    directory: str | Path,
    out_png: str | Path,
    *,
    time_after: str | float | None = None,
    time_before: str | float | None = None,
    area: Area | None = None,
    layers: Sequence[str] | None = None,
    size: tuple[float, float] = (10, 10),
    dpi: int = 120,
    progress: bool = True,
    places: bool = False,
    route: tuple[float, float, float, float] | None = None,
) -> MapSummary:
    """Draw a top-down map of the memory in ``directory`` into the PNG file ``out_png``.

    The memory is opened read-only (close a process that holds it read-write first). Drawn:
    the trajectory (perception observations in time order), every observation as a point
    coloured by layer, entities labelled "name (times seen)", gists as their extents.

    Args:
        directory: the memory's directory.
        out_png: the image to write (a .png path in an existing, writable directory).
        time_after, time_before: the time window: Unix timestamps, or relative times as the
            tools take them ("-10m", "yesterday"), counted back from the memory's newest
            observation or entity sighting (a memory may be old, or recorded on a simulation
            clock).
        area: a circle (x, y, radius) or a box (xmin, ymin, xmax, ymax) in metres: what is
            drawn and the axes' extent. Default: everything, axes fitted to it.
        layers: observation layers to draw (default all); gists of other layers are left out,
            cross-layer gists and entities are always drawn.
        size: figure size in inches (width, height).
        dpi: pixels per inch.
        progress: show a progress bar on stderr.
        places: also draw the topological map: places and their CONNECTS edges.
        route: (x1, y1, x2, y2): also draw the shortest route over CONNECTS between the places
            nearest those two points (queries/spatial_route.cypher), with the places.

    Returns:
        A MapSummary: counts of what was drawn and the data-to-pixel transform.

    Raises:
        InvalidInputError: NaN or infinite numbers, a non-positive radius or size, a window
            whose time_after is later than its time_before (a TimeParseError, as the tools
            raise), a directory that holds no memory, an output that cannot be written.
        StorageError: the memory cannot be opened (e.g. another process writes it).
    """
    root = Path(directory)
    out = Path(out_png)
    bounds = _bounds(area)
    layer_filter = _layers(layers)
    width, height = _size(size, dpi)
    _check_output(out)
    ends = None if route is None else _route_ends(route)
    with tqdm(total=3, desc="map", unit="step", disable=not progress) as bar:
        selection = _read(
            root, time_after, time_before, bounds, layer_filter, places or ends is not None, ends
        )
        bar.update()
        figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        FigureCanvasAgg(figure)
        axes = figure.add_axes(_AXES_RECT)
        observations = selection.observations
        drawn = draw_map(
            axes, observations, selection.entities, selection.gists, bounds, selection.topology
        )
        span = _span_shown(selection.window, observations.t)
        name = root.resolve().name or str(root)
        windowed = selection.window != (None, None)
        title = title_text(name, span, _filter_lines(bounds, layers), windowed=windowed)
        axes.set_title(title, fontsize=10.5, loc="left")
        nothing = not (len(observations.x) or selection.entities or selection.gists)
        if nothing:
            message = "empty memory" if selection.memory_empty else "nothing in this window / area"
            axes.text(
                0.5,
                0.5,
                message,
                transform=axes.transAxes,
                ha="center",
                va="center",
                fontsize=18,
                color="0.35",
            )
        bar.update()
        try:
            claim_file(out, "map")
            figure.savefig(out, dpi=dpi, format="png")
            record_file(out)
        except OSError as exc:
            raise InvalidInputError(f"cannot write the map to {out}: {exc}") from exc
        bar.update()
    box = axes.get_window_extent()
    xlim, ylim = axes.get_xlim(), axes.get_ylim()
    return MapSummary(
        path=out,
        observations=len(observations.x),
        points_drawn=drawn.points,
        downsampled=drawn.points < len(observations.x),
        trajectory_points=int(observations.perception.sum()),
        body_state=selection.body_state,
        layers=drawn.layers,
        entities=len(selection.entities),
        entity_labels=drawn.labels,
        gists=len(selection.gists),
        time_span=span,
        xlim=(float(xlim[0]), float(xlim[1])),
        ylim=(float(ylim[0]), float(ylim[1])),
        axes_box=(float(box.x0), float(box.y0), float(box.x1), float(box.y1)),
        image_size=(width, height),
        empty=nothing,
        places=0 if selection.topology is None else len(selection.topology.place_x),
        route_length=selection.route_length,
    )


@dataclass(frozen=True)
class _Selection:
    """What the filters selected from the memory."""

    observations: ObservationColumns
    body_state: int
    entities: list[MapEntity]
    gists: list[MapGist]
    window: tuple[float | None, float | None]
    memory_empty: bool
    topology: MapTopology | None = None
    route_length: float | None = None


def _read(
    directory: Path,
    time_after: str | float | None,
    time_before: str | float | None,
    bounds: Bounds | None,
    layer_filter: dict[str, list[str]],
    with_places: bool = False,
    route: tuple[float, float, float, float] | None = None,
) -> _Selection:
    """Open the graph read-only, resolve the window on the memory's clock, run the queries."""
    with ReadOnlyMemory(directory, with_vectors=False) as memory:
        graph = memory.graph
        span = graph.query("map_time_span")[0]
        # A window that ends before it starts is refused as the tools refuse it (swap them).
        after, before = parse_time_window(time_after, time_before, _memory_now(span))
        params = _filter_params(after, before, bounds)
        # Arrow: 100k rows in ~0.2 s, where rows as dicts take ~1.4 s.
        table = graph.query_arrow("map_observations", {**params, **layer_filter})
        entities = graph.query("map_entities", params)
        gists = graph.query("map_gists", {**params, **layer_filter})
        topology, route_length = _read_topology(graph, route) if with_places else (None, None)
    source = table.column("source_type").to_numpy(zero_copy_only=False)
    # Positions an older version stored beyond validation.MAX_COORDINATE are drawn at the
    # bound: matplotlib refuses infinite axis limits (the map failed for the whole memory).
    bound, clamp = validation.MAX_COORDINATE, validation.clamp_coordinate
    return _Selection(
        observations=ObservationColumns(
            x=np.clip(
                np.nan_to_num(table.column("x").to_numpy().astype(np.float64)), -bound, bound
            ),
            y=np.clip(
                np.nan_to_num(table.column("y").to_numpy().astype(np.float64)), -bound, bound
            ),
            t=table.column("timestamp").to_numpy().astype(np.float64),
            layer=table.column("layer").to_numpy(zero_copy_only=False).astype(object),
            perception=(source != INTEROCEPTION) & (source != AGENT_NOTE),
        ),
        body_state=int((source == INTEROCEPTION).sum()),
        entities=[
            MapEntity(e["name"], clamp(e["x"]), clamp(e["y"]), int(e["observation_count"] or 0))
            for e in entities
        ],
        gists=[
            MapGist(
                clamp(g["x"]),
                clamp(g["y"]),
                float(g["radius"] or 0.0),
                g["extent_wkt"],
                g["layer"],
                int(g["level"] or 0),
            )
            for g in gists
        ],
        window=(after, before),
        memory_empty=not (span["observations"] or span["entities"] or span["gists"]),
        topology=topology,
        route_length=route_length,
    )


def _read_topology(
    graph: Any, route: tuple[float, float, float, float] | None
) -> tuple[MapTopology, float | None]:
    """The places and CONNECTS edges (spatial_* queries), and the shortest route between the
    places nearest the route's two points."""
    rows = graph.query("spatial_places")
    ids = [row["id"] for row in rows]
    xs = np.array([validation.clamp_coordinate(float(row["x"])) for row in rows])
    ys = np.array([validation.clamp_coordinate(float(row["y"])) for row in rows])
    where = {place: i for i, place in enumerate(ids)}
    segments = [
        ((xs[where[e["a"]]], ys[where[e["a"]]]), (xs[where[e["b"]]], ys[where[e["b"]]]))
        for e in graph.query("spatial_connections")
    ]
    route_x: list[float] = []
    route_y: list[float] = []
    length = None
    label = None
    if route is not None and ids:
        start = ids[int(np.argmin((xs - route[0]) ** 2 + (ys - route[1]) ** 2))]
        goal = ids[int(np.argmin((xs - route[2]) ** 2 + (ys - route[3]) ** 2))]
        found: list[dict[str, Any]] = []
        if start != goal:
            graph.query("spatial_path_depth")
            found = graph.query("spatial_route", {"start": start, "goal": goal})
        if found:
            route_x = [route[0], *map(float, found[0]["xs"]), route[2]]
            route_y = [route[1], *map(float, found[0]["ys"]), route[3]]
            length = float(found[0]["length"])
            label = f"route ({length:.1f} m)"
    return MapTopology(xs, ys, segments, route_x, route_y, label), length


def _route_ends(route: Sequence[float]) -> tuple[float, float, float, float]:
    values = tuple(route)
    if len(values) != 4:
        raise InvalidInputError(f"route must be (x1, y1, x2, y2), got {len(values)} values")
    x1, y1, x2, y2 = (_finite(n, v) for n, v in zip(("x1", "y1", "x2", "y2"), values, strict=True))
    return x1, y1, x2, y2


# --- inputs ------------------------------------------------------------------------------------


def _finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise InvalidInputError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    return number


def _bounds(area: Area | None) -> Bounds | None:
    if area is None:
        return None
    values = tuple(area)
    if len(values) == 3:
        x, y, radius = (_finite(n, v) for n, v in zip(("x", "y", "radius"), values, strict=True))
        if radius <= 0:
            raise InvalidInputError(f"the area's radius must be positive, got {radius}")
        return Bounds(x - radius, x + radius, y - radius, y + radius, (x, y, radius))
    if len(values) == 4:
        names = ("xmin", "ymin", "xmax", "ymax")
        xmin, ymin, xmax, ymax = (_finite(n, v) for n, v in zip(names, values, strict=True))
        if xmin >= xmax or ymin >= ymax:
            raise InvalidInputError(f"the area box needs xmin < xmax and ymin < ymax, got {values}")
        return Bounds(xmin, xmax, ymin, ymax, None)
    raise InvalidInputError(
        f"area must be (x, y, radius) or (xmin, ymin, xmax, ymax), got {len(values)} values"
    )


def _layers(layers: Sequence[str] | None) -> dict[str, list[str]]:
    if layers is None:
        return {"layers": []}
    if isinstance(layers, str):
        layers = [layers]
    names = list(layers)
    if not names or any(not isinstance(n, str) or not n.strip() for n in names):
        raise InvalidInputError(f"layers must be non-empty layer names, got {names!r}")
    return {"layers": names}


def _size(size: tuple[float, float], dpi: int) -> tuple[int, int]:
    if isinstance(dpi, bool) or not isinstance(dpi, int) or dpi <= 0:
        raise InvalidInputError(f"dpi must be a positive whole number, got {dpi!r}")
    if len(size) != 2:
        raise InvalidInputError(f"size must be (width, height) in inches, got {size!r}")
    width, height = (_finite(n, v) for n, v in zip(("width", "height"), size, strict=True))
    pixels = (round(width * dpi), round(height * dpi))
    if min(pixels) < 100 or max(pixels) > MAX_PIXELS_PER_SIDE:
        raise InvalidInputError(
            f"size x dpi gives {pixels[0]}x{pixels[1]} pixels; each side must be 100 to "
            f"{MAX_PIXELS_PER_SIDE}"
        )
    return pixels


def _check_output(out: Path) -> None:
    if out.suffix.lower() != ".png":
        raise InvalidInputError(
            f"the map is a PNG image: give a file name ending in .png, not {out}"
        )
    if out.is_dir():
        raise InvalidInputError(f"{out} is a directory; give a file name ending in .png")
    claim_file(out, "map")  # never inside a memory, never over a file no map wrote
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InvalidInputError(f"cannot write {out}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise InvalidInputError(f"cannot write {out}: permission denied")


def _memory_now(span: dict[str, Any]) -> float:
    """The memory's "now" for relative times: its newest observation or entity sighting (the
    wall clock only for a memory with neither)."""
    times = [float(span[key]) for key in ("last", "entity_last") if span[key] is not None]
    return max(times) if times else time.time()


def _filter_params(
    after: float | None, before: float | None, region: Bounds | None
) -> dict[str, Any]:
    box = region or Bounds(0.0, 0.0, 0.0, 0.0, None)
    cx, cy, radius = region.circle if region and region.circle else (0.0, 0.0, 0.0)
    return {
        "time_after": after,
        "time_before": before,
        "in_box": region is not None,
        "xmin": box.xmin,
        "xmax": box.xmax,
        "ymin": box.ymin,
        "ymax": box.ymax,
        "in_circle": region is not None and region.circle is not None,
        "cx": cx,
        "cy": cy,
        "radius": radius,
    }


def _span_shown(
    window: tuple[float | None, float | None], times: np.ndarray
) -> tuple[float, float] | None:
    start = window[0] if window[0] is not None else (float(times.min()) if len(times) else None)
    end = window[1] if window[1] is not None else (float(times.max()) if len(times) else None)
    return None if start is None or end is None else (start, end)


def _filter_lines(bounds: Bounds | None, layers: Sequence[str] | None) -> list[str]:
    """The area and layer filters in words, for the title."""
    lines = []
    if bounds is not None and bounds.circle is not None:
        x, y, radius = bounds.circle
        lines.append(f"within {radius:g} m of ({x:g}, {y:g})")
    elif bounds is not None:
        lines.append(f"box x {bounds.xmin:g}..{bounds.xmax:g}, y {bounds.ymin:g}..{bounds.ymax:g}")
    if layers:
        lines.append("layers: " + ", ".join(layers))
    return lines
