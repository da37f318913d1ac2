"""The ten retrieval tools and the planner actions, as methods returning API.md's text.

Every method validates its arguments against the schema in schemas.py (through
``@tool_method``), flushes the memory, reads through the store's prefiltered primitives and the
named graph queries, and formats with formatting.py. Body-state (interoception) observations are
left out of the perception tools unless ``include_body_state`` is set.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from emem_graph.errors import InvalidInputError
from emem_graph.filters import FILTER_PARAMETERS, area_of, perception_filter
from emem_graph.models import AGENT_NOTE, STAY_RADIUS, Entity, EntityPosition, Gist, Observation
from emem_graph.retrieval import history, lookups
from emem_graph.retrieval.dispatch import dispatch_tool_call, tool_method
from emem_graph.retrieval.formatting import (
    collapse_records,
    format_body_status,
    format_by_layer,
    format_collapsed,
    format_entity,
    format_episode,
    format_time,
    noted,
    numbered,
    source_label,
    text_key,
    times_suffix,
    unique_lines,
)
from emem_graph.retrieval.locate import CLUSTER_RADIUS
from emem_graph.retrieval.lookups import Circle
from emem_graph.retrieval.schemas import ALL_SCHEMAS, GLOBAL_CHAINS, tool_definitions
from emem_graph.retrieval.search import HybridSearch, split_request
from emem_graph.retrieval.timeparse import parse_optional_time
from emem_graph.text.names import STOPWORDS, singular, words

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.storage.store import MemoryStore

CONSOLIDATED_HEADER = "(Observations consolidated — showing summaries)"
MIN_RECALL_RADIUS = 2.0
"""Metres: recall gathers at least this far around the located place."""
CONTEXT_LIMIT = 10
"""Items per section of get_current_context."""
_EntityLine = tuple[EntityPosition | None, str, str]
"""An entity's current stay, its entity_query line and its ``moved:`` line."""
_Made = tuple[EntityPosition | None, str, str, bool]
"""An _EntityLine and whether it was made by this call (False: kept)."""
ENTITY_LINES_MAX = 4096
ENTITY_LINES_CHARS = 4_000_000
"""entity_query lines kept at most, and their characters at most (a thing that moved often
has a long history line): past either, the kept lines start over."""
ENTITY_WARM_MAX = 1024
"""Entity lines the writer makes after one write at most (the most recently seen first):
the first write after opening a memory of many entities changes every one."""
RECALL_RELEVANCE = 0.7
"""recall lists an item around the place when the query's search returned it with a cosine
similarity at least this fraction of the best hit's, or when it names the query's head noun;
the others are counted in one line, not listed."""


