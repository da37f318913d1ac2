"""Agglomerative clustering on position with a size bound, in O(N log N) per level.

Full agglomerative clustering (scipy's linkage) needs the O(N^2) distance matrix. Here a level
is built bottom-up by reciprocal nearest neighbours instead: points are first snapped to a grid
whose cells are a small fraction of the level's size (coincident and near-coincident positions
become one weighted item), then, in rounds, every cluster finds its nearest cluster (a KD-tree
over the centroids) among those it may merge with, and every pair that chose each other merges
(centroid linkage). A merge is allowed only when the merged cluster's bounding box keeps a
diagonal within the level's threshold, so a corridor cannot chain rooms together as single
linkage would. Each round costs O(M log M) for M clusters and merges a constant share of them
in practice, so a level costs O(N log N) (measured in the README).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GRID_FRACTION = 0.125
"""Grid cell side as a fraction of the level threshold (items in one cell start together)."""
NEIGHBOURS = 8
"""Nearest clusters each cluster considers per round."""


@dataclass(frozen=True)
class Items:
    """What one level clusters: weighted items with a position and a bounding box.

    Attributes:
        x, y: item positions (centroids), shape (M,).
        weight: how many observations each item stands for (centroids are weighted by it).
        box: (M, 4) bounding boxes xmin, xmax, ymin, ymax (a point: a zero box).
    """

    x: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    box: np.ndarray

    @classmethod
    def points(cls, x: np.ndarray, y: np.ndarray) -> Items:
        """Unit-weight point items."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        return cls(x, y, np.ones(len(x)), np.stack([x, x, y, y], axis=1).reshape(-1, 4))

    def __len__(self) -> int:
        return len(self.x)


def diagonal(box: np.ndarray) -> np.ndarray:
    """Diagonal length of (..., 4) boxes."""
    return np.hypot(box[..., 1] - box[..., 0], box[..., 3] - box[..., 2])


def cluster(items: Items, threshold: float) -> np.ndarray:
    """Cluster labels 0..K-1 for ``items``: every cluster's bounding box has a diagonal of at
    most ``threshold`` metres (an item larger than that alone stays one cluster).

    Raises:
        ValueError: threshold not positive.
    """
    if threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    count = len(items)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    # Cells: items whose positions share a grid cell start as one cluster (when they fit).
    cell = threshold * GRID_FRACTION
    keys = np.stack([np.floor(items.x / cell), np.floor(items.y / cell)], axis=1)
    _, start = np.unique(keys, axis=0, return_inverse=True)
    start = start.reshape(-1)
    labels = _merge_cells(items, start, threshold)
    return _agglomerate(items, labels, threshold)


def _merge_cells(items: Items, start: np.ndarray, threshold: float) -> np.ndarray:
    """Cell labels, except that an item whose box does not fit its cell's box is set apart."""
    boxes = _boxes(items.box, start, int(start.max()) + 1)
    too_big = diagonal(boxes) > threshold
    if not too_big.any():
        return start
    labels = start.copy()
    apart = np.flatnonzero(too_big[start])
    labels[apart] = start.max() + 1 + np.arange(len(apart))
    return labels


def _boxes(box: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((k, 4))
    out[:, 0] = np.inf
    out[:, 1] = -np.inf
    out[:, 2] = np.inf
    out[:, 3] = -np.inf
    np.minimum.at(out[:, 0], labels, box[:, 0])
    np.maximum.at(out[:, 1], labels, box[:, 1])
    np.minimum.at(out[:, 2], labels, box[:, 2])
    np.maximum.at(out[:, 3], labels, box[:, 3])
    return out


def _agglomerate(items: Items, labels: np.ndarray, threshold: float) -> np.ndarray:
    """Reciprocal-nearest-neighbour merging of the clusters in ``labels`` under the bound."""
    _, labels = np.unique(labels, return_inverse=True)
    labels = labels.reshape(-1)
    while True:
        k = int(labels.max()) + 1
        if k < 2:
            break
        weight = np.bincount(labels, weights=items.weight, minlength=k)
        cx = np.bincount(labels, weights=items.x * items.weight, minlength=k) / weight
        cy = np.bincount(labels, weights=items.y * items.weight, minlength=k) / weight
        boxes = _boxes(items.box, labels, k)
        partner = _nearest_allowed(np.stack([cx, cy], axis=1), boxes, threshold)
        ids = np.arange(k)
        mutual = (partner >= 0) & (partner[np.maximum(partner, 0)] == ids) & (ids < partner)
        if not mutual.any():
            break
        target = ids.copy()
        target[partner[mutual]] = ids[mutual]
        _, labels = np.unique(target[labels], return_inverse=True)
        labels = labels.reshape(-1)
    return labels.astype(np.int64)


def _nearest_allowed(centres: np.ndarray, boxes: np.ndarray, threshold: float) -> np.ndarray:
    """For each cluster, the nearest cluster (by centroid) it may merge with, or -1."""
    from scipy.spatial import cKDTree  # scipy.spatial: ~0.5 s to import, only when building

    k = len(centres)
    tree = cKDTree(centres)
    neighbours = min(NEIGHBOURS + 1, k)
    distance, index = tree.query(centres, k=neighbours)
    distance = distance.reshape(k, -1)[:, 1:]
    index = index.reshape(k, -1)[:, 1:]
    merged = np.stack(
        [
            np.minimum(boxes[:, None, 0], boxes[index, 0]),
            np.maximum(boxes[:, None, 1], boxes[index, 1]),
            np.minimum(boxes[:, None, 2], boxes[index, 2]),
            np.maximum(boxes[:, None, 3], boxes[index, 3]),
        ],
        axis=-1,
    )
    allowed = (diagonal(merged) <= threshold) & np.isfinite(distance)
    distance = np.where(allowed, distance, np.inf)
    best = np.argmin(distance, axis=1)
    partner = index[np.arange(k), best]
    return np.where(np.isfinite(distance[np.arange(k), best]), partner, -1)


def hierarchy(items: Items, thresholds: list[float]) -> list[np.ndarray]:
    """Labels of every level: ``result[0]`` maps items to level-1 clusters, ``result[i]`` maps
    level-i clusters to level-(i+1) clusters (thresholds must grow)."""
    levels: list[np.ndarray] = []
    current = items
    for threshold in thresholds:
        labels = cluster(current, threshold)
        levels.append(labels)
        current = summarize_items(current, labels)
    return levels


def summarize_items(items: Items, labels: np.ndarray) -> Items:
    """The clusters of ``labels`` as items of the next level (weighted centroid, summed
    weight, union box)."""
    k = int(labels.max()) + 1 if len(labels) else 0
    weight = np.bincount(labels, weights=items.weight, minlength=k)
    x = np.bincount(labels, weights=items.x * items.weight, minlength=k) / np.maximum(weight, 1e-12)
    y = np.bincount(labels, weights=items.y * items.weight, minlength=k) / np.maximum(weight, 1e-12)
    return Items(x, y, weight, _boxes(items.box, labels, k))
