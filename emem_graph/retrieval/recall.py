"""recall's answer around a located place: which records it lists (those about the query),
which it only counts, and the lines it writes for them.

The gist and entity lines (``gist_lines``, ``entity_short``) are get_current_context's too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from emem_graph.models import Entity, Gist, Observation
from emem_graph.retrieval import history, lookups
from emem_graph.retrieval.formatting import (
    format_by_layer,
    format_time,
    noted,
    one_line,
    text_key,
    times_suffix,
)
from emem_graph.retrieval.locate import CLUSTER_RADIUS
from emem_graph.text.names import STOPWORDS, singular, words

if TYPE_CHECKING:
    from emem_graph.retrieval.lookups import Circle
    from emem_graph.storage.store import MemoryStore

MIN_RECALL_RADIUS = 2.0
"""Metres: recall gathers at least this far around the located place."""
RECALL_RELEVANCE = 0.7
"""recall lists an item around the place when the query's search returned it with a cosine
similarity at least this fraction of the best hit's, or when it names the query's head noun;
the others are counted in one line, not listed."""


def recall_block(
    store: MemoryStore,
    stays: history.StayReader,
    about: About,
    circle: Circle,
    n: int,
    include_body_state: bool,
    shown: set[str],
    parts: int,
    placed: history.Placed,
) -> str:
    """What is around the place ``about`` was located at and is about it (see _relevant).
    Items an earlier part's block listed are not listed again; the rest is counted in one
    line (spatial_query lists everything around a place). When the place is a moved
    thing's current stay, its sightings since it came there are listed as current and the
    older ones as earlier; an entity that moved says where it was before."""
    observations = lookups.observations_near(
        store, circle, include_body_state=include_body_state, limit=n
    )
    links = lookups.recall_links(store, circle, limit=n)
    area_gists, area_entities = lookups.context_around(store, circle, limit=n)
    gists: list[Gist] = _first_unique(
        lookups.gists_by_id(store, [g.id for g in links.gists[:n]]) + area_gists, n
    )
    entities: list[Entity] = _first_unique(
        lookups.entities_by_id(store, [e.id for e in links.entities[:n]]) + area_entities,
        n,
    )
    relevant = _relevant(about, [*observations, *gists, *entities])
    left = {"observation": 0, "summary": 0, "entity": 0}
    again = 0

    def keep(record: Any, kind: str) -> bool:
        nonlocal again
        if record.id in shown:
            again += 1
            return False
        if record.id not in relevant:
            left[kind] += 1
            return False
        shown.add(record.id)
        return True

    observations = [o for o in observations if keep(o, "observation")]
    gists = [g for g in gists if keep(g, "summary")]
    entities = [e for e in entities if keep(e, "entity")]
    lines = [
        f"About '{one_line(about.label)}' — location ({circle.x:.1f}, {circle.y:.1f}), "
        f"radius {circle.radius:.1f}m:"
    ]
    tag = f" ('{one_line(about.label)}')" if parts > 1 else ""
    current, earlier = _sightings(placed, observations)
    if current or earlier:
        assert placed.entity is not None and placed.stay is not None
        observations = [o for o in observations if o not in current and o not in earlier]
        name, stay = one_line(placed.entity.name), placed.stay
        lines.append(
            f"Current sightings{tag} ({name} is here now: since "
            f"{format_time(stay.first_seen)}, last seen {format_time(stay.last_seen)}):"
        )
        lines.extend(format_by_layer(current, with_coordinates=True) or ["  (none listed)"])
        if earlier:
            lines.append(f"Earlier sightings{tag} (before {name} moved here):")
            lines.extend(format_by_layer(earlier, with_coordinates=True))
    if observations:
        lines.append(f"Observations{tag}:")
        lines.extend(format_by_layer(observations, with_coordinates=True))
    if gists:
        lines.append(f"Summaries{tag}:")
        lines.extend(gist_lines(gists, "  ", with_layer=True))
    if entities:
        lines.append(f"Entities{tag}:")
        moved = stays.positions_of([e.id for e in entities])
        for e in entities:
            line = history.history_line(e, moved.get(e.id, []))
            lines.append(f"  {entity_short(e)}" + (f" — {line}" if line else ""))
    if placed.entity is not None and placed.stay is not None and len(placed.stays) > 1:
        lines.extend(f"  {note}" for note in placed.notes if note.startswith("Not seen"))
    others = [_counted(count, kind) for kind, count in left.items() if count]
    if others:
        lines.append(
            f"Also within {circle.radius:.1f}m, not among the matches for "
            f"'{one_line(about.label)}': "
            f"{', '.join(others)} (spatial_query lists them)."
        )
    if again:
        lines.append(f"({_counted(again, 'item')} listed above also here.)")
    return "\n".join(lines)


def _relevant(about: About, records: list[Any]) -> set[str]:
    """Ids of the records about the query: among the search's own hits with a similarity
    at least RECALL_RELEVANCE of the best hit's, or naming the query's head noun. (No
    vector is read or computed here: recall costs what it cost before.)"""
    floor = RECALL_RELEVANCE * about.best
    head = _head_noun(about.label)
    found = set()
    for record in records:
        named = head is not None and head in {singular(w) for w in words(_text_of(record))}
        if about.similarity.get(record.id, -1.0) >= floor or named:
            found.add(record.id)
    return found


def entity_short(entity: Entity) -> str:
    """An entity's short line: type, name and sightings (noted as rendered)."""
    noted([entity])
    kind, name = one_line(entity.entity_type or "object"), one_line(entity.name)
    return f"[{kind}] {name} (seen {entity.observation_count}x)"


