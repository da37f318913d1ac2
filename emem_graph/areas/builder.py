"""Building the area forest: a full rebuild, and the incremental update of the branches that new
leaves fall in. Both write one GraphChange (area gists, their SUMMARIZES edges and vectors).

Incremental rule: a new leaf joins the nearest level-1 area that can hold it (the area's box
with the leaf keeps a diagonal within the level's threshold); leaves no area can hold are
clustered into new level-1 areas, which join (or form) areas of the next level the same way.
Only the areas that gained a child, and their ancestors, are rewritten; every other area gist
keeps its id, text and vector.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from emem_graph.areas.clustering import Items, cluster, diagonal, hierarchy
from emem_graph.areas.forest import Area, Forest, Leaf
from emem_graph.consolidation.gists import add_gist
from emem_graph.models import Gist
from emem_graph.storage.changes import GraphChange
from emem_graph.storage.records import gist_vector

if TYPE_CHECKING:
    from emem_graph.areas.texts import AreaTexts
    from emem_graph.storage.store import MemoryStore

CANDIDATE_AREAS = 8
"""Nearest areas (by centre) a new leaf or area tries to join."""


@dataclass
class BuildResult:
    """What a build or an update wrote."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    leaves: int = 0


class ForestBuilder:
    """Writes the area forest of one memory.

    Args:
        store: the memory's store (all writes go through ``store.apply``).
        embed: the memory's embedder (area texts are embedded in one batch per level).
        texts: the summary writer.
        thresholds: the largest box diagonal of an area, per level (metres, growing).
        clock: the memory's clock (created_at of new area gists).
    """

    def __init__(
        self,
        store: MemoryStore,
        embed: Callable[[list[str]], np.ndarray],
        texts: AreaTexts,
        thresholds: Sequence[float],
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._embed = embed
        self._texts = texts
        self.thresholds = list(thresholds)
        self._clock = clock

    # --- full rebuild --------------------------------------------------------------------------

    def rebuild(
        self,
        old: Forest,
        leaves: Sequence[Leaf],
        gist_texts: dict[str, str],
        vectors: dict[str, np.ndarray],
    ) -> tuple[Forest, BuildResult]:
        """A new forest over ``leaves`` replacing ``old`` (one transaction)."""
        forest = Forest()
        result = BuildResult(leaves=len(leaves))
        if leaves:
            items = Items.points(
                np.array([leaf.x for leaf in leaves]), np.array([leaf.y for leaf in leaves])
            )
            levels = hierarchy(items, self.thresholds)
            members: list[list[str]] = _groups([leaf.id for leaf in leaves], levels[0])
            by_id = {leaf.id: leaf for leaf in leaves}
            now = self._clock()
            current = [self._new_area(1, ids, now) for ids in members]
            for area in current:
                forest.add(area)
                for leaf_id in area.children:
                    forest.leaf_kind[leaf_id] = by_id[leaf_id].kind
            self._shape_leaves(current, by_id)
            self._write_texts(current, forest, by_id, gist_texts, vectors, full=True)
            for level, labels in enumerate(levels[1:], start=2):
                groups = _groups([a.id for a in current], labels)
                current = [self._new_area(level, ids, now) for ids in groups]
                for area in current:
                    forest.add(area)
                self._shape_areas(current, forest)
                self._write_texts(current, forest, by_id, gist_texts, vectors)
        change = GraphChange()
        if not old.empty:
            change.run("areas_delete")
            change.delete(list(old.areas), "gist")
            result.deleted = list(old.areas)
        for area in forest.areas.values():
            self._create(change, area, forest, vectors[area.id])
            result.created.append(area.id)
        self._store.apply(change)
        return forest, result

    # --- incremental update --------------------------------------------------------------------

    def update(
        self,
        forest: Forest,
        new: Sequence[Leaf],
        gist_texts: dict[str, str],
        vectors: dict[str, np.ndarray],
    ) -> BuildResult:
        """Add ``new`` leaves to ``forest`` in place, rewriting only the branches they fall in
        (one transaction)."""
        result = BuildResult(leaves=len(new))
        new = [leaf for leaf in new if leaf.id not in forest.leaf_parent]
        if not new:
            return result
        if forest.empty:
            raise ValueError("update() needs a built forest; use rebuild()")
        by_id = {leaf.id: leaf for leaf in new}
        now = self._clock()
        grown: dict[str, list[str]] = {}
        created: list[Area] = []
        # Level 1: leaves join an area that can hold them, the rest form new areas.
        orphans = self._join(
            forest.at_level(1),
            [(leaf.id, (leaf.x, leaf.x, leaf.y, leaf.y)) for leaf in new],
            self.thresholds[0],
            grown,
        )
        for leaf_id, area_id in ((lid, aid) for aid, lids in grown.items() for lid in lids):
            forest.leaf_parent[leaf_id] = area_id
            forest.leaf_kind[leaf_id] = by_id[leaf_id].kind
            forest.areas[area_id].children.append(leaf_id)
        fresh = self._cluster_new(1, orphans, by_id, now)
        for area in fresh:
            forest.add(area)
            for leaf_id in area.children:
                forest.leaf_kind[leaf_id] = by_id[leaf_id].kind
        self._shape_leaves(fresh, by_id)
        created.extend(fresh)
        for level in range(2, len(self.thresholds) + 1):
            boxes = [(a.id, a.box) for a in fresh]
            joined: dict[str, list[str]] = {}
            left = self._join(forest.at_level(level), boxes, self.thresholds[level - 1], joined)
            for area_id, child_ids in joined.items():
                forest.areas[area_id].children.extend(child_ids)
                for child_id in child_ids:
                    forest.areas[child_id].parent = area_id
            grown.update(joined)
            left_ids = set(left)
            fresh = self._cluster_areas(level, [a for a in fresh if a.id in left_ids], now)
            for area in fresh:
                forest.add(area)
            self._shape_areas(fresh, forest)
            created.extend(fresh)
        # The areas that gained a child and all their ancestors are rewritten.
        changed: set[str] = set()
        for area_id in grown:
            for area in forest.chain(area_id):
                changed.add(area.id)
        created_ids = {a.id for a in created}
        changed -= created_ids
        for level in range(1, len(self.thresholds) + 1):
            dirty = [
                forest.areas[i]
                for i in sorted(changed | created_ids)
                if forest.areas[i].level == level
            ]
            if not dirty:
                continue
            if level == 1:
                leaves = self._leaves_of(dirty, forest, by_id)
                self._shape_leaves(dirty, leaves)
                self._write_texts(dirty, forest, leaves, gist_texts, vectors)
            else:
                self._shape_areas(dirty, forest)
                self._write_texts(dirty, forest, {}, gist_texts, vectors)
        change = GraphChange()
        for area in created:
            self._create(change, area, forest, vectors[area.id])
            result.created.append(area.id)
        for area_id in sorted(changed):
            area = forest.areas[area_id]
            self._rewrite(change, area, vectors[area.id], grown.get(area_id, []), forest)
            result.updated.append(area_id)
        self._store.apply(change)
        return result

    # --- shapes --------------------------------------------------------------------------------

    def _new_area(self, level: int, children: list[str], now: float) -> Area:
        return Area(
            id=uuid.uuid4().hex,
            level=level,
            text="",
            x=0.0,
            y=0.0,
            z=0.0,
            radius=0.0,
            box=(0.0, 0.0, 0.0, 0.0),
            t_start=0.0,
            t_end=0.0,
            count=0,
            layer=None,
            created_at=now,
            children=list(children),
        )

    @staticmethod
    def _shape_leaves(areas: Sequence[Area], leaves: dict[str, Leaf]) -> None:
        for area in areas:
            members = [leaves[i] for i in area.children]
            xyz = np.array([[m.x, m.y, m.z] for m in members], dtype=np.float64)
            centre = xyz.mean(axis=0)
            area.x, area.y, area.z = (float(v) for v in centre)
            area.radius = float(np.linalg.norm(xyz[:, :2] - centre[:2], axis=1).max())
            area.box = (
                float(xyz[:, 0].min()),
                float(xyz[:, 0].max()),
                float(xyz[:, 1].min()),
                float(xyz[:, 1].max()),
            )
            area.t_start = min(m.t_start for m in members)
            area.t_end = max(m.t_end for m in members)
            area.count = len(members)
            layers = {m.layer for m in members}
            area.layer = next(iter(layers)) if len(layers) == 1 else None

    @staticmethod
    def _shape_areas(areas: Sequence[Area], forest: Forest) -> None:
        for area in areas:
            members = [forest.areas[i] for i in area.children]
            weight = np.array([m.count for m in members], dtype=np.float64)
            xyz = np.array([[m.x, m.y, m.z] for m in members], dtype=np.float64)
            centre = (xyz * weight[:, None]).sum(axis=0) / max(weight.sum(), 1.0)
            area.x, area.y, area.z = (float(v) for v in centre)
            area.radius = max(
                float(np.hypot(m.x - area.x, m.y - area.y)) + m.radius for m in members
            )
            area.box = (
                min(m.box[0] for m in members),
                max(m.box[1] for m in members),
                min(m.box[2] for m in members),
                max(m.box[3] for m in members),
            )
            area.t_start = min(m.t_start for m in members)
            area.t_end = max(m.t_end for m in members)
            area.count = int(weight.sum())
            layers = {m.layer for m in members}
            area.layer = next(iter(layers)) if len(layers) == 1 else None

    # --- texts and vectors ---------------------------------------------------------------------

    def _write_texts(
        self,
        areas: Sequence[Area],
        forest: Forest,
        leaves: dict[str, Leaf],
        gist_texts: dict[str, str],
        vectors: dict[str, np.ndarray],
        *,
        full: bool = False,
    ) -> None:
        """Summaries of ``areas`` (all of one level) and their vectors, into ``vectors``
        (``full``: every level-1 area of the forest, a rebuild)."""
        if not areas:
            return
        if areas[0].level == 1:
            ids = [i for a in areas for i in a.children]
            texts = self._leaf_texts(ids, forest, gist_texts)
            stored = self._store.vectors.vectors_of(ids)
            missing = [i for i in ids if i not in stored and i in texts]
            if missing:
                stored.update(zip(missing, self._embed([texts[i] for i in missing]), strict=True))
            if full or self._texts.background is None:
                # A full build: the background is the mean of every leaf; an update keeps the
                # one it has (AreaMemory sets the areas' mean after a reopen).
                self._texts.background = unit_mean(list(stored.values()))
            for area in areas:
                order = sorted(
                    (i for i in area.children if i in texts and i in stored),
                    key=lambda i: leaves[i].t_start if i in leaves else 0.0,
                )
                matrix = (
                    np.vstack([stored[i] for i in order])
                    if order
                    else np.zeros((0, 1), dtype=np.float32)
                )
                area.text = self._texts.of_leaves([texts[i] for i in order], matrix) or "(empty)"
        else:
            for area in areas:
                children = [forest.areas[i] for i in area.children]
                area.text = self._texts.of_areas(
                    [c.text for c in children], [c.count for c in children]
                )
        for area in areas:
            vectors[area.id] = self._texts.vector_of(area.text)

    def _leaf_texts(
        self, ids: Sequence[str], forest: Forest, gist_texts: dict[str, str]
    ) -> dict[str, str]:
        observation_ids = [
            i for i in ids if forest.leaf_kind.get(i, "observation") == "observation"
        ]
        texts = {o.id: o.text for o in self._store.get_observations(observation_ids) if o.text}
        for leaf_id in ids:
            if forest.leaf_kind.get(leaf_id) == "gist":
                text = gist_texts.get(leaf_id)
                if text is None:
                    gist = self._store.get_gist(leaf_id)
                    text = gist.text if gist else None
                if text:
                    texts[leaf_id] = text
        return texts

    def _leaves_of(
        self, areas: Sequence[Area], forest: Forest, new: dict[str, Leaf]
    ) -> dict[str, Leaf]:
        """Every leaf of ``areas`` (new ones from ``new``, the others read back)."""
        leaves = dict(new)
        wanted = [i for a in areas for i in a.children if i not in leaves]
        observations = [i for i in wanted if forest.leaf_kind.get(i) != "gist"]
        for o in self._store.get_observations(observations):
            leaves[o.id] = Leaf(
                o.id, "observation", o.x, o.y, o.z, o.timestamp, o.timestamp, o.layer_name
            )
        for leaf_id in wanted:
            if forest.leaf_kind.get(leaf_id) == "gist":
                gist = self._store.get_gist(leaf_id)
                if gist is not None:
                    leaves[leaf_id] = Leaf(
                        gist.id, "gist", gist.x, gist.y, gist.z, gist.time_start,
                        gist.time_end, gist.layer_name,
                    )  # fmt: skip
        for area in areas:
            area.children = [i for i in area.children if i in leaves]
        return leaves

    # --- joining and clustering new items ------------------------------------------------------

    @staticmethod
    def _join(
        areas: Sequence[Area],
        items: Sequence[tuple[str, tuple[float, float, float, float]]],
        threshold: float,
        joined: dict[str, list[str]],
    ) -> list[str]:
        """Put each item into the nearest area that can hold it (growing its box); returns the
        ids of the items no area could hold."""
        if not areas:
            return [item_id for item_id, _ in items]
        from scipy.spatial import cKDTree  # scipy.spatial: ~0.5 s to import, only when building

        centres = np.array([[a.x, a.y] for a in areas])
        tree = cKDTree(centres)
        k = min(CANDIDATE_AREAS, len(areas))
        boxes = {a.id: np.array(a.box) for a in areas}
        left: list[str] = []
        for item_id, box in items:
            centre = ((box[0] + box[1]) / 2, (box[2] + box[3]) / 2)
            _, index = tree.query(centre, k=k)
            placed = False
            for i in np.atleast_1d(index):
                area = areas[int(i)]
                grown = boxes[area.id].copy()
                grown[0] = min(grown[0], box[0])
                grown[1] = max(grown[1], box[1])
                grown[2] = min(grown[2], box[2])
                grown[3] = max(grown[3], box[3])
                if diagonal(grown) <= threshold:
                    boxes[area.id] = grown
                    joined.setdefault(area.id, []).append(item_id)
                    placed = True
                    break
            if not placed:
                left.append(item_id)
        return left

    def _cluster_new(
        self, level: int, ids: list[str], leaves: dict[str, Leaf], now: float
    ) -> list[Area]:
        if not ids:
            return []
        items = Items.points(
            np.array([leaves[i].x for i in ids]), np.array([leaves[i].y for i in ids])
        )
        labels = cluster(items, self.thresholds[level - 1])
        return [self._new_area(level, group, now) for group in _groups(ids, labels)]

    def _cluster_areas(self, level: int, children: list[Area], now: float) -> list[Area]:
        if not children:
            return []
        items = Items(
            np.array([a.x for a in children]),
            np.array([a.y for a in children]),
            np.array([float(a.count) for a in children]),
            np.array([a.box for a in children], dtype=np.float64).reshape(-1, 4),
        )
        labels = cluster(items, self.thresholds[level - 1])
        return [
            self._new_area(level, group, now) for group in _groups([a.id for a in children], labels)
        ]

    # --- writing -------------------------------------------------------------------------------

    def _create(self, change: GraphChange, area: Area, forest: Forest, vector: np.ndarray) -> None:
        add_gist(change, gist_of(area), vector)
        self._link(change, area, area.children, forest)

    def _rewrite(
        self,
        change: GraphChange,
        area: Area,
        vector: np.ndarray,
        new_children: list[str],
        forest: Forest,
    ) -> None:
        change.run(
            "areas_update_gist",
            {
                "id": area.id,
                "text": area.text,
                "x": area.x,
                "y": area.y,
                "z": area.z,
                "radius": area.radius,
                "extent_wkt": area.extent_wkt(),
                "time_start": area.t_start,
                "time_end": area.t_end,
                "source_observation_count": int(area.count),
                "layer": area.layer,
            },
        )
        change.upsert([gist_vector(gist_of(area), vector)])
        self._link(change, area, new_children, forest)

    @staticmethod
    def _link(change: GraphChange, area: Area, children: Sequence[str], forest: Forest) -> None:
        if area.level == 1:
            observations = [c for c in children if forest.leaf_kind.get(c) != "gist"]
            gists = [c for c in children if forest.leaf_kind.get(c) == "gist"]
        else:
            observations, gists = [], list(children)
        change.run_each(
            "link_gist_observation",
            [{"gist_id": area.id, "observation_id": c} for c in observations],
        )
        change.run_each("areas_link_gist", [{"gist_id": area.id, "child_id": c} for c in gists])


def gist_of(area: Area) -> Gist:
    """The Gist node of an area."""
    return Gist(
        id=area.id,
        text=area.text,
        x=area.x,
        y=area.y,
        z=area.z,
        radius=area.radius,
        extent_wkt=area.extent_wkt(),
        time_start=area.t_start,
        time_end=area.t_end,
        source_observation_count=area.count,
        layer_name=area.layer,
        episode_id=None,
        level=area.level,
        tier="long_term",
        created_at=area.created_at,
    )


def unit_mean(vectors: list[np.ndarray]) -> np.ndarray | None:
    """The mean of ``vectors`` scaled to unit length (None for none)."""
    if not vectors:
        return None
    mean = np.asarray(vectors, dtype=np.float32).mean(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)


def _groups(ids: Sequence[str], labels: np.ndarray) -> list[list[str]]:
    groups: dict[int, list[str]] = {}
    for item_id, label in zip(ids, labels.tolist(), strict=True):
        groups.setdefault(int(label), []).append(item_id)
    return [groups[k] for k in sorted(groups)]
