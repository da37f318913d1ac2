"""Frame: a robot's 2-D rigid map-frame-to-fleet-frame transform (x, y, yaw)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from emem_graph import validation
from emem_graph.errors import InvalidInputError


@dataclass(frozen=True)
class Frame:
    """Where a robot's map frame sits in the fleet frame: a point (x, y) in the robot's frame
    lands at ``R(yaw) @ (x, y) + (x0, y0)``. Metres and radians (counter-clockwise); z is kept.

    Raises:
        InvalidInputError: a value that is not a finite number, or an offset beyond the
            memory's coordinate bound (validation.MAX_COORDINATE).
    """

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0

    def __post_init__(self) -> None:
        for name in ("x", "y", "yaw"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidInputError(f"the frame's {name} must be a finite number, got {value}")
        for name in ("x", "y"):
            validation.coordinate(f"the frame's {name}", getattr(self, name))

    @classmethod
    def parse(cls, text: str) -> Frame:
        """``"x,y,yaw"`` (metres, metres, radians), e.g. ``"10,-2.5,1.5708"``.

        Raises:
            InvalidInputError: not three comma-separated finite numbers.
        """
        parts = text.split(",")
        try:
            if len(parts) != 3:
                raise ValueError
            x, y, yaw = (float(part) for part in parts)
        except ValueError:
            raise InvalidInputError(
                f"a frame is x,y,yaw (metres, metres, radians), got {text!r}"
            ) from None
        return cls(x, y, yaw)

    def as_list(self) -> list[float]:
        """[x, y, yaw], as the push manifest stores it."""
        return [self.x, self.y, self.yaw]

    def apply(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Robot-frame coordinates (arrays of one length) in the fleet frame."""
        cos, sin = math.cos(self.yaw), math.sin(self.yaw)
        return cos * x - sin * y + self.x, sin * x + cos * y + self.y
