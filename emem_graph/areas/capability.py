"""AreaMemory: the area forest of one memory, kept up to date, and its two tools.

The forest is built on first use (an area tool, ``build()``, or ``emem-graph areas``), then
kept up to date incrementally: the flush thread only notes the observations written
(``observations_written`` is cheap), and the next area tool call or ``update()`` adds them to
the branches they fall in. Observations written while no process kept the forest (or before it
was first built) are found on the first update after opening.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import emem_graph.areas.schemas  # noqa: F401  (registers the tools' schemas)
from emem_graph.areas.builder import BuildResult, ForestBuilder, unit_mean
from emem_graph.areas.forest import Area, Forest, Leaf, gist_leaves, load_forest, load_leaves
from emem_graph.areas.formatting import format_area, format_chain, format_walk_chain
from emem_graph.areas.texts import AreaTexts
from emem_graph.areas.walk import WalkResult, walk
from emem_graph.errors import ConfigError, InvalidInputError
from emem_graph.filters import VectorFilter
from emem_graph.gate import while_open
from emem_graph.models import INTEROCEPTION, Entity, Gist, Observation
from emem_graph.retrieval.dispatch import tool_method
from emem_graph.retrieval.formatting import one_line

if TYPE_CHECKING:
    from emem_graph.config import MemoryConfig
    from emem_graph.llm.guard import LLMGuard
    from emem_graph.storage.store import MemoryStore

log = logging.getLogger(__name__)

SCALES = {"indoor": (8.0, 30.0, 120.0), "outdoor": (30.0, 120.0, 500.0)}
"""Default area sizes per level (largest box diagonal, metres): room / building / site."""
LEAF_CANDIDATES = 24
"""Leaves a walk's leaf search fetches from an area's box before keeping the area's own."""


def thresholds_of(config: MemoryConfig) -> tuple[float, ...]:
    """The per-level thresholds a config asks for.

    Raises:
        ConfigError: area_thresholds do not grow strictly.
    """
    chosen = config.area_thresholds or SCALES[config.area_scale]
    if any(b <= a for a, b in itertools.pairwise(chosen)):
        raise ConfigError(f"area_thresholds must grow from level to level, got {list(chosen)}")
    return tuple(float(t) for t in chosen)


@dataclass(frozen=True)
class BuildReport:
    """What a build or update did and how long it took."""

    leaves: int
    areas: int
    created: int
    updated: int
    deleted: int
    levels: int
    seconds: float

    def describe(self) -> str:
        return (
            f"{self.areas} area gists on {self.levels} levels over {self.leaves} memories "
            f"({self.created} created, {self.updated} updated, {self.deleted} deleted) in "
            f"{self.seconds:.2f} s"
        )


