"""The ten retrieval tools and the planner actions, as methods returning API.md's text.

Every method validates its arguments against the schema in schemas.py (through
``@tool_method``), flushes the memory, reads through the store's prefiltered primitives and the
named graph queries, and formats with formatting.py. Body-state (interoception) observations are
left out of the perception tools unless ``include_body_state`` is set. Serving them by name
(attached tools, definitions, dispatch) is ServedTools' (serving.py); recall's block around a
place is recall.py's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from emem_graph.errors import StorageError
from emem_graph.filters import FILTER_PARAMETERS, area_of, perception_filter
from emem_graph.models import AGENT_NOTE, STAY_RADIUS, Entity, EntityPosition, Gist
from emem_graph.retrieval import history, lookups
from emem_graph.retrieval.dispatch import tool_method
from emem_graph.retrieval.formatting import (
    format_body_status,
    format_by_layer,
    format_collapsed,
    format_entity,
    format_episode,
    format_time,
    noted,
    numbered,
    one_line,
    records_for_lines,
    source_label,
    unique_lines,
)
from emem_graph.retrieval.lookups import Circle
from emem_graph.retrieval.recall import (
    MIN_RECALL_RADIUS,
    About,
    entity_short,
    gist_lines,
    recall_block,
)
from emem_graph.retrieval.search import HybridSearch, split_request
from emem_graph.retrieval.serving import ServedTools
from emem_graph.retrieval.timeparse import parse_optional_time, parse_time_window

if TYPE_CHECKING:
    from emem_graph.retrieval.host import ToolHost
    from emem_graph.storage.store import MemoryStore

CONSOLIDATED_HEADER = "(Observations consolidated — showing summaries)"
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


class RetrievalTools(ServedTools):
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
        super().__init__()
        self._host = host
        self._store = store
        self._stays: history.StayReader = history.NoStays() if stays is None else stays
        self._clock = clock
        self._search = HybridSearch(store, host.embed, host.config, clock)
        # entity_query's line of each entity, with the kept entity and stays it was written
        # from: a change replaces those objects (EntityIndex), so the line holds while they
        # are the same ones, so a repeated question does not format its entities again.
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
        after, before = parse_time_window(time_after, time_before, now)
        where = perception_filter(
            layer=layer,
            time_after=after,
            time_before=before,
            area=area_of(near_x, near_y, spatial_radius),
            episode_id=episode_id,
            include_body_state=include_body_state,
        )
        # Records of one text at one place share a line: more are asked to answer n lines.
        # (Counted before formatting: a formatted pass notes its records for the caller's
        # structured result, and a discarded one had left them there: 11 records behind 10
        # lines, seen by the ROS bridge's test.)
        records = records_for_lines(
            lambda k: [hit.record for hit in self._search.search_request(query, k, where)],
            n_results,
        )
        if not records:
            return "No results found."
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
        after, before = parse_time_window(time_after, time_before, now)
        found = records_for_lines(
            lambda k: lookups.observations_near(
                self._store,
                Circle(x, y, radius),
                layer=layer,
                time_after=after,
                time_before=before,
                include_body_state=include_body_state,
                limit=k,
            ),
            n_results,
        )
        if not found:
            return "No observations found."
        return numbered(format_collapsed(found, n_results))

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
        after, before = parse_time_window(time_after, time_before, now)
        if last_n_minutes is not None:
            recent = now - last_n_minutes * 60.0
            after = recent if after is None else max(after, recent)
        if after is not None and before is not None and after > before:
            return "No observations found."  # the last minutes end before time_before
        window: dict[str, Any] = {
            "time_after": after,
            "time_before": before,
            "layer": layer,
            "circle": _circle(near_x, near_y, spatial_radius),
            "newest_first": order == "newest",
        }
        found = records_for_lines(
            lambda k: lookups.observations_in_window(
                self._store, include_body_state=include_body_state, limit=k, **window
            ),
            n_results,
        )
        if found:
            return numbered(format_collapsed(found, n_results))
        gists = records_for_lines(
            lambda k: lookups.gists_in_window(self._store, limit=k, **window), n_results
        )
        if gists:
            return CONSOLIDATED_HEADER + "\n" + numbered(format_collapsed(gists, n_results))
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
                parts.extend(gist_lines(gists, "  - "))
            if entities:
                parts.append("Nearby entities:")
                parts.extend(f"  - {entity_short(e)}" for e in entities)
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
        after, before = parse_time_window(time_after, time_before, now)
        where = perception_filter(
            kinds=("gist",),
            time_after=after,
            time_before=before,
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
        after, before = parse_time_window(time_after, time_before, now)
        question = history.asked(concept, now)
        at = question.at if at_time is None else history.parse_at_time(at_time, now)
        where = perception_filter(
            layer=layer,
            time_after=after,
            time_before=before,
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
            about = About(part if len(parts) > 1 else query, vector, dense)
            blocks.append(
                recall_block(
                    self._store,
                    self._stays,
                    about,
                    circle,
                    n_results,
                    include_body_state,
                    shown,
                    len(parts),
                    placed,
                )
            )
        if not blocks:
            return f"No memories found for: {one_line(query)}"
        blocks.extend(f"No memories found for: {one_line(part)}" for part in missing)
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
        """Remember a note at (x, y, z), by default the current position; it is written
        (durable) before the answer says it is stored.

        Raises:
            StorageError: the note could not be written: the answer names it as not durable.
        """
        position = self._host.current_position
        here = np.zeros(3) if position is None else position
        px, py, pz = (
            float(here[i]) if value is None else value for i, value in enumerate((x, y, z))
        )
        note_id = self._host.add(content, px, py, pz, layer_name=layer_name, source_type=AGENT_NOTE)
        self._make_durable(note_id)
        return f"Stored memory {note_id} in [{layer_name}] at ({px:.1f}, {py:.1f}, {pz:.1f})."

    def _make_durable(self, note_id: str) -> None:
        # The callers of this action (an MCP client, a ROS service client, a planner) cannot
        # flush: "Stored" must mean the note survives the process being killed right after.
        try:
            self._host.flush()
        except Exception as exc:
            raise StorageError(
                f"store_specific_memory: note {note_id} is not durable yet, writing it failed "
                f"({one_line(str(exc))}); it stays queued for the next flush or close"
            ) from exc
        if self._store.get_observation(note_id) is None:  # refused alone: set aside
            raise StorageError(
                f"store_specific_memory: note {note_id} was not stored, the store refused it "
                "(kept in rejected.jsonl of the memory's directory)"
            )

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


def _circle(x: float | None, y: float | None, radius: float | None) -> Circle | None:
    area = area_of(x, y, radius)
    return None if area is None else Circle(*area)
