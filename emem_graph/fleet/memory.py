"""FleetMemory: the retrieval tools asked of every robot of a fleet at once (or of some).

Answers come from the shared table (shared_table.py) restricted to what each robot's committed
manifest names; positions are in the fleet frame; every answer line names its robot
(``[robot a] ...``). The record lines are those of one memory (retrieval/formatting.py), and
locate uses one memory's estimate (retrieval/locate.py) over the fleet's hits. Dense search
only: the keyword half of a memory's hybrid search, and locate's history of moved things, stay
with each robot's own memory.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emem_graph import validation
from emem_graph.config import MemoryConfig
from emem_graph.errors import InvalidInputError
from emem_graph.fleet.entities import FleetEntity, Sighting, merge_entities
from emem_graph.fleet.layout import Manifest, check_robot, read_committed
from emem_graph.fleet.location import FleetLocation
from emem_graph.fleet.push import MARKER as FLEET_MARKER
from emem_graph.fleet.shared_table import SharedTable, sql_in, sql_text
from emem_graph.fleet.tools import FLEET_DOOR, fleet_tool_definitions
from emem_graph.models import Entity, Gist, Observation
from emem_graph.retrieval.dispatch import dispatch_tool_call
from emem_graph.retrieval.formatting import format_record, numbered
from emem_graph.retrieval.locate import estimate_location
from emem_graph.retrieval.timeparse import parse_optional_time, parse_time_window

log = logging.getLogger(__name__)

Record = Observation | Gist | Entity
ROW_COLUMNS = (
    "key", "robot", "id", "kind", "text", "x", "y", "z", "t", "t_end", "layer",
    "source_type", "tier", "entity_type", "count", "radius", "episode_id", "push",
)  # fmt: skip
"""The shared table's columns a tool reads (everything but the vector)."""
REFRESH_S = 5.0
"""How long the robots' manifests are trusted before they are read again."""
BODY_STATE = "interoception"
OVERSAMPLE = 3
"""A search asks for this many times n rows: versions a push superseded are dropped after."""
CONSOLIDATED_HEADER = "(Observations consolidated — showing summaries)"
PIN_TRIES = 3
"""How often a refresh pins the table again when a manifest names a push the table it pinned
did not exist for yet (the fleet's first push committed in between)."""


@dataclass(frozen=True)
class _View:
    """What one answer reads: the robots' manifests and the shared table pinned before them,
    so that every row the manifests name is in the table (shared_table.SharedTable.pinned)."""

    manifests: dict[str, Manifest] = field(default_factory=dict)
    damaged: dict[str, str] = field(default_factory=dict)
    table: SharedTable | None = None


