"""Plane geometry of the spatial tools: compass sectors, projection onto a route, waypoints.

World frame as in ROS (REP 103): x points east, y north, angles counter-clockwise from east.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shapely.geometry import LineString

COMPASS = {
    "east": 0.0,
    "northeast": 45.0,
    "north": 90.0,
    "northwest": 135.0,
    "west": 180.0,
    "southwest": 225.0,
    "south": 270.0,
    "southeast": 315.0,
}
"""Bearing of each compass direction in degrees, counter-clockwise from east (x)."""
SECTOR_HALF_WIDTH = 45.0
"""Degrees: a point is "west" of the anchor when its bearing is within this of west's."""


@dataclass(frozen=True)
class Projection:
    """Where a point lies relative to a route polyline."""

    along: float
    """Metres from the route's start to the point of the route nearest the point."""
    lateral: float
    """Signed distance from the route: positive on the left (seen walking along it)."""


def bearing(dx: float, dy: float) -> float:
    """Degrees in [0, 360), counter-clockwise from east, of the vector (dx, dy)."""
    return math.degrees(math.atan2(dy, dx)) % 360.0


def angle_between(a: float, b: float) -> float:
    """Smallest absolute difference of two bearings in degrees (0..180)."""
    difference = abs(a - b) % 360.0
    return min(difference, 360.0 - difference)


def in_sector(dx: float, dy: float, direction: str) -> bool:
    """Whether the vector (dx, dy) points within SECTOR_HALF_WIDTH of a compass direction."""
    return angle_between(bearing(dx, dy), COMPASS[direction]) <= SECTOR_HALF_WIDTH


def polyline_length(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Length of the polyline through the points (xs[i], ys[i])."""
    return sum(math.hypot(xs[i + 1] - xs[i], ys[i + 1] - ys[i]) for i in range(len(xs) - 1))


def project(xs: Sequence[float], ys: Sequence[float], x: float, y: float) -> Projection:
    """Project (x, y) onto the polyline: the arc length at its nearest point and the signed
    lateral distance (left positive). A one-point polyline gives along 0."""
    best: tuple[float, float, float] | None = None  # (distance², along, signed lateral)
    walked = 0.0
    if len(xs) == 1:
        return Projection(0.0, math.hypot(x - xs[0], y - ys[0]))
    for i in range(len(xs) - 1):
        ax, ay, bx, by = xs[i], ys[i], xs[i + 1], ys[i + 1]
        sx, sy = bx - ax, by - ay
        length2 = sx * sx + sy * sy
        t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((x - ax) * sx + (y - ay) * sy) / length2))
        px, py = ax + t * sx, ay + t * sy
        d2 = (x - px) ** 2 + (y - py) ** 2
        cross = sx * (y - ay) - sy * (x - ax)
        side = 1.0 if cross >= 0 else -1.0
        length = math.sqrt(length2)
        if best is None or d2 < best[0] - 1e-12:
            best = (d2, walked + t * length, side * math.sqrt(d2))
        walked += length
    assert best is not None
    return Projection(best[1], best[2])


def waypoints(
    xs: Sequence[float], ys: Sequence[float], tolerance: float
) -> list[tuple[float, float]]:
    """The corners of a polyline: points dropped where the line stays within ``tolerance``
    metres of the original (Douglas-Peucker), first and last always kept."""
    points = list(zip(xs, ys, strict=True))
    if len(points) < 3:
        return [(float(px), float(py)) for px, py in points]
    simplified = LineString(points).simplify(tolerance, preserve_topology=False)
    return [(float(px), float(py)) for px, py in simplified.coords]
