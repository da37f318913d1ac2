"""Typed answers of the named graph queries and of the in-memory indexes behind the tools.

Each function runs one named Cypher file (queries/*.cypher) with parameters, or reads the store's
in-process indexes, and returns pydantic records or small dataclasses; none builds Cypher from
its arguments. Queries filter and rank on numeric columns and return ids; the records of the
final page are then fetched by primary key (Kuzu scans a whole STRING column to project it, so
text is read only for what is shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emem_graph.models import Entity, Episode, Gist, Observation
from emem_graph.storage import records

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore


@dataclass(frozen=True)
class Circle:
    """A horizontal area: centre (x, y) and radius in metres."""

    x: float
    y: float
    radius: float


@dataclass(frozen=True)
class Linked:
    """A node linked to the observations of an area, with how many of them it is linked to."""

    id: str
    links: int


@dataclass(frozen=True)
class RecallLinks:
    """The gists and entities linked to the observations of an area, most linked first."""

    gists: list[Linked]
    entities: list[Linked]


@dataclass(frozen=True)
class Cooccurrence:
    """An entity seen together with another one ``count`` times, between two times."""

    entity_id: str
    name: str
    count: int
    first_seen: float
    last_seen: float


@dataclass(frozen=True)
class EpisodeChain:
    """The episodes before one episode (nearest first), its parents (innermost first) and its
    direct subtasks."""

    previous: list[str]
    parents: list[str]
    subtasks: list[str]


@dataclass(frozen=True)
class EpisodeSpan:
    """How many observations an episode holds and the times of its first and last one."""

    count: int
    first: float
    last: float


@dataclass(frozen=True)
class Sighting:
    """One observation an entity was seen in: where, when, on which layer."""

    observation_id: str
    x: float
    y: float
    z: float
    timestamp: float
    layer: str
    confidence: float | None


def _area(circle: Circle | None) -> dict[str, Any]:
    if circle is None:
        return {"in_area": False, "x": 0.0, "y": 0.0, "radius": 0.0}
    return {
        "in_area": True,
        "x": float(circle.x),
        "y": float(circle.y),
        "radius": float(circle.radius),
    }


def recall_links(store: MemoryStore, circle: Circle, limit: int = 10) -> RecallLinks:
    """The gists that SUMMARIZE, and the entities OBSERVED_IN, the observations inside
    ``circle``, most linked first (ties by id), ``limit`` of each. Entities come from the
    store's in-process index, gists from query ``recall_gists`` (queries/recall.cypher is the
    whole read in Cypher)."""
    rows = store.graph.query(
        "recall_gists",
        {
            "x": float(circle.x),
            "y": float(circle.y),
            "radius": float(circle.radius),
            "limit": int(limit),
        },
    )
    gists = [Linked(id=row["id"], links=int(row["links"])) for row in rows]
    inside = store.index.within(float(circle.x), float(circle.y), float(circle.radius))
    entities = [Linked(id=e.id, links=e.links) for e in store.entities.seen_in(inside, limit)]
    return RecallLinks(gists=gists, entities=entities)


def cooccurring_entities(store: MemoryStore, entity_id: str, limit: int = 10) -> list[Cooccurrence]:
    """The entities most often seen with ``entity_id``, from the stored COOCCURS_WITH counts."""
    rows = store.graph.query("cooccurring_entities", {"id": entity_id, "limit": int(limit)})
    return [
        Cooccurrence(
            entity_id=row["id"],
            name=row["name"],
            count=int(row["count"]),
            first_seen=float(row["first_seen"]),
            last_seen=float(row["last_seen"]),
        )
        for row in rows
    ]


def episode_chain(store: MemoryStore, episode_id: str) -> EpisodeChain:
    """The FOLLOWS chain before an episode and its SUBTASK_OF parents and children."""
    rows = store.graph.query("episode_chain", {"id": episode_id})
    by_relation: dict[str, list[tuple[int, str]]] = {"previous": [], "parent": [], "subtask": []}
    for row in rows:
        by_relation[row["relation"]].append((int(row["hops"]), row["id"]))
    ordered = {name: [i for _, i in sorted(pairs)] for name, pairs in by_relation.items()}
    return EpisodeChain(
        previous=ordered["previous"], parents=ordered["parent"], subtasks=ordered["subtask"]
    )


def episode_span(store: MemoryStore, episode_id: str) -> EpisodeSpan | None:
    """Observation count and first/last time of an episode, or None when it has none (kept
    until the graph's next write: MemoryStore.cached_read)."""

    def read() -> EpisodeSpan | None:
        rows = store.graph.query("episode_span", {"id": episode_id})
        if not rows or not rows[0]["n"]:
            return None
        row = rows[0]
        return EpisodeSpan(int(row["n"]), float(row["t_first"]), float(row["t_last"]))

    return store.cached_read(("episode_span", episode_id), read)


def entity_timeline(store: MemoryStore, entity_id: str, limit: int = 20) -> list[Sighting]:
    """Where and when an entity was seen (its OBSERVED_IN observations), newest first."""
    rows = store.graph.query("entity_timeline", {"id": entity_id, "limit": int(limit)})
    return [
        Sighting(
            observation_id=row["observation_id"],
            x=float(row["x"]),
            y=float(row["y"]),
            z=float(row["z"] or 0.0),
            timestamp=float(row["timestamp"]),
            layer=row["layer"],
            confidence=row["confidence"],
        )
        for row in rows
    ]


def context_around(
    store: MemoryStore, circle: Circle, limit: int = 10
) -> tuple[list[Gist], list[Entity]]:
    """Gists centred and entities placed inside ``circle``, nearest first, ``limit`` of each
    (gists from query ``gists_around``, entities from the store's in-process index;
    queries/context_around.cypher is the same read in Cypher). The gists' ids are kept until
    the graph's next write (MemoryStore.cached_read): the robot's position, and so the circle,
    changes only with a write."""
    params = {
        "x": float(circle.x),
        "y": float(circle.y),
        "radius": float(circle.radius),
        "limit": int(limit),
    }

    def read() -> tuple[str, ...]:
        return tuple(row["id"] for row in store.graph.query("gists_around", params))

    ids = store.cached_read(("gists_around", *params.values()), read)
    entities = store.entities.find(
        circle=(float(circle.x), float(circle.y), float(circle.radius)), limit=limit
    )
    return gists_by_id(store, list(ids)), entities


def observations_near(
    store: MemoryStore,
    circle: Circle,
    *,
    layer: str | None = None,
    time_after: float | None = None,
    time_before: float | None = None,
    include_body_state: bool = False,
    limit: int = 10,
) -> list[Observation]:
    """The ``limit`` observations (not archived) nearest the centre of ``circle`` within it
    (the in-process index; queries/observations_nearest.cypher is the same read in Cypher)."""
    ids = store.index.near(
        float(circle.x),
        float(circle.y),
        float(circle.radius),
        layer=layer,
        time_after=time_after,
        time_before=time_before,
        include_body_state=include_body_state,
        limit=int(limit),
    )
    return store.get_observations(ids)


def observations_in_window(
    store: MemoryStore,
    *,
    time_after: float | None,
    time_before: float | None,
    layer: str | None = None,
    circle: Circle | None = None,
    newest_first: bool = True,
    limit: int = 10,
    include_body_state: bool = False,
) -> list[Observation]:
    """Observations (not archived) in a time window, optionally in an area and a layer (the
    in-process index; queries/observations_in_window.cypher is the same read in Cypher)."""
    ids = store.index.in_window(
        time_after=time_after,
        time_before=time_before,
        layer=layer,
        circle=None if circle is None else (circle.x, circle.y, circle.radius),
        include_body_state=include_body_state,
        newest_first=newest_first,
        limit=int(limit),
    )
    return store.get_observations(ids)


def gists_in_window(
    store: MemoryStore,
    *,
    time_after: float | None,
    time_before: float | None,
    layer: str | None = None,
    circle: Circle | None = None,
    newest_first: bool = True,
    limit: int = 10,
) -> list[Gist]:
    """Gists whose time span overlaps a window (cross-layer gists match any layer)."""
    rows = store.graph.query(
        "gists_in_window",
        {
            "time_after": time_after,
            "time_before": time_before,
            "layer": layer,
            **_area(circle),
            "newest_first": newest_first,
            "limit": int(limit),
        },
    )
    return gists_by_id(store, [row["id"] for row in rows])


def recent_episodes(store: MemoryStore, *, name: str | None, limit: int) -> list[Episode]:
    """Episodes newest first; with ``name``, those whose name contains it (any case); kept
    until the graph's next write (MemoryStore.cached_read), returned as copies."""
    needle = None if name is None else name.lower()

    def read() -> tuple[Episode, ...]:
        rows = store.graph.query("recent_episodes", {"name": needle, "limit": int(limit)})
        return tuple(records.episode(row["e"]) for row in rows)

    kept = store.cached_read(("recent_episodes", needle, int(limit)), read)
    return [episode.model_copy(deep=True) for episode in kept]


def find_entities(
    store: MemoryStore,
    *,
    name: str | None = None,
    entity_type: str | None = None,
    last_seen_after: float | None = None,
    circle: Circle | None = None,
    limit: int = 10,
    shared: bool = False,
    latest_first: bool = False,
) -> list[Entity]:
    """Entities by name substring and type (case-insensitive), area and last sighting (the
    store's in-process index; queries/find_entities.cypher is the same read in Cypher).
    ``shared``: the index's own objects, for a caller that only reads them;
    ``latest_first``: latest seen first, then by id (EntityIndex.find)."""
    return store.entities.find(
        name=name,
        entity_type=entity_type,
        last_seen_after=last_seen_after,
        circle=None if circle is None else (circle.x, circle.y, circle.radius),
        limit=limit,
        shared=shared,
        latest_first=latest_first,
    )


def latest_body_state(store: MemoryStore, layers: Sequence[str] | None = None) -> list[Observation]:
    """The latest body-state reading with text per layer, ordered by layer (the in-process
    index; queries/latest_body_state.cypher is the same read in Cypher)."""
    return store.get_observations(store.index.latest_body_state(layers))


def records_by_id(
    store: MemoryStore, kinds: dict[str, str]
) -> dict[str, Observation | Gist | Entity]:
    """The records of the ids in ``kinds`` (id -> "observation" | "gist" | "entity"); ids
    whose node is gone are left out."""
    wanted: dict[str, list[str]] = {"observation": [], "gist": [], "entity": []}
    for node_id, kind in kinds.items():
        wanted[kind].append(node_id)
    found: list[Observation | Gist | Entity] = [
        *store.get_observations(wanted["observation"]),
        *gists_by_id(store, wanted["gist"]),
        *entities_by_id(store, wanted["entity"]),
    ]
    return {record.id: record for record in found}


def gists_by_id(store: MemoryStore, ids: Sequence[str]) -> list[Gist]:
    """Gists by id, in the order given (unknown ids skipped; kept by the store until the
    graph's next write)."""
    return store.get_gists(ids)


def entities_by_id(store: MemoryStore, ids: Sequence[str]) -> list[Entity]:
    """Entities by id, in the order given (unknown ids skipped; the in-process index)."""
    found = store.entities.get(ids)
    return [found[i] for i in ids if i in found]
