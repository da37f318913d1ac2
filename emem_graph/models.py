"""Typed records that cross the store boundary, with eMEM's attribute names."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

Tier = Literal["working", "short_term", "long_term", "archived"]
NodeKind = Literal["observation", "gist", "entity"]
INTEROCEPTION = "interoception"
AGENT_NOTE = "agent_note"
"""Source type of notes a planner stores (store_specific_memory): searchable memory, but not a
perception, so it does not move the robot's current position."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Observation(_Record):
    """One thing perceived (or felt: source_type "interoception") at a place and time."""

    id: str
    text: str
    x: float
    y: float
    z: float = 0.0
    timestamp: float
    layer_name: str = "default"
    source_type: str = "manual"
    confidence: float = 1.0
    episode_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tier: Tier = "short_term"

    @property
    def coordinates(self) -> np.ndarray:
        """Position as a numpy array [x, y, z] (eMEM's attribute)."""
        return np.array([self.x, self.y, self.z], dtype=np.float64)

    @property
    def is_body_state(self) -> bool:
        """True for interoception (the robot's own state), which perception tools leave out."""
        return self.source_type == INTEROCEPTION


class Episode(_Record):
    """A task span grouping observations; FOLLOWS its predecessor, may be a SUBTASK_OF a parent."""

    id: str
    name: str
    start_time: float
    end_time: float | None = None
    status: Literal["active", "completed", "interrupted"] = "active"
    gist: str | None = None
    parent_episode_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Gist(_Record):
    """A summary of observations (or of gists) over an area and a time span."""

    id: str
    text: str
    x: float
    y: float
    z: float = 0.0
    radius: float = 0.0
    extent_wkt: str | None = None
    time_start: float
    time_end: float
    source_observation_count: int = 0
    layer_name: str | None = None
    episode_id: str | None = None
    level: int = 0
    tier: Tier = "long_term"
    created_at: float = 0.0

    @property
    def center_position(self) -> np.ndarray:
        """Centroid as a numpy array [x, y, z] (eMEM's attribute)."""
        return np.array([self.x, self.y, self.z], dtype=np.float64)


class Entity(_Record):
    """A persistent thing in the world (the red chair by the door), merged across sightings."""

    id: str
    name: str
    entity_type: str | None = None
    x: float
    y: float
    z: float = 0.0
    first_seen: float
    last_seen: float
    observation_count: int = 1
    confidence: float = 1.0
    layer_name: str = "default"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def coordinates(self) -> np.ndarray:
        """Position estimate as a numpy array [x, y, z] (eMEM's attribute)."""
        return np.array([self.x, self.y, self.z], dtype=np.float64)


STAY_RADIUS = 1.5
"""Metres: sightings this close to a stay's mean are the same stay of a thing (see
consolidation/whereabouts.py); the tools leave out the texts of a former stay farther than
this from the current one (retrieval/history.py)."""


class EntityPosition(_Record):
    """One stay of an entity: where it was (the mean of the stay's sightings) and when.

    ``ended`` is when a sighting elsewhere showed the thing had moved on (None: where it is
    now, as far as the memory knows)."""

    id: str
    entity_id: str
    x: float
    y: float
    z: float = 0.0
    first_seen: float
    last_seen: float
    count: int = 1
    ended: float | None = None

    @property
    def current(self) -> bool:
        """True for the position the entity is at now (not ended by a move)."""
        return self.ended is None


class VectorHit(_Record):
    """One nearest-neighbour (or keyword) result from the vector store."""

    id: str
    kind: NodeKind
    score: float
    """Cosine similarity for vector search (1 = same direction); BM25 score for keyword search."""


RecordT = TypeVar("RecordT", bound=BaseModel)


def trusted(cls: type[RecordT], values: dict[str, Any]) -> RecordT:
    """A record of ``cls`` from values validated when they were written (the in-process
    indexes hold only such values), every field given: what pydantic's model_construct
    builds, without its walk over the fields (about 1 against 9 us an observation;
    temporal_query builds ten a call). The models here have no private
    attributes, no extra fields and no post-init (checked below, at import)."""
    record = cls.__new__(cls)
    object.__setattr__(record, "__dict__", values)
    object.__setattr__(record, "__pydantic_fields_set__", set(values))
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


for _model in (Observation, Entity, EntityPosition, Gist, Episode):
    if _model.__private_attributes__ or _model.__pydantic_post_init__:
        raise TypeError(f"{_model.__name__}: trusted() cannot build it")
