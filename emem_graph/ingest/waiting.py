"""WaitingObservations: the observations add() accepted that the store does not hold yet.

add() returns before its observation is written (IngestBuffer); a sighting given to
add_entity() is resolved at once. The whereabouts rules read the looks at a place (an
observation near a stay that did not see the thing), so they read these as well as the store's:
a sighting sees every observation added before it, whenever the buffer writes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from emem_graph.models import Observation


class WaitingObservations:
    """Observations accepted and not yet in the store's observation index (thread-safe).

    The writer adds each one before it is queued and discards it once the store's write has
    returned (the index holds it then), or once it is set aside (never written). A reader that
    asks these first and the store's index after never misses one in between.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, Observation] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    def add(self, observation: Observation) -> None:
        """An observation accepted by add() (queued right after)."""
        with self._lock:
            self._waiting[observation.id] = observation

    def discard(self, ids: Iterable[str]) -> None:
        """Observations the store now holds, or that were set aside (unknown ids are skipped)."""
        with self._lock:
            for observation_id in ids:
                self._waiting.pop(observation_id, None)

    def latest_within(
        self,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
    ) -> float | None:
        """The time of the latest waiting observation (not a body state) within ``radius`` of
        (x, y), in the layer and time window when given (bounds included), as the observation
        index's latest_within answers for written ones; None when there is none."""
        with self._lock:
            if not self._waiting:
                return None
            waiting = list(self._waiting.values())
        latest: float | None = None
        for observation in waiting:
            t = observation.timestamp
            if (
                observation.is_body_state
                or (layer is not None and observation.layer_name != layer)
                or (time_after is not None and t < time_after)
                or (time_before is not None and t > time_before)
                or not _within(observation.x - x, observation.y - y, radius)
            ):
                continue
            if latest is None or t > latest:
                latest = t
        return latest


def _within(dx: float, dy: float, radius: float) -> bool:
    # As the index measures (squared, so that the two agree at the edge); far apart the
    # product is inf, never within.
    return dx * dx + dy * dy <= radius * radius