def _sightings(
    placed: history.Placed, observations: list[Observation]
) -> tuple[list[Observation], list[Observation]]:
    """The observations (already about the query) of a moved thing's current stay (near it,
    since it came there) and the earlier ones; both empty unless the thing moved."""
    if placed.stay is None or len(placed.stays) < 2 or not placed.stay.current:
        return [], []
    stay = placed.stay
    current = [
        o
        for o in observations
        if o.timestamp >= stay.first_seen and history.distance(stay, o.x, o.y) <= CLUSTER_RADIUS
    ]
    earlier = [o for o in observations if o.timestamp < stay.first_seen]
    return current, earlier


def _first_unique(records: list[Any], n: int) -> list[Any]:
    seen: set[str] = set()
    unique: list[Any] = []
    for record in records:
        if record.id not in seen and len(unique) < n:
            seen.add(record.id)
            unique.append(record)
    return unique


class About:
    """What a recall block is about: its label, the query's vector and the similarities of
    the query's search hits (by record id, and the best)."""

    def __init__(self, label: str, vector: np.ndarray, hits: list[tuple[Any, float]]) -> None:
        self.label = label
        self.vector = np.asarray(vector, dtype=np.float32)
        self.similarity = {record.id: float(score) for record, score in hits}
        self.best = max(self.similarity.values(), default=0.0)


def _head_noun(query: str) -> str | None:
    """The last content word of a query, singular ("the red chairs" -> "chair")."""
    content = [singular(w) for w in words(query) if w not in STOPWORDS and w.isalpha()]
    return content[-1] if content else None


def _text_of(record: Any) -> str:
    return str(record.name) if isinstance(record, Entity) else str(record.text)


def _counted(count: int, kind: str) -> str:
    plural = {"summary": "summaries", "entity": "entities"}.get(kind, kind + "s")
    return f"{count} {kind if count == 1 else plural}"


def gist_lines(gists: list[Gist], prefix: str, *, with_layer: bool = False) -> list[str]:
    """One line per distinct gist text (``(x{n})`` when several gists carry it)."""
    groups: dict[str, list[Gist]] = {}
    for gist in noted(gists):
        groups.setdefault(text_key(gist.text), []).append(gist)
    lines = []
    for group in groups.values():
        gist = group[0]
        layer = f"[{one_line(gist.layer_name or 'cross-layer')}] " if with_layer else ""
        lines.append(f"{prefix}{layer}{one_line(gist.text)}{times_suffix(len(group))}")
    return lines
