"""Whereabouts: where an entity is now, where it was, and when it moved.

An entity's history is a list of stays (EntityPosition, the graph's Position nodes), oldest
first; the last one is open: where the thing is now, as far as the memory knows. The entity's
own x, y, z are its current stay's (the running mean of that stay's sightings only), so an
object carried from the kitchen table to the bathroom sink is answered at the sink, never at a
point between the two.

What a sighting of a known name does (EntityResolver applies these, in this order):

1. **Stay.** Within STAY_RADIUS of the entity's current stay it extends the stay.
2. **Small move.** Within entity_spatial_radius but beyond STAY_RADIUS it is the same entity;
   it opens a new stay when it comes REVISIT_GAP or more after the stay's last sighting (the
   robot came back and found it a few metres away), else it extends the stay (noise).
   *Back* (2b): a sighting again within STAY_RADIUS of the stay before such a small move folds
   the two stays into one (weighted mean, counts and span together): the thing stayed and was
   seen from two places (a caption places a thing at the robot's pose; a patrol that sees it
   from two poses in turn would otherwise open a stay per look).
3. **Two alike objects.** Farther away, near the stay the entity has just left, when no look at
   that stay ever missed it: the thing may never have left. The sightings since the move were a
   second object of the same name: the current stay becomes a new entity (its sightings move
   with it) and the entity is back where it was.
4. **Move.** Farther away, a sighting with the same name (normalised: "the red cups" is "red
   cup") is the entity having moved when both hold:

   a. *time order*: it is later than every sighting of the entity, by at least the time it
      takes to carry the thing there (distance / CARRY_SPEED): a thing is never in two places
      at once;
   b. *evidence*: the robot looked at the entity's stay after its last sighting there and did
      not see it (an observation of the entity's layer within LOOK_RADIUS, at least
      ABSENCE_AFTER after the last sighting: absence), or the name is distinctive (it has a
      modifier: "red cup", not "cup"), it is the only entity of that name (no two such things
      were ever taken to exist at once) and MOVE_GAP has passed since its last sighting.

   Among several candidates the one with absence evidence is taken first, then the one last
   seen longest ago (ties by id).
5. Otherwise a new entity: two alike objects seen in two places in the same time span stay
   two objects.

A name held by more than MAX_ALIKE entities (the chairs of an office, the people of a campus)
is too common to follow one thing by it: its sightings merge by place only (rules 1 and 2),
and the work per sighting stays bounded.

The rules look at what the memory already holds (sightings and observations); they never need
a sighting that has not come yet, and the same sightings in the same order give the same
entities. The observations they read are every one added before the sighting, written or still
waiting in the ingest buffer (``waiting``): when the buffer writes does not change the answer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

from emem_graph.models import STAY_RADIUS, EntityPosition

__all__ = ["STAY_RADIUS", "Looks", "distance", "missed_at"]

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore

REVISIT_GAP = 60.0
"""Seconds: a sighting within the entity radius but off the stay opens a new stay only this
long after the stay's last sighting (earlier, it is the same look, with noise)."""
CARRY_SPEED = 1.5
"""Metres per second: nothing is carried faster (a sighting farther away sooner than this
allows is a second object)."""
MOVE_GAP = 600.0
"""Seconds since the last sighting after which a distinctive thing, alone of its name, seen
elsewhere is taken to have moved without absence evidence."""
MAX_ALIKE = 32
"""Entities of one name beyond which a far sighting of that name is never taken as a move."""
LOOK_RADIUS = 2.0
"""Metres: an observation this close to a stay was a look at it."""
ABSENCE_AFTER = 30.0
"""Seconds: a look counts as not seeing the thing only this long after its last sighting
(the frames right after a sighting miss it by occlusion and framing, not by absence)."""


class Looks(Protocol):
    """Observations that are looks at places, as the observation index answers for them."""

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
        """The time of the latest one within ``radius`` of (x, y), or None."""
        ...


def distance(stay: EntityPosition, x: float, y: float) -> float:
    """Metres from a stay's mean to (x, y), in the plane."""
    return math.hypot(stay.x - x, stay.y - y)


def missed_at(
    store: MemoryStore,
    stay: EntityPosition,
    layer: str | None,
    until: float,
    waiting: Looks | None = None,
) -> float | None:
    """The latest look at ``stay`` (an observation of ``layer`` within LOOK_RADIUS) at least
    ABSENCE_AFTER after its last sighting and not after ``until``: the thing was not seen
    there then. None when the robot did not look there since (or ``until`` is too early).
    ``waiting``: the observations added and not yet written, read too."""
    start = stay.last_seen + ABSENCE_AFTER
    if until < start:
        return None
    # The waiting ones first: one written in between is in the store's index by the time it
    # leaves them, so it is read in one or the other.
    sources: list[Looks] = [store.index] if waiting is None else [waiting, store.index]
    found = [
        source.latest_within(
            stay.x, stay.y, LOOK_RADIUS, layer=layer, time_after=start, time_before=until
        )
        for source in sources
    ]
    return max((t for t in found if t is not None), default=None)