class AreaMemory:
    """The area forest of a memory (a Capability), with describe_area and global_search.

    Args:
        host: the memory facade (flush, embed, config, consolidation's LLM guard).
        store: its store.
        clock: its clock (created_at of area gists).
        guard: the guarded LLM used for summaries and, when its client has
            ``choose_area``, for the walk's choice of a child at each level (None: extractive
            summaries and similarity only).
    """

    def __init__(
        self,
        host: Any,
        store: MemoryStore,
        *,
        clock: Callable[[], float] = time.time,
        guard: LLMGuard | None = None,
    ) -> None:
        self.name = "areas"
        self.tool_names = ["describe_area", "global_search"]
        self._host = host
        self._store = store
        self.thresholds = thresholds_of(host.config)
        self.texts = AreaTexts(guard, host.embed)
        self._guard = guard
        self._builder = ForestBuilder(store, host.embed, self.texts, self.thresholds, clock)
        self._lock = threading.RLock()
        self._pending: dict[str, Leaf] = {}
        self._pending_lock = threading.Lock()
        self._forest = load_forest(store)
        self._vectors: dict[str, np.ndarray] = {}
        self._probe_cache: dict[str, tuple[str, np.ndarray]] = {}
        self._caught_up = False
        self.last_walk: WalkResult | None = None

    # --- Capability ----------------------------------------------------------------------------

    @while_open
    def flush_before_tool(self) -> None:
        """Flush the memory, then bring the forest up to date (built on first use). On a
        read-only memory the tools answer from the forest as stored (it is derived data a
        writer keeps: ``catch_up()`` or ``emem-graph areas DIR``)."""
        if self._store.read_only:
            return
        self.update()

    def observations_written(self, observations: list[Observation]) -> None:
        """Note a written batch's perception observations for the next update (cheap; nothing
        to note before the forest is first built: the build reads every observation)."""
        if self._forest.empty:
            return
        leaves = [
            Leaf(o.id, "observation", o.x, o.y, o.z, o.timestamp, o.timestamp, o.layer_name)
            for o in observations
            if o.source_type != INTEROCEPTION
        ]
        with self._pending_lock:
            for leaf in leaves:
                self._pending[leaf.id] = leaf

    def close(self) -> None:
        """Nothing to finish: notes not yet applied are found again on the next open."""

    # --- building ------------------------------------------------------------------------------

    @property
    def forest(self) -> Forest:
        """The forest as last built or updated."""
        return self._forest

    @property
    def built(self) -> bool:
        return not self._forest.empty

    @while_open
    def build(self) -> BuildReport:
        """Rebuild the whole forest from every observation and level-0 gist (replacing the
        area gists there were). Flushes the memory first."""
        started = time.perf_counter()
        self._host.flush()
        with self._lock:
            with self._pending_lock:
                self._pending.clear()
            leaves, gist_texts = load_leaves(self._store)
            vectors: dict[str, np.ndarray] = {}
            forest, result = self._builder.rebuild(self._forest, leaves, gist_texts, vectors)
            self._forest = forest
            self._vectors = vectors
            self._caught_up = True
            return self._report(result, started)

    @while_open
    def update(self) -> BuildReport | None:
        """Add what was written since the last update to the forest (the branches it falls
        in only); builds the forest when there is none yet. None when nothing changed.
        Flushes the memory first."""
        self._host.flush()
        with self._lock:
            if not self.built:
                leaves, _ = load_leaves(self._store)
                return self.build() if leaves else None
            started = time.perf_counter()
            with self._pending_lock:
                new = dict(self._pending)
                self._pending.clear()
            gist_texts: dict[str, str] = {}
            if not self._caught_up:
                leaves, gist_texts = load_leaves(self._store)
                new.update({leaf.id: leaf for leaf in leaves})
                self._caught_up = True
            else:
                # Level-0 gists come from consolidation, not from a flush: few, read each time.
                _, gist_texts = _gist_leaves(self._store, new)
            fresh = [leaf for leaf in new.values() if leaf.id not in self._forest.leaf_parent]
            if not fresh:
                return None
            self._ensure_vectors()
            if self.texts.background is None:
                level_1 = self._forest.at_level(1)
                self.texts.background = unit_mean(
                    [self._vectors[a.id] * a.count for a in level_1 if a.id in self._vectors]
                )
            result = self._builder.update(self._forest, fresh, gist_texts, self._vectors)
            return self._report(result, started)

    def _report(self, result: BuildResult, started: float) -> BuildReport:
        report = BuildReport(
            leaves=result.leaves,
            areas=len(self._forest.areas),
            created=len(result.created),
            updated=len(result.updated),
            deleted=len(result.deleted),
            levels=self._forest.depth,
            seconds=time.perf_counter() - started,
        )
        log.info("areas: %s", report.describe())
        return report

    def _ensure_vectors(self) -> None:
        missing = [i for i in self._forest.areas if i not in self._vectors]
        if not missing:
            return
        self._vectors.update(self._store.vectors.vectors_of(missing))
        still = [i for i in missing if i not in self._vectors]
        if still:
            texts = [self._forest.areas[i].text for i in still]
            self._vectors.update(zip(still, self._host.embed(texts), strict=True))

    # --- reading -------------------------------------------------------------------------------

    @while_open
    def search(self, query: str, n_walks: int = 3, *, with_leaves: bool = True) -> WalkResult:
        """Walk the forest for ``query`` (see walk.walk); the forest must be up to date."""
        guard = self._guard
        asks_llm = guard is not None and guard.enabled
        # One job per walk: an LLM failure switches the rest of this walk to similarity.
        job = guard.job() if guard is not None and asks_llm else contextlib.nullcontext()
        with self._lock, job:
            vector = np.asarray(self._host.embed([query])[0], dtype=np.float32)
            result = walk(
                self._forest,
                self._probes,
                vector,
                n_walks=n_walks,
                leaf_search=self._leaf_search if with_leaves else None,
                question=query,
                chooser=self._choose if asks_llm else None,
            )
        self.last_walk = result
        return result

    def _choose(self, question: str, children: list[Area]) -> int | None:
        """The LLM's pick among ``children`` (its client's optional ``choose_area``), or None:
        no such method, a failure earlier in this walk, or an answer that is not an index."""
        assert self._guard is not None
        answer = self._guard.call("choose_area", question, [c.text for c in children])
        if isinstance(answer, int) and not isinstance(answer, bool):
            return answer
        return None

    def _probes(self, area: Area) -> np.ndarray:
        probes = self._probe_cache.get(area.id)
        if probes is None or probes[0] != area.text:
            probes = (area.text, self.texts.probes(area.text))
            self._probe_cache[area.id] = probes
        return probes[1]

    def _leaf_search(
        self, area: Area, vector: np.ndarray
    ) -> list[tuple[Observation | Gist | Entity, float]]:
        where = VectorFilter(
            kinds=("observation", "gist"),
            exclude_source_types=(INTEROCEPTION,),
            exclude_tiers=("archived",),
            box=area.box,
        )
        hits = self._store.nearest(vector, LEAF_CANDIDATES, where)
        own = self._forest.leaf_parent
        return [(record, hit.score) for hit, record in hits if own.get(hit.id) == area.id]

    @while_open
    def areas_at(self, x: float, y: float, radius: float) -> list[Area]:
        """Level-1 areas within ``radius`` of (x, y) (containing it when 0), nearest first."""
        found = [
            (area.distance_to(x, y), area)
            for area in self._forest.at_level(1)
            if area.distance_to(x, y) <= radius
        ]
        return [a for _, a in sorted(found, key=lambda p: (p[0], p[1].id))]

    # --- tools ---------------------------------------------------------------------------------

    @tool_method
    def describe_area(
        self,
        concept: str | None = None,
        near_x: float | None = None,
        near_y: float | None = None,
        spatial_radius: float | None = None,
        n_results: int = 3,
        n_walks: int = 3,
    ) -> str:
        """Areas by concept (tree walk), around a point, or an overview of the roots."""
        if (near_x is None) != (near_y is None):
            raise InvalidInputError("describe_area: give both near_x and near_y, or neither")
        if spatial_radius is not None and near_x is None:
            raise InvalidInputError("describe_area: spatial_radius needs near_x and near_y")
        if not self.built:
            return "No areas found."
        if concept is not None and concept.strip():
            result = self.search(concept, max(n_walks, n_results), with_leaves=True)
            lines, seen = [], set()
            for chain in result.chains:
                if chain.areas[0].id in seen:
                    continue
                seen.add(chain.areas[0].id)
                lines.append(format_chain(chain.areas))
            lines = lines[:n_results]
            header = f"Areas for '{concept}' (best first):"
            return header + "\n" + _numbered(lines)
        if near_x is not None and near_y is not None:
            radius = spatial_radius or 0.0
            found = self.areas_at(near_x, near_y, radius)[:n_results]
            if not found:
                return f"No areas found within {radius:g}m of ({near_x:.1f}, {near_y:.1f})."
            header = f"Areas at ({near_x:.1f}, {near_y:.1f}) within {radius:g}m:"
            return (
                header + "\n" + _numbered([format_chain(self._forest.chain(a.id)) for a in found])
            )
        roots = self._forest.roots()
        total = sum(r.count for r in roots)
        shown = roots[:n_results]
        header = (
            f"Overview: {len(roots)} top-level area{'s' if len(roots) != 1 else ''} "
            f"(level {self._forest.depth}) over {total} memories"
            + (f", the {len(shown)} largest:" if len(shown) < len(roots) else ":")
        )
        lines = []
        for root in shown:
            line = format_area(root)
            children = sorted(
                (self._forest.areas[c] for c in root.children), key=lambda a: -a.count
            )
            if len(children) > 1:
                line += f"\n   holds {len(children)} areas of level {root.level - 1}"
            lines.append(line)
        return header + "\n" + _numbered(lines)

    def _forest_leaves(self) -> int:
        return len(self._forest.leaf_parent)

    @tool_method
    def global_search(self, query: str, n_results: int = 3, n_walks: int = 3) -> str:
        """Tree walk for an implicit or global question: chains leaf -> root, best first."""
        if not self.built:
            return f"No memories found for: {one_line(query)}"
        result = self.search(query, max(n_walks, n_results))
        chains = [c for c in result.chains if c.leaf is not None][:n_results]
        if not chains:
            return f"No memories found for: {one_line(query)}"
        header = (
            f"Global search for '{one_line(query)}': {len(chains)} "
            f"chain{'s' if len(chains) != 1 else ''}"
            f" (memory -> site; the walk scored {result.visited} nodes, areas and memories, "
            f"of {len(self._forest.areas)} areas over {self._forest_leaves()} memories):"
        )
        return header + "\n" + _numbered([format_walk_chain(c) for c in chains])


def _numbered(blocks: list[str]) -> str:
    return "\n".join(f"{i}. {block}" for i, block in enumerate(blocks, 1))


def _gist_leaves(store: MemoryStore, into: dict[str, Leaf]) -> tuple[None, dict[str, str]]:
    texts: dict[str, str] = {}
    for leaf, text in gist_leaves(store):
        into.setdefault(leaf.id, leaf)
        texts[leaf.id] = text
    return None, texts
