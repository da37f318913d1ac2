"""RecordReads: the store's typed reads of records: by id (observations and entities from the
in-process indexes, gists kept between writes, the graph for the rest), and observations and
episodes by area, time or episode from the graph.

A mixin of MemoryStore (storage/store.py), which sets the attributes declared here at open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from emem_graph.models import Entity, Episode, Gist, Observation, VectorHit
from emem_graph.storage.records import episode, nodes_by_id, observation

if TYPE_CHECKING:
    from emem_graph.storage.entity_index import EntityIndex
    from emem_graph.storage.graph import GraphDB
    from emem_graph.storage.graph_reads import GraphReads
    from emem_graph.storage.observation_index import ObservationIndex

T = TypeVar("T")

GET_QUERY = {"observation": "get_observations", "gist": "get_gists", "entity": "get_entities"}
"""The named query reading each kind of node with a vector by id (its keys: those kinds)."""
_NODE_TABLE = {"observation": "Observation", "gist": "Gist", "entity": "Entity"}


class RecordReads:
    """Records by id, and observations and episodes read from the graph."""

    graph: GraphDB
    index: ObservationIndex
    entities: EntityIndex
    _reads: GraphReads

    def get_observation(self, observation_id: str) -> Observation | None:
        """One observation by id, or None."""
        found = self.get_observations([observation_id])
        return found[0] if found else None

    def get_observations(self, ids: Sequence[str]) -> list[Observation]:
        """Observations by id, in the order given; unknown ids are skipped (from the in-process
        index, the graph for any it lacks)."""
        found = self._fetch("observation", ids)
        return [found[i] for i in ids if i in found]

    def get_gist(self, gist_id: str) -> Gist | None:
        """One gist by id, or None."""
        found = self._get_many("gist", [gist_id])
        return found[0] if found else None  # type: ignore[return-value]

    def get_gists(self, ids: Sequence[str]) -> list[Gist]:
        """Gists by id, in the order given; unknown ids are skipped."""
        found = self._fetch("gist", list(dict.fromkeys(ids)))
        return [found[i] for i in ids if i in found]

    def get_entity(self, entity_id: str) -> Entity | None:
        """One entity by id, or None."""
        found = self._get_many("entity", [entity_id])
        return found[0] if found else None  # type: ignore[return-value]

    def get_episode(self, episode_id: str) -> Episode | None:
        """One episode by id, or None."""
        rows = self.graph.query("get_episode", {"id": episode_id})
        return episode(rows[0]["e"]) if rows else None

    def get_episode_observations(self, episode_id: str) -> list[Observation]:
        """The observations that BELONG_TO an episode, in time order."""
        rows = self.graph.query("episode_observations", {"episode_id": episode_id})
        return [observation(row["o"]) for row in rows]

    def observations_in_radius(
        self,
        x: float,
        y: float,
        radius: float,
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
        include_body_state: bool = False,
        limit: int | None = None,
    ) -> list[Observation]:
        """Observations within ``radius`` of (x, y), nearest first (box scan, exact circle;
        ties by id)."""
        rows = self._box_rows(
            (x - radius, x + radius, y - radius, y + radius),
            layer=layer,
            time_after=time_after,
            time_before=time_before,
            include_body_state=include_body_state,
        )
        scored = [(((r["x"] - x) ** 2 + (r["y"] - y) ** 2) ** 0.5, r["id"]) for r in rows]
        inside = sorted((d, i) for d, i in scored if d <= radius)
        if limit is not None:
            inside = inside[:limit]
        return self.get_observations([i for _, i in inside])

    def observations_in_box(
        self, xmin: float, xmax: float, ymin: float, ymax: float, *, limit: int | None = None
    ) -> list[Observation]:
        """Perception observations inside an axis-aligned box, oldest first (ties by id, so
        that the order is the same after a reopen)."""
        rows = self._box_rows((xmin, xmax, ymin, ymax))
        rows.sort(key=lambda r: (r["timestamp"], r["id"]))
        if limit is not None:
            rows = rows[:limit]
        return self.get_observations([r["id"] for r in rows])

    def _box_rows(
        self,
        box: tuple[float, float, float, float],
        *,
        layer: str | None = None,
        time_after: float | None = None,
        time_before: float | None = None,
        include_body_state: bool = False,
    ) -> list[dict[str, Any]]:
        """The rows (id, x, y, timestamp) of the observations inside ``box`` (xmin, xmax,
        ymin, ymax), unordered."""
        xmin, xmax, ymin, ymax = box
        return self.graph.query(
            "observations_in_box",
            {
                "xmin": xmin,
                "xmax": xmax,
                "ymin": ymin,
                "ymax": ymax,
                "layer": layer,
                "time_after": time_after,
                "time_before": time_before,
                "include_body_state": include_body_state,
            },
        )

    def observations_in_time(
        self,
        time_after: float | None,
        time_before: float | None,
        *,
        layer: str | None = None,
        newest_first: bool = True,
        limit: int = 100,
        include_body_state: bool = False,
    ) -> list[Observation]:
        """Observations in a time range, newest (or oldest) first."""
        rows = self.graph.query(
            "observations_in_time",
            {
                "time_after": time_after,
                "time_before": time_before,
                "layer": layer,
                "newest_first": newest_first,
                "limit": int(limit),
                "include_body_state": include_body_state,
            },
        )
        return self.get_observations([r["id"] for r in rows])

    def last_ended_episode_id(self) -> str | None:
        """The episode that ended most recently (what a new episode FOLLOWS)."""
        rows = self.graph.query("last_ended_episode")
        return rows[0]["id"] if rows else None

    def active_episode_ids(self) -> list[str]:
        """Episodes still marked active, oldest first."""
        return [row["id"] for row in self.graph.query("active_episodes")]

    def episode_last_time(self, episode_id: str) -> float | None:
        """Time of an episode's latest observation, or None when it has none."""
        rows = self.graph.query("episode_last_observation_time", {"id": episode_id})
        return rows[0]["t"] if rows else None

    def latest_perception_position(self) -> np.ndarray | None:
        """Position of the latest perception observation, or None on an empty memory."""
        return self.index.latest_perception_position()

    def _get_many(self, kind: str, ids: Sequence[str]) -> list[Observation | Gist | Entity]:
        if not ids:
            return []
        nodes = self._fetch(kind, ids)
        return [nodes[i] for i in ids if i in nodes]

    def _fetch(self, kind: str, ids: Sequence[str]) -> dict[str, Any]:
        """Records of ``kind`` by id (observations and entities from the in-process indexes,
        the graph for any observation the index lacks; primary-key lookups for short lists)."""
        if not ids:
            return {}
        if kind == "entity":
            return self.entities.get(ids)
        if kind == "observation":
            # A graph round trip per search (locate, recall, nearest) was half of locate's
            # time at 20k observations: 6 of 11 ms.
            found: dict[str, Any] = self.index.records(ids)
            missing = [i for i in ids if i not in found]
            if missing:
                found.update(self._fetch_nodes(kind, missing))
            return found
        if kind == "gist":
            # Gists are few and change only with a write: kept until the graph's next one
            # (a graph round trip per search_gists call was most of its time).
            return self._reads.gists(ids, self._fetch_nodes)
        return self._fetch_nodes(kind, ids)

    def _fetch_nodes(self, kind: str, ids: Sequence[str]) -> dict[str, Any]:
        rows = self.graph.nodes_by_id(_NODE_TABLE[kind], ids, GET_QUERY[kind])
        return nodes_by_id(rows, kind)

    def cached_read(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        """``read()``'s result, kept until the graph's next write transaction: for reads of the
        graph alone whose answer is small (an episode's span, the recent episodes). The result
        is shared by later calls: callers must not change it."""
        return self._reads.get(key, read)

    def _hydrate(
        self, hits: list[VectorHit]
    ) -> list[tuple[VectorHit, Observation | Gist | Entity]]:
        records: dict[str, Observation | Gist | Entity] = {}
        for kind in GET_QUERY:
            ids = [h.id for h in hits if h.kind == kind]
            if ids:
                records.update(self._fetch(kind, ids))
        # A hit whose node is gone (deleted between the two stores) is dropped, not returned.
        return [(h, records[h.id]) for h in hits if h.id in records]