class ToolHost(Protocol):
    """What the tools need from the memory facade."""

    config: MemoryConfig

    def flush(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...

    @property
    def current_position(self) -> np.ndarray | None: ...

    @property
    def active_episode_id(self) -> str | None: ...

    def add(
        self,
        text: str,
        x: float,
        y: float,
        z: float = 0.0,
        timestamp: float | None = None,
        layer_name: str = "default",
        source_type: str = "manual",
        confidence: float = 1.0,
        metadata: dict[str, Any] | None = None,
        embedding: Any = None,
    ) -> str: ...

    def start_episode(
        self,
        name: str,
        metadata: dict[str, Any] | None = None,
        parent_episode_id: str | None = None,
    ) -> str: ...

    def end_episode(self, consolidate: bool = True) -> str | None: ...


class RetrievalTools:
    """The tools of one memory.

    Args:
        host: the memory facade (flush, embed, position, writes).
        store: its store (typed reads).
        clock: its clock; relative times and ages are measured on it.
        stays: where entities were and when a look missed them (the memory passes
            consolidation's reads; None: no entity has stays).
    """

    def __init__(
        self,
        host: ToolHost,
        store: MemoryStore,
        clock: Callable[[], float],
        stays: history.StayReader | None = None,
    ) -> None:
        self._host = host
        self._store = store
        self._stays: history.StayReader = history.NoStays() if stays is None else stays
        self._clock = clock
        self._search = HybridSearch(store, host.embed, host.config, clock)
        self._attached: dict[str, Callable[..., str]] = {}
        # Profile aliases: an attached capability's resolve_concept(text) -> text | None
        # turns "my favorite cup" into what it names before locate and recall search.
        self._resolvers: list[Callable[[str], str | None]] = []
        # entity_query's line of each entity, with the kept entity and stays it was written
        # from: a change replaces those objects (EntityIndex), so the line holds while they
        # are the same ones (a repeated question 0.156 -> 0.080 ms at 100k observations, issue 23).
        self._entity_lines: dict[str, tuple[Entity, tuple[EntityPosition, ...], _EntityLine]] = {}
        self._entity_line_chars = 0
        self._entity_lines_lock = threading.Lock()  # the writer warms them (warm_entity_lines)

    @property
    def _far(self) -> float:
        """Metres between two stays of a thing beyond which a former stay's texts no longer
        place it (history.place): twice the stay radius. Closer stays can be one place seen
        from two poses in a patrol (a caption places a thing at the robot's pose): their
        texts still vote (measured: at the stay radius itself locate-eval fell from 100% to
        95.2% within 1 m; at the entity radius moves-eval's near moves of 2.8 and 3.8 m were
        answered at the old place for up to six rounds)."""
        return 2 * STAY_RADIUS

    def close(self) -> None:
        """Stop the search threads (the memory calls it when it closes)."""
        self._search.close()

    def flush_before_tool(self) -> None:
        """Make every added observation visible to the tool about to run."""
        self._host.flush()

    # --- the ten tools -------------------------------------------------------------------------

    @tool_method
    def semantic_search(
        self,
        query: str,
        n_results: int = 10,
        layer: str | None = None,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        near_x: float | None = None,
        near_y: float | None = None,
        spatial_radius: float | None = None,
        episode_id: str | None = None,
        include_body_state: bool = False,
        scope: str = "local",
    ) -> str:
        """Hybrid search over observations, gists and entities; multi-part requests are
        searched part by part. All filters are prefilters. scope="global": the area walk."""
        if scope == "global":
            given = locals()  # the filter parameters' values, by name
            filters = {name: given[name] for name in FILTER_PARAMETERS}
            filters["include_body_state"] = include_body_state or None
            return self._global("semantic_search", query, n_results, filters)
        now = self._clock()
        where = perception_filter(
            layer=layer,
            time_after=parse_optional_time(time_after, now, name="time_after"),
            time_before=parse_optional_time(time_before, now, name="time_before"),
            area=area_of(near_x, near_y, spatial_radius),
            episode_id=episode_id,
            include_body_state=include_body_state,
        )
        hits = self._search.search_request(query, n_results, where)
        if not hits:
            return "No results found."
        records = [hit.record for hit in hits]
        if len(collapse_records(records)) < n_results and len(hits) == n_results:
            # Records of one text at one place share a line: ask for more to answer n lines.
            # (Counted before formatting: a formatted pass notes its records for the caller's
            # structured result, and a discarded one had left them there: 11 records behind
            # 10 lines, seen by the ROS bridge's test.)
            hits = self._search.search_request(query, 3 * n_results, where)
            records = [hit.record for hit in hits]
        return numbered(format_collapsed(records, n_results))

    @tool_method
    def spatial_query(
        self,
        x: float,
        y: float,
        z: float = 0.0,
        radius: float = 2.0,
        layer: str | None = None,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        n_results: int = 10,
        include_body_state: bool = False,
    ) -> str:
        """Observations within ``radius`` (horizontal) of (x, y), nearest first."""
        now = self._clock()
        found = lookups.observations_near(
            self._store,
            Circle(x, y, radius),
            layer=layer,
            time_after=parse_optional_time(time_after, now, name="time_after"),
            time_before=parse_optional_time(time_before, now, name="time_before"),
            include_body_state=include_body_state,
            limit=n_results,
        )
        if not found:
            return "No observations found."
        return numbered(format_collapsed(found))

    @tool_method
    def temporal_query(
        self,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        last_n_minutes: float | None = None,
        layer: str | None = None,
        near_x: float | None = None,
        near_y: float | None = None,
        spatial_radius: float | None = None,
        order: str = "newest",
        n_results: int = 10,
        include_body_state: bool = False,
    ) -> str:
        """Observations in a time window (and area, layer), newest or oldest first; the
        window's gists when its observations were consolidated."""
        now = self._clock()
        after = parse_optional_time(time_after, now, name="time_after")
        before = parse_optional_time(time_before, now, name="time_before")
        if last_n_minutes is not None:
            recent = now - last_n_minutes * 60.0
            after = recent if after is None else max(after, recent)
        window: dict[str, Any] = {
            "time_after": after,
            "time_before": before,
            "layer": layer,
            "circle": _circle(near_x, near_y, spatial_radius),
            "newest_first": order == "newest",
            "limit": n_results,
        }
        found = lookups.observations_in_window(
            self._store, include_body_state=include_body_state, **window
        )
        if found:
            return numbered(format_collapsed(found))
        gists = lookups.gists_in_window(self._store, **window)
        if gists:
            return CONSOLIDATED_HEADER + "\n" + numbered(format_collapsed(gists))
        return "No observations found."

    @tool_method
    def episode_summary(
        self, episode_id: str | None = None, task_name: str | None = None, last_n: int = 1
    ) -> str:
        """Status, summary and observation span of an episode, of the episodes whose name
        contains ``task_name``, or of the ``last_n`` most recent ones."""
        if episode_id is not None:
            found = self._store.get_episode(episode_id)
            episodes = [found] if found is not None else []
        else:
            limit = max(last_n, 10) if task_name is not None else last_n
            episodes = lookups.recent_episodes(self._store, name=task_name, limit=limit)
        if not episodes:
            return "No episodes found."
        lines = []
        for episode in episodes:
            span = lookups.episode_span(self._store, episode.id)
            if span is None:
                lines.append(format_episode(episode, 0, None, None))
            else:
                lines.append(format_episode(episode, span.count, span.first, span.last))
        return "\n".join(unique_lines("\n".join(lines).splitlines()))

    @tool_method
    def get_current_context(self, radius: float = 3.0, include_recent_minutes: float = 5.0) -> str:
        """Position, nearby observations, area summaries, nearby entities, recent observations
        and the body status block."""
        now = self._clock()
        parts: list[str] = []
        position = self._host.current_position
        if position is not None:
            x, y = float(position[0]), float(position[1])
            parts.append(f"Position: ({x:.1f}, {y:.1f})")
            nearby = lookups.observations_near(
                self._store, Circle(x, y, radius), limit=CONTEXT_LIMIT
            )
            if nearby:
                parts.append(f"Nearby ({radius}m):")
                parts.extend(format_by_layer(nearby, with_coordinates=False))
            gists, entities = lookups.context_around(
                self._store, Circle(x, y, radius), limit=CONTEXT_LIMIT
            )
            if gists:
                parts.append("Area summaries:")
                parts.extend(_gist_lines(gists, "  - "))
            if entities:
                parts.append("Nearby entities:")
                parts.extend(f"  - {_entity_short(e)}" for e in entities)
        recent = lookups.observations_in_window(
            self._store,
            time_after=now - include_recent_minutes * 60.0,
            time_before=None,
            limit=CONTEXT_LIMIT,
        )
        if recent:
            parts.append(f"Recent ({include_recent_minutes}min):")
            parts.extend(format_by_layer(recent, with_coordinates=True))
        body = lookups.latest_body_state(self._store)
        if body:
            parts.append(format_body_status(body, now))
        return "\n".join(unique_lines(parts)) if parts else "No context available."

    @tool_method
    def search_gists(
        self,
        query: str,
        n_results: int = 10,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
    ) -> str:
        """Hybrid search over the consolidated summaries only."""
        now = self._clock()
        where = perception_filter(
            kinds=("gist",),
            time_after=parse_optional_time(time_after, now, name="time_after"),
            time_before=parse_optional_time(time_before, now, name="time_before"),
        )
        hits = self._search.search(query, n_results, where)
        gists = [hit.record for hit in hits if isinstance(hit.record, Gist)]
        if not gists:
            return "No gists found."
        return numbered(format_collapsed(gists))

    @tool_method
    def entity_query(
        self,
        name: str | None = None,
        entity_type: str | None = None,
        near_x: float | None = None,
        near_y: float | None = None,
        spatial_radius: float | None = None,
        last_seen_after: str | float | None = None,
        n_results: int = 10,
    ) -> str:
        """Entities by name substring, type, area and last sighting, the most recently
        confirmed first; a thing that moved says where it is now since when and where it was
        before, and one a later look missed at its position is marked stale."""
        now = self._clock()
        if isinstance(name, str):
            name = name.strip() or None  # names are stored stripped: "chair " finds "chair"
        entities = lookups.find_entities(
            self._store,
            name=name,
            entity_type=entity_type,
            last_seen_after=parse_optional_time(last_seen_after, now, name="last_seen_after"),
            circle=_circle(near_x, near_y, spatial_radius),
            limit=n_results,
            shared=True,  # only formatted here
            latest_first=True,
        )
        if not entities:
            return "No entities found."
        stays = self._stays.positions_of([e.id for e in entities])
        lines = []
        for entity in entities:
            own = stays.get(entity.id, [])
            stay, seen, moved, _ = self._entity_line(entity, own)
            absent = None if stay is None else history.missed(self._stays, entity, stay, now)
            if absent is not None:
                seen += f" [stale: not seen at its last position at {format_time(absent)}]"
            lines.append(seen + moved)
        return numbered(lines)

    def warm_entity_lines(self, entities: Sequence[Entity]) -> int:
        """Make the entity_query lines of these entities (the kept objects, as
        EntityIndex.take_changed gives them, most recently seen first) now, on the writer's
        thread after it wrote them, so that a question listing them reads kept lines: a
        name's first question at 100k observations spent most of its time making them.
        At most ENTITY_WARM_MAX of them. Returns how many lines were made."""
        entities = list(entities)[:ENTITY_WARM_MAX]
        stays = self._stays.positions_of([e.id for e in entities])
        made = 0
        for entity in entities:
            made += self._entity_line(entity, stays.get(entity.id, []))[3]
        return made

    def _entity_line(self, entity: Entity, own: list[EntityPosition]) -> _Made:
        """An entity's current stay, its line and its ``moved:`` line ("" when it never
        moved), kept while the entity and its stays are the same objects; with whether it
        was made now."""
        noted([entity])
        kept = self._entity_lines.get(entity.id)
        if (
            kept is not None
            and kept[0] is entity
            and len(kept[1]) == len(own)
            and all(a is b for a, b in zip(kept[1], own, strict=True))
        ):
            return (*kept[2], False)
        moved = history.history_line(entity, own)
        made = (
            history.current_stay(own),
            format_entity(entity) + f" [last seen {format_time(entity.last_seen)}]",
            f"\n   moved: {moved}" if moved else "",
        )
        size = len(made[1]) + len(made[2])
        with self._entity_lines_lock:  # a tool call and the writer's warm_entity_lines
            kept = self._entity_lines.get(entity.id)
            if kept is not None:  # replaced: its characters are no longer kept
                self._entity_line_chars -= len(kept[2][1]) + len(kept[2][2])
            if (
                len(self._entity_lines) >= ENTITY_LINES_MAX
                or self._entity_line_chars + size > ENTITY_LINES_CHARS
            ):
                self._entity_lines.clear()
                self._entity_line_chars = 0
            self._entity_lines[entity.id] = (entity, tuple(own), made)
            self._entity_line_chars += size
        return (*made, True)

    @tool_method
    def locate(
        self,
        concept: str,
        n_results: int = 10,
        layer: str | None = None,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        include_body_state: bool = False,
        at_time: str | float | None = None,
    ) -> str:
        """Where ``concept`` is: a relevance-weighted estimate from the strong matches; a thing
        that moved is answered at its current stay (or, with ``at_time`` or time words in the
        concept, at the stay of that time), with when it was last seen there, whether a later
        look missed it and where it was before (retrieval/history.py)."""
        now = self._clock()
        question = history.asked(concept, now)
        at = question.at if at_time is None else history.parse_at_time(at_time, now)
        where = perception_filter(
            layer=layer,
            time_after=parse_optional_time(time_after, now, name="time_after"),
            time_before=parse_optional_time(time_before, now, name="time_before"),
            include_body_state=include_body_state,
        )
        vector = self._search.embed([self._resolved(question.concept)])[0]
        dense = self._search.dense(vector, n_results, where)
        placed = history.place(self._stays, dense, now, at, question.before, self._far)
        if placed is None:
            return "Could not locate: no matching memories found."
        estimate = placed.estimate
        sources: dict[str, int] = {}
        for record, _ in estimate.hits:
            label = source_label(record)
            sources[label] = sources.get(label, 0) + 1
        summary = ", ".join(f"{count}x {label}" for label, count in sorted(sources.items()))
        lines = [
            f"Location: ({estimate.x:.1f}, {estimate.y:.1f}, {estimate.z:.1f})",
            f"Radius: {estimate.radius:.1f}m",
            f"Based on: {len(estimate.hits)} memories ({summary})",
            *placed.notes,
        ]
        lines.extend(f"  {line}" for line in format_collapsed((r for r, _ in estimate.hits), 3))
        return "\n".join(lines)

    @tool_method
    def recall(
        self,
        query: str,
        n_results: int = 10,
        radius_multiplier: float = 1.5,
        include_body_state: bool = False,
        scope: str = "local",
    ) -> str:
        """Everything around the place a query is located at (each part of a multi-part
        query separately): observations, the gists that summarize them or lie there, and the
        entities seen in them or placed there. scope="global": the area walk."""
        if scope == "global":
            filters = {"include_body_state": include_body_state or None}
            return self._global("recall", query, n_results, filters)
        parts = split_request(query)
        where = perception_filter(include_body_state=include_body_state)
        vectors = self._search.embed([self._resolved(part) for part in parts])
        blocks: list[str] = []
        missing: list[str] = []
        shown: set[str] = set()
        now = self._clock()
        for part, vector in zip(parts, vectors, strict=True):
            dense = self._search.dense(vector, n_results, where)
            placed = history.place(self._stays, dense, now, None, False, self._far)
            if placed is None:
                missing.append(part)
                continue
            estimate = placed.estimate
            circle = Circle(
                estimate.x,
                estimate.y,
                max(estimate.radius * radius_multiplier, MIN_RECALL_RADIUS),
            )
            about = _About(part if len(parts) > 1 else query, vector, dense)
            blocks.append(
                self._recall_block(
                    about, circle, n_results, include_body_state, shown, len(parts), placed
                )
            )
        if not blocks:
            return f"No memories found for: {query}"
        blocks.extend(f"No memories found for: {part}" for part in missing)
        return "\n".join(unique_lines("\n".join(blocks).splitlines()))

    @tool_method
    def body_status(self, layers: list[str] | None = None) -> str:
        """The latest reading with text of each body-state layer, with its age."""
        readings = lookups.latest_body_state(self._store, layers)
        return format_body_status(readings, self._clock())

    # --- planner actions -----------------------------------------------------------------------

    @tool_method
    def store_specific_memory(
        self,
        content: str,
        layer_name: str = "agent_notes",
        x: float | None = None,
        y: float | None = None,
        z: float | None = None,
    ) -> str:
        """Remember a note at (x, y, z), by default the current position."""
        position = self._host.current_position
        here = np.zeros(3) if position is None else position
        px, py, pz = (
            float(here[i]) if value is None else value for i, value in enumerate((x, y, z))
        )
        note_id = self._host.add(content, px, py, pz, layer_name=layer_name, source_type=AGENT_NOTE)
        return f"Stored memory {note_id} in [{layer_name}] at ({px:.1f}, {py:.1f}, {pz:.1f})."

    @tool_method
    def start_episode(self, name: str) -> str:
        """Start an episode (ending an active one first)."""
        episode_id = self._host.start_episode(name)
        return f"Started episode '{name.strip()}' (id {episode_id})."

    @tool_method
    def end_episode(self) -> str:
        """End the active episode."""
        episode_id = self._host.end_episode()
        if episode_id is None:
            return "No active episode."
        episode = self._store.get_episode(episode_id)
        name = episode.name if episode is not None else episode_id
        return f"Ended episode '{name}' (id {episode_id})."

    # --- definitions and dispatch --------------------------------------------------------------

    def attach(self, owner: object, names: list[str]) -> None:
        """Serve a capability's tools (spatial, areas, profile): ``names`` are ``owner``'s
        ``@tool_method`` methods, whose schemas the capability registered.

        Raises:
            ValueError: a name has no registered schema, or is served already.
        """
        for name in names:
            if name not in ALL_SCHEMAS:
                raise ValueError(f"tool {name!r} has no registered schema")
            if name in self._attached or hasattr(type(self), name):
                raise ValueError(f"tool {name!r} is served already")
            self._attached[name] = getattr(owner, name)
        resolver = getattr(owner, "resolve_concept", None)
        if callable(resolver) and resolver not in self._resolvers:
            self._resolvers.append(resolver)

    def _global(self, tool: str, query: str, n_results: int, filters: Mapping[str, object]) -> str:
        """A core tool's global scope: the attached global_search (area memory)."""
        given = sorted(name for name, value in filters.items() if value is not None)
        if given:
            raise InvalidInputError(
                f"{tool}: scope 'global' walks the whole area hierarchy and takes no filters "
                f"(got {', '.join(given)})"
            )
        walk = self._attached.get("global_search")
        if walk is None:
            raise InvalidInputError(f"{tool}: scope 'global' needs the area memory")
        chains = min(n_results, GLOBAL_CHAINS)
        return walk(query, n_results=chains, n_walks=max(chains, 3))

    def tool(self, name: str) -> Callable[..., str]:
        """The callable behind tool ``name`` (a core tool, an action or an attached tool).

        Raises:
            AttributeError: no such tool is served here.
        """
        if name in self._attached:
            return self._attached[name]
        method: Callable[..., str] = getattr(self, name)
        return method

    def definitions(self, include_actions: bool = False) -> list[dict[str, Any]]:
        """The tools served here (and optionally the planner actions) in OpenAI
        function-calling form."""
        return [d for d in tool_definitions(include_actions) if self._serves(d)]

    def dispatch(self, tool_name: Any, arguments: Any = None) -> str:
        """Run a tool by name; returns its text or one line ``Error: ...``, never raises."""
        return dispatch_tool_call(self, tool_name, arguments)

    def for_registration(
        self, include_actions: bool = False
    ) -> list[tuple[Callable[..., str], dict[str, Any]]]:
        """(callable, definition) pairs for frameworks that register tools one by one."""
        return [
            (self.tool(definition["function"]["name"]), definition)
            for definition in self.definitions(include_actions)
        ]

    def _serves(self, definition: dict[str, Any]) -> bool:
        name = definition["function"]["name"]
        return name in self._attached or hasattr(type(self), name)

    # --- internals -----------------------------------------------------------------------------

    def _resolved(self, text: str) -> str:
        """``text``, or what an attached resolver says it stands for (a profile alias)."""
        for resolver in self._resolvers:
            found = resolver(text)
            if found:
                return found
        return text

    def _recall_block(
        self,
        about: _About,
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
            self._store, circle, include_body_state=include_body_state, limit=n
        )
        links = lookups.recall_links(self._store, circle, limit=n)
        area_gists, area_entities = lookups.context_around(self._store, circle, limit=n)
        gists: list[Gist] = _first_unique(
            lookups.gists_by_id(self._store, [g.id for g in links.gists[:n]]) + area_gists, n
        )
        entities: list[Entity] = _first_unique(
            lookups.entities_by_id(self._store, [e.id for e in links.entities[:n]]) + area_entities,
            n,
        )
        relevant = self._relevant(about, [*observations, *gists, *entities])
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
            f"About '{about.label}' — location ({circle.x:.1f}, {circle.y:.1f}), "
            f"radius {circle.radius:.1f}m:"
        ]
        tag = f" ('{about.label}')" if parts > 1 else ""
        current, earlier = _sightings(placed, observations)
        if current or earlier:
            assert placed.entity is not None and placed.stay is not None
            observations = [o for o in observations if o not in current and o not in earlier]
            name, stay = placed.entity.name, placed.stay
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
            lines.extend(_gist_lines(gists, "  ", with_layer=True))
        if entities:
            lines.append(f"Entities{tag}:")
            moved = self._stays.positions_of([e.id for e in entities])
            for e in entities:
                line = history.history_line(e, moved.get(e.id, []))
                lines.append(f"  {_entity_short(e)}" + (f" — {line}" if line else ""))
        if placed.entity is not None and placed.stay is not None and len(placed.stays) > 1:
            lines.extend(f"  {note}" for note in placed.notes if note.startswith("Not seen"))
        others = [_counted(count, kind) for kind, count in left.items() if count]
        if others:
            lines.append(
                f"Also within {circle.radius:.1f}m, not among the matches for '{about.label}': "
                f"{', '.join(others)} (spatial_query lists them)."
            )
        if again:
            lines.append(f"({_counted(again, 'item')} listed above also here.)")
        return "\n".join(lines)

    def _relevant(self, about: _About, records: list[Any]) -> set[str]:
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


def _circle(x: float | None, y: float | None, radius: float | None) -> Circle | None:
    area = area_of(x, y, radius)
    return None if area is None else Circle(*area)


def _entity_short(entity: Entity) -> str:
    noted([entity])
    return f"[{entity.entity_type or 'object'}] {entity.name} (seen {entity.observation_count}x)"


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


class _About:
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


def _gist_lines(gists: list[Gist], prefix: str, *, with_layer: bool = False) -> list[str]:
    """One line per distinct gist text (``(x{n})`` when several gists carry it)."""
    groups: dict[str, list[Gist]] = {}
    for gist in noted(gists):
        groups.setdefault(text_key(gist.text), []).append(gist)
    lines = []
    for group in groups.values():
        gist = group[0]
        layer = f"[{gist.layer_name or 'cross-layer'}] " if with_layer else ""
        lines.append(f"{prefix}{layer}{gist.text}{times_suffix(len(group))}")
    return lines