class FleetMemory:
    """The fleet at ``uri``, asked like one memory.

    Args:
        location: the fleet's root (a FleetLocation or its URI: ``s3://bucket/prefix``, a
            ``file://`` URI or a path).
        embedding_provider: the embedder every robot used (``.embed(list[str])``); the
            default is the memory's default model.
        get_current_time: the clock relative times ("-10m") count from.
        config: the entity-merge thresholds (entity_similarity_threshold,
            entity_spatial_radius) are read from it.

    Raises:
        InvalidInputError: a bad URI.
    """

    def __init__(
        self,
        location: FleetLocation | str,
        *,
        embedding_provider: Any = None,
        get_current_time: Callable[[], float] | None = None,
        config: MemoryConfig | None = None,
    ) -> None:
        self.location = location if isinstance(location, FleetLocation) else FleetLocation(location)
        self._embedder = embedding_provider
        self._clock = (
            time.time if get_current_time is None else validation.checked_clock(get_current_time)
        )
        self._config = config or MemoryConfig()
        self._table = SharedTable(self.location)
        self._lock = threading.Lock()
        self._view = _View()
        self._warned: set[str] = set()
        self._read_at = -math.inf

    # --- what is committed ----------------------------------------------------------------

    def refresh(self) -> None:
        """Take the shared table's latest version, then read every robot's manifest, now.
        Answers read that pair until the next refresh: the table is pinned first, so it holds
        every row the manifests name, even when a push commits and deletes its superseded rows
        in between (the answer is then the state before that push). A robot whose manifest
        is damaged (or a folder under ``robots/`` no push made) is left out of every answer,
        with a warning naming the file (once per FleetMemory)."""
        view = _View()
        # A location no robot pushed to holds no fleet: nothing is read, and nothing made
        # there (LanceDB's connect would create the vectors folder).
        if self.location.exists(FLEET_MARKER):
            for _ in range(PIN_TRIES):
                table = self._table.pinned()
                manifests, damaged = read_committed(self.location)
                view = _View(manifests, damaged, table)
                if table.exists or not manifests:
                    break
        damaged = view.damaged
        with self._lock:
            self._view = view
            self._read_at = time.monotonic()
            new = {r: why for r, why in damaged.items() if why not in self._warned}
            self._warned.update(new.values())
        for robot, why in sorted(new.items()):
            log.warning("robot %s is left out of the fleet: %s", robot, why)

    def robots(self) -> dict[str, int]:
        """Each robot that committed a push, and its last push number."""
        return {robot: manifest.push for robot, manifest in self._current().manifests.items()}

    def damaged_robots(self) -> dict[str, str]:
        """The robots left out of every answer because their manifest is damaged, each with
        what is wrong (the file named)."""
        return dict(self._current().damaged)

    def _current(self) -> _View:
        """The manifests and pinned table an answer reads (read again every REFRESH_S)."""
        if time.monotonic() - self._read_at > REFRESH_S:
            self.refresh()
        with self._lock:
            return self._view

    def _visible(self, view: _View, robot: str | Sequence[str] | None) -> str | None:
        """The filter of the rows committed pushes name, of ``robot`` (a name or names) only
        when given; None when no such row can exist."""
        committed = {name: manifest.push for name, manifest in view.manifests.items()}
        if robot is not None:
            wanted = [robot] if isinstance(robot, str) else list(robot)
            for name in wanted:
                check_robot(name)
            committed = {name: push for name, push in committed.items() if name in wanted}
            damaged = view.damaged
            if not committed and any(name in damaged for name in wanted):
                name = next(name for name in wanted if name in damaged)
                raise InvalidInputError(f"robot {name} is left out of the fleet: {damaged[name]}")
        if not committed:
            return None
        parts = [
            f"(robot = {sql_text(name)} AND push <= {push})" for name, push in committed.items()
        ]
        return "(" + " OR ".join(parts) + ")"

    # --- the tools ----------------------------------------------------------------------

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
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """Observations, gists and entities of every robot nearest in meaning to ``query``."""
        _need_text(query, "query")
        view = self._current()
        where = self._where(
            view, robot, layer=layer, time_after=time_after, time_before=time_before
        )
        where = _and(where, _circle(near_x, near_y, spatial_radius))
        hits = self._dense(view, query, n_results, where)
        if not hits:
            return "No results found."
        return numbered([_line(row, record) for row, record, _ in hits])

    def search_gists(
        self,
        query: str,
        n_results: int = 10,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """The robots' gists nearest in meaning to ``query``."""
        _need_text(query, "query")
        view = self._current()
        where = self._where(
            view, robot, kinds=("gist",), time_after=time_after, time_before=time_before
        )
        hits = self._dense(view, query, n_results, where)
        if not hits:
            return "No gists found."
        return numbered([_line(row, record) for row, record, _ in hits])

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
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """Observations of every robot within ``radius`` of (x, y) in the fleet frame, nearest
        first."""
        view = self._current()
        where = self._where(
            view,
            robot,
            kinds=("observation",),
            layer=layer,
            time_after=time_after,
            time_before=time_before,
        )
        rows = self._rows(view, _and(where, _circle(x, y, radius)))
        rows.sort(key=lambda r: (math.hypot(r["x"] - x, r["y"] - y), -r["t"], r["key"]))
        if not rows:
            return "No observations found."
        return numbered([_line(row, _record(row)) for row in rows[:n_results]])

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
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """Observations of every robot in a time window, newest (or oldest) first; the
        window's gists when none is left."""
        view = self._current()
        if order not in ("newest", "oldest"):
            raise InvalidInputError(f"order is 'newest' or 'oldest', got {order!r}")
        now = self._clock()
        after, before = parse_time_window(time_after, time_before, now)
        if last_n_minutes is not None:
            recent = now - float(last_n_minutes) * 60.0
            after = recent if after is None else max(after, recent)
        if after is not None and before is not None and after > before:
            return "No observations found."  # the last minutes end before time_before
        circle = _circle(near_x, near_y, spatial_radius)
        sign = -1.0 if order == "newest" else 1.0
        for kind in ("observation", "gist"):
            where = self._where(
                view, robot, kinds=(kind,), layer=layer, time_after=after, time_before=before
            )
            rows = self._rows(view, _and(where, circle))
            if rows:
                rows.sort(key=lambda r: (sign * r["t"], r["key"]))
                lines = numbered([_line(row, _record(row)) for row in rows[:n_results]])
                return lines if kind == "observation" else f"{CONSOLIDATED_HEADER}\n{lines}"
        return "No observations found."

    def entity_query(
        self,
        name: str | None = None,
        entity_type: str | None = None,
        near_x: float | None = None,
        near_y: float | None = None,
        spatial_radius: float | None = None,
        last_seen_after: str | float | None = None,
        n_results: int = 10,
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """Fleet entities (one per thing, however many robots saw it), most recently seen
        first, each with its per-robot sightings."""
        view = self._current()
        since = parse_optional_time(last_seen_after, self._clock(), name="last_seen_after")
        found = []
        for fleet_entity in self._entities(view, robot):
            merged = fleet_entity.entity
            names = [s.entity.name.lower() for s in fleet_entity.sightings]
            if name is not None and not any(name.lower() in each for each in names):
                continue
            if entity_type is not None and merged.entity_type != entity_type:
                continue
            if since is not None and merged.last_seen < since:
                continue
            if (
                near_x is not None
                and near_y is not None
                and spatial_radius is not None
                and math.hypot(merged.x - near_x, merged.y - near_y) > spatial_radius
            ):
                continue
            found.append(fleet_entity)
        if not found:
            return "No entities found."
        found.sort(key=lambda f: (-f.entity.last_seen, f.entity.name))
        return numbered([f.line() for f in found[:n_results]])

    def fleet_entities(self, robot: str | Sequence[str] | None = None) -> list[FleetEntity]:
        """Every robot's entities merged into fleet entities (most-seen first)."""
        return self._entities(self._current(), robot)

    def _entities(self, view: _View, robot: str | Sequence[str] | None) -> list[FleetEntity]:
        where = self._where(view, robot, kinds=("entity",), perception=False)
        if where is None or view.table is None:
            return []
        table = view.table.scan(where, [*ROW_COLUMNS, "vector"])
        rows = _newest(table.to_pylist())
        sightings = []
        for row in rows:
            vector = np.asarray(row["vector"], dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            unit = vector / norm if norm > 0 else vector
            record = _record(row)
            assert isinstance(record, Entity)
            sightings.append(Sighting(robot=row["robot"], entity=record, vector=unit))
        return merge_entities(
            sightings,
            name_threshold=self._config.entity_similarity_threshold,
            radius=self._config.entity_spatial_radius,
        )

    def locate(
        self,
        concept: str,
        n_results: int = 10,
        layer: str | None = None,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """Where ``concept`` is, in the fleet frame: one memory's estimate over the fleet's
        strong hits, with the robots whose memories it rests on."""
        _need_text(concept, "concept")
        view = self._current()
        where = self._where(
            view, robot, layer=layer, time_after=time_after, time_before=time_before
        )
        hits = self._dense(view, concept, n_results, where)
        estimate = estimate_location([(record, score) for _, record, score in hits])
        if estimate is None:
            return "Could not locate: no matching memories found."
        robot_of = {id(record): row["robot"] for row, record, _ in hits}
        used = [robot_of[id(record)] for record, _ in estimate.hits]
        counts = ", ".join(f"{used.count(r)}x robot {r}" for r in sorted(set(used)))
        lines = [
            f"Location: ({estimate.x:.1f}, {estimate.y:.1f}, {estimate.z:.1f})",
            f"Radius: {estimate.radius:.1f}m",
            f"Based on: {len(estimate.hits)} memories ({counts})",
        ]
        lines.extend(
            f"  [robot {robot_of[id(record)]}] {format_record(record)}"
            for record, _ in estimate.hits[:3]
        )
        return "\n".join(lines)

    def recall(
        self,
        query: str,
        n_results: int = 10,
        radius_multiplier: float = 1.5,
        robot: str | Sequence[str] | None = None,
    ) -> str:
        """Everything the fleet remembers around the place ``query`` is located at:
        observations, summaries and entities, each naming its robot."""
        _need_text(query, "query")
        view = self._current()
        where = self._where(view, robot)
        hits = self._dense(view, query, n_results, where)
        estimate = estimate_location([(record, score) for _, record, score in hits])
        if estimate is None:
            return f"No memories found for: {query}"
        radius = estimate.radius * radius_multiplier
        lines = [
            f"About '{query}' — location ({estimate.x:.1f}, {estimate.y:.1f}), radius "
            f"{radius:.1f}m:"
        ]
        around = _and(self._where(view, robot), _circle(estimate.x, estimate.y, radius))
        rows = self._rows(view, around)
        rows.sort(key=lambda r: (math.hypot(r["x"] - estimate.x, r["y"] - estimate.y), r["key"]))
        sections = (("observation", "Observations:"), ("gist", "Summaries:"))
        for kind, title in sections:
            chosen = [row for row in rows if row["kind"] == kind][:n_results]
            if chosen:
                lines.append(title)
                lines.extend(f"  {_line(row, _record(row))}" for row in chosen)
        entities = [
            f for f in self._entities(view, robot)
            if math.hypot(f.entity.x - estimate.x, f.entity.y - estimate.y) <= radius
        ]  # fmt: skip
        if entities:
            lines.append("Entities:")
            lines.extend(f"  {f.line()}" for f in entities[:n_results])
        return "\n".join(lines)

    # --- the tools by name (MCP, LLM tool calls) ----------------------------------------

    def get_tool_definitions(self, include_actions: bool = False) -> list[dict[str, Any]]:
        """The fleet's tools in OpenAI function-calling form (a fleet has no write actions:
        ``include_actions`` changes nothing)."""
        return fleet_tool_definitions()

    def dispatch_tool_call(
        self, tool_name: str, arguments: dict[str, Any] | str | None = None
    ) -> str:
        """Run a fleet tool by name with a dict or JSON string of arguments; its text, or one
        line ``Error: ...``. Never raises. The arguments are checked as a memory's are, by the
        same code (retrieval/dispatch.py) against the fleet's schemas (fleet/tools.py): sizes,
        nesting, types and bounds, and at most MAX_TOOL_LIST_ITEMS robots of at most
        MAX_ROBOT_CHARS characters each (each a robot's name, as check_robot says)."""
        return dispatch_tool_call(self, tool_name, arguments, FLEET_DOOR)

    # --- reading the shared table -------------------------------------------------------

    def _where(
        self,
        view: _View,
        robot: str | Sequence[str] | None,
        *,
        kinds: Sequence[str] | None = None,
        layer: str | None = None,
        time_after: str | float | None = None,
        time_before: str | float | None = None,
        perception: bool = True,
    ) -> str | None:
        visible = self._visible(view, robot)
        if visible is None:
            return None
        now = self._clock()
        after, before = parse_time_window(time_after, time_before, now)
        parts = [visible]
        if kinds is not None:
            parts.append(sql_in("kind", kinds))
        if perception:
            parts.append(f"(source_type IS NULL OR source_type <> {sql_text(BODY_STATE)})")
        if layer is not None:
            parts.append(f"layer = {sql_text(layer)}")
        if after is not None:
            parts.append(f"t_end >= {float(after)!r}")
        if before is not None:
            parts.append(f"t <= {float(before)!r}")
        return " AND ".join(parts)

    def _rows(self, view: _View, where: str | None) -> list[dict[str, Any]]:
        if where is None or view.table is None:
            return []
        return _newest(view.table.scan(where, ROW_COLUMNS).to_pylist())

    def _dense(
        self, view: _View, text: str, n_results: int, where: str | None
    ) -> list[tuple[dict[str, Any], Record, float]]:
        """(row, record, cosine similarity) of the n nearest rows, best first."""
        if where is None or view.table is None or n_results < 1:
            return []
        vector = self._embed(text)
        rows = view.table.search(vector, where, OVERSAMPLE * n_results + 10, ROW_COLUMNS)
        kept = _newest(rows)
        kept.sort(key=lambda r: (r["_distance"], r["key"]))
        return [(row, _record(row), 1.0 - float(row["_distance"])) for row in kept[:n_results]]

    def _embed(self, text: str) -> np.ndarray:
        if self._embedder is None:
            from emem_graph.ingest.embeddings import SentenceTransformerEmbedder

            self._embedder = SentenceTransformerEmbedder(self._config.embedding_checkpoint)
        return np.asarray(self._embedder.embed([text])[0], dtype=np.float32)


def _need_text(value: str, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be non-empty text")


def _and(where: str | None, extra: str | None) -> str | None:
    if where is None or extra is None:
        return where
    return f"{where} AND {extra}"


def _circle(x: float | None, y: float | None, radius: float | None) -> str | None:
    """The SQL of a horizontal circle, None unless all three are given."""
    if x is None or y is None or radius is None:
        return None
    values = [float(x), float(y), float(radius)]
    if not all(math.isfinite(v) for v in values) or values[2] < 0:
        raise InvalidInputError(f"a circle needs finite x, y and a radius >= 0, got {values}")
    cx, cy, r = values
    return f"((x - {cx!r}) * (x - {cx!r}) + (y - {cy!r}) * (y - {cy!r}) <= {r * r!r})"


def _newest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per record of each robot: its newest visible version (a push supersedes the
    robot's older versions of a row, deleted just after its commit). Push numbers are the
    robot's own, so only versions of one robot are compared: robots copied from one memory
    share record ids, and each keeps its rows."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        record = (row["robot"], row["id"])
        kept = best.get(record)
        if kept is None or row["push"] > kept["push"]:
            best[record] = row
    return list(best.values())


def _record(row: dict[str, Any]) -> Record:
    """The shared-table row as the record model one memory formats."""
    kind = row["kind"]
    if kind == "observation":
        return Observation(
            id=row["id"],
            text=row["text"],
            x=row["x"],
            y=row["y"],
            z=row["z"] or 0.0,
            timestamp=row["t"],
            layer_name=row["layer"] or "default",
            source_type=row["source_type"] or "manual",
            episode_id=row["episode_id"],
            tier=row["tier"] or "short_term",
        )
    if kind == "gist":
        return Gist(
            id=row["id"],
            text=row["text"],
            x=row["x"],
            y=row["y"],
            z=row["z"] or 0.0,
            radius=row["radius"] or 0.0,
            time_start=row["t"],
            time_end=row["t_end"],
            source_observation_count=row["count"] or 0,
            layer_name=row["layer"],
            episode_id=row["episode_id"],
            tier=row["tier"] or "long_term",
        )
    return Entity(
        id=row["id"],
        name=row["text"],
        entity_type=row["entity_type"],
        x=row["x"],
        y=row["y"],
        z=row["z"] or 0.0,
        first_seen=row["t"],
        last_seen=row["t_end"],
        observation_count=row["count"] or 1,
        layer_name=row["layer"] or "default",
    )


def _line(row: dict[str, Any], record: Record) -> str:
    """A record's line of one memory, after the robot that remembers it."""
    return f"[robot {row['robot']}] {format_record(record)}"
