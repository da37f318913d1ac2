"""EntityResolver: merges sightings into persistent entities, in place.

A sighting (a name seen at a place and time, usually in one observation) merges into an existing
entity when all three tests pass:

1. the names match: their embeddings' cosine similarity reaches entity_similarity_threshold, or
   one name is the other with more detail ("chair" and "red chair": names.compatible);
2. the entity's position estimate is within entity_spatial_radius;
3. the context gate, when the names alone are ambiguous (two bare nouns such as "chair" and
   "chair", or a match by embedding similarity only; a modifier on either side, as in "grey
   sofa" for "sofa", is evidence enough): when the sighting comes from descriptive text (not a
   detection list), its text embedding must reach entity_text_similarity_threshold against one
   of the entity's recent descriptive contexts *of the same layer*; texts of different layers
   (a detector's label list, a captioner's sentence) are not comparable, and an entity with no
   such context passes. Paraphrases of one object's caption measure 0.45-0.85 with MiniLM, so
   gating every merge would split objects whose captions vary.

Among the entities that pass, the best name match nearest by is chosen (equally good: the one
seen last). Merging updates the entity in place: the position is the running mean of its
sightings (not the latest one), the count and first/last seen update, a more specific name
replaces a vaguer one, and its vector row is replaced (never a second, dead vector). Each
sighting's observation gets an OBSERVED_IN edge; entities sharing an observation get their
COOCCURS_WITH count incremented (one edge per unordered pair, stored from the smaller id to the
larger). A batch is one graph transaction.

The resolver holds every entity in memory (read from the graph once; it is the only writer of
entities). A batch can be staged instead of written: add_entity() stages its sighting, which is
visible to the next sightings at once and written with the memory's next flush (by count or by
flush_interval, like observations), so a hand-given sighting costs what add() costs. The
observations the whereabouts rules read are the store's and those added and not yet written
(``waiting``), so a sighting's resolution does not depend on when the buffer writes.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from emem_graph.consolidation import reads, whereabouts
from emem_graph.consolidation.detections import is_detection_text
from emem_graph.consolidation.entity_tracking import Grid, Tracked, mark_written
from emem_graph.consolidation.entity_writes import entity_change
from emem_graph.errors import StorageError
from emem_graph.models import Entity, EntityPosition
from emem_graph.storage.changes import GraphChange
from emem_graph.text import names
from emem_graph.text.extractive import Embed

if TYPE_CHECKING:
    from emem_graph.storage.store import MemoryStore

CONTEXTS_PER_LAYER = 4
"""Recent descriptive contexts kept per entity and layer for the context gate."""
CONTEXT_LOOKBACK = 24
"""Latest sightings read from the graph to rebuild an entity's contexts after a restart."""
NAME_CACHE_SIZE = 50_000
CONTEXT_CACHE_SIZE = 20_000
DISTANCE_WEIGHT = 0.5
"""How much nearness counts next to the name match when several entities qualify."""


@dataclass
class Sighting:
    """A name seen at a place and time (from an observation, or given to add_entity)."""

    name: str
    x: float
    y: float
    z: float
    timestamp: float
    layer: str = "default"
    entity_type: str | None = None
    confidence: float = 1.0
    observation_id: str | None = None
    context: np.ndarray | None = None
    """Embedding of the observation's text when it is descriptive (None: detection list or no
    observation); what the context gate compares."""
    metadata: dict[str, Any] = field(default_factory=dict)


class EntityResolver:
    """Resolves sightings to entities and writes the result (thread-safe, one batch at a time).

    Args:
        store: the memory's store.
        embed: the memory's embedder (entity names, contexts without a stored vector).
        name_threshold: entity_similarity_threshold.
        context_threshold: entity_text_similarity_threshold.
        radius: entity_spatial_radius, metres.
    """

    def __init__(
        self,
        store: MemoryStore,
        embed: Embed,
        *,
        name_threshold: float,
        context_threshold: float,
        radius: float,
    ) -> None:
        self._store = store
        self._embed = embed
        self.name_threshold = name_threshold
        self.context_threshold = context_threshold
        self.radius = radius
        self._lock = threading.RLock()
        self._names: OrderedDict[str, np.ndarray] = OrderedDict()
        self._contexts: OrderedDict[str, dict[str, list[np.ndarray]]] = OrderedDict()
        self._table: dict[str, Tracked] | None = None
        self._grid = Grid(radius)
        self._dirty: set[str] = set()
        self._staged_links: dict[tuple[str, str], float] = {}
        self._staged_together: dict[str, tuple[set[str], float]] = {}
        self._named: dict[str, set[str]] = defaultdict(set)
        """Entity ids by normalised name (the candidates of a move)."""
        self._splits: list[dict[str, Any]] = []
        """Written OBSERVED_IN edges to hand from one entity to another (split_observed_in)."""
        self._staged_sightings: list[tuple[Sighting, str]] = []
        """The sightings staged since the last write and the entity each resolved to (what a
        failed close keeps: staged_sightings)."""
        self.moves = 0
        self.splits = 0
        self.set_aside: Callable[[Entity, BaseException], None] | None = None
        """Keeps an entity the graph cannot write (durably, or raises); None: a failed
        flush stays staged whole and is retried."""
        self.waiting: whereabouts.Looks | None = None
        """The observations added and not yet written (the memory's writer sets it): the
        whereabouts rules read them with the store's, so a sighting sees every observation
        added before it, whenever the buffer writes."""

    def resolve(
        self,
        sightings: Sequence[Sighting],
        *,
        stage: bool = False,
        ids: Sequence[str] | None = None,
    ) -> list[str]:
        """Merge or create an entity per sighting; returns the entity id of each sighting, in
        order.

        Args:
            sightings: what was seen.
            stage: keep the result in memory (visible to later sightings at once) and write it
                with the next flush() instead of now: how add_entity() stays as cheap as add().
                Without it, everything staged so far is written together with this batch, in
                one graph transaction.
            ids: the entity each sighting resolved to before (sightings a failed close kept):
                one that was new then is created under that id, so the id add_entity()
                returned names the entity written; the others are matched as any sighting.

        Raises:
            StorageError: the write failed; the result stays staged and the next write retries.
        """
        if not sightings:
            return []
        with self._lock:
            table = self._loaded()
            self._prefetch_names(sightings, table)
            resolved: list[str] = [""] * len(sightings)
            links = self._staged_links
            for index in sorted(range(len(sightings)), key=lambda i: sightings[i].timestamp):
                sighting = sightings[index]
                given = None if ids is None else ids[index]
                match = None
                if given is None or given in table:  # matched as then: moves stay moves
                    match = self._best_match(sighting, table, self._grid)
                    if match is None:
                        match = self._moved(sighting, table)
                if match is None:
                    match = self._create(sighting, given)
                    table[match.entity.id] = match
                    self._named[names.normalize(match.entity.name)].add(match.entity.id)
                else:
                    first_time = (
                        sighting.observation_id is None
                        or (match.entity.id, sighting.observation_id) not in links
                    )
                    self._merge(match, sighting, counted=first_time)
                self._dirty.add(match.entity.id)
                self._grid.put(match.entity.id, match.entity.x, match.entity.y)
                self._remember_context(match.entity.id, sighting)
                resolved[index] = match.entity.id
                if sighting.observation_id is not None:
                    key = (match.entity.id, sighting.observation_id)
                    links[key] = max(links.get(key, 0.0), sighting.confidence)
                    members, _ = self._staged_together.setdefault(
                        sighting.observation_id, (set(), sighting.timestamp)
                    )
                    members.add(match.entity.id)
            if stage:
                self._staged_sightings.extend(zip(sightings, resolved, strict=True))
            else:
                self.flush()
            return resolved

    def staged_sightings(self) -> list[tuple[Sighting, str]]:
        """The sightings staged and not yet written, each with the entity it resolved to."""
        with self._lock:
            return list(self._staged_sightings)

    def forget_staged(self) -> None:
        """Drop every staged change: the table is read again from the graph (the truth) on
        the next use (a replay of kept sightings whose write failed: the file still holds
        them, and keeping them here too would count them twice)."""
        with self._lock:
            self._dirty.clear()
            self._staged_links.clear()
            self._staged_together.clear()
            self._staged_sightings.clear()
            self._splits.clear()
            self._table = None
            self._grid = Grid(self.radius)
            self._named = defaultdict(set)

    def flush_staged(self) -> int:
        """flush(), except that it returns 0 at once, without waiting, when another thread
        holds the resolver (an extraction batch, which writes what it resolves itself) and no
        add_entity() sighting is staged: a tool that flushes before it answers is not held
        for the length of an extraction batch (up to a few hundred ms during a busy day)."""
        if not self._lock.acquire(blocking=False):
            if not self._staged_sightings:  # a list's truth is read atomically
                return 0
            self._lock.acquire()
        try:
            return self.flush()
        finally:
            self._lock.release()

    def flush(self) -> int:
        """Write every staged entity change (in one graph transaction, then one vector write).
        Returns the number of entities written.

        Raises:
            StorageError: the write failed; everything stays staged for the next flush().
        """
        with self._lock:
            if not self._dirty and not self._staged_links:
                self._staged_sightings.clear()
                return 0
            table = self._loaded()
            dirty = [table[i] for i in self._dirty]
            self._give_vectors(dirty)
            try:
                self._store.apply(self._change(dirty, self._staged_links, self._staged_together))
            except StorageError as exc:
                if self.set_aside is None:
                    raise
                try:
                    return self._flush_apart(dirty, exc)
                finally:  # what was written apart is no longer staged
                    self._staged_sightings = [
                        (s, i) for s, i in self._staged_sightings if i in self._dirty
                    ]
            for tracked in dirty:
                mark_written(tracked)
            self._dirty.clear()
            self._staged_links.clear()
            self._staged_together.clear()
            self._splits.clear()
            self._staged_sightings.clear()
            return len(dirty)

    def names_to_embed(self) -> list[str]:
        """The names the next flush() will embed: those of the staged entities without a name
        vector that no cache holds, as flush() embeds them. The memory's flush embeds them
        with its observation texts in one model call, and flush() then finds them in the
        memory's embedding cache: a call of its own for a few names cost 20-40 ms of MiniLM
        on 2 cores (one forward pass streams all the weights), against a few milliseconds
        inside the texts' call."""
        with self._lock:
            if self._table is None or not self._dirty:
                return []
            return self._unknown_names([self._table[i] for i in self._dirty])

    def _flush_apart(self, dirty: list[Tracked], error: StorageError) -> int:
        """After a failed flush: when the graph takes a write at all, write each entity on
        its own and set aside those that fail alone (never retried in front of the others).

        Raises:
            StorageError: the graph takes no write (everything stays staged), or an entity
                could not be set aside (it stays staged).
        """
        self._store.check_writable()
        written = 0
        failed: list[tuple[Tracked, StorageError]] = []
        for tracked in dirty:
            entity_id = tracked.entity.id
            links = {k: c for k, c in self._staged_links.items() if k[0] == entity_id}
            try:
                self._store.apply(self._change([tracked], links, {}))
            except StorageError as refused:
                failed.append((tracked, refused))
                continue
            mark_written(tracked)
            self._dirty.discard(entity_id)
            for key in links:
                del self._staged_links[key]
            written += 1
        if failed:
            self._store.check_writable()  # failing since the first write: the storage
        assert self.set_aside is not None
        for tracked, why in failed:
            self.set_aside(tracked.entity, why)
            entity_id = tracked.entity.id
            self._dirty.discard(entity_id)
            for key in [k for k in self._staged_links if k[0] == entity_id]:
                del self._staged_links[key]
        # Co-occurrence among the entities written; a set-aside entity's in-memory state is
        # dropped: the table is read again from the graph (the truth) on the next use.
        kept = {t.entity.id for t in dirty} - {t.entity.id for t, _ in failed}
        together = {
            o: (members & kept, seen) for o, (members, seen) in self._staged_together.items()
        }
        self._store.apply(self._change([], {}, together))
        self._staged_together.clear()
        self._splits.clear()
        self._staged_sightings.clear()
        if failed:
            self._table = None
            self._grid = Grid(self.radius)
            self._named = defaultdict(set)
        return written

    @property
    def staged(self) -> int:
        """Entities changed in memory and not yet written."""
        with self._lock:
            return len(self._dirty)

    # --- matching ------------------------------------------------------------------------------

    def _best_match(
        self, sighting: Sighting, tracked: dict[str, Tracked], grid: Grid
    ) -> Tracked | None:
        name_vector: np.ndarray | None = None  # embedded only for a name to compare
        best: tuple[float, float, float, str, Tracked] | None = None
        for entity_id in grid.near(sighting.x, sighting.y):
            candidate = tracked[entity_id]
            entity = candidate.entity
            distance = math.hypot(entity.x - sighting.x, entity.y - sighting.y)
            if distance > self.radius:
                continue
            compatible = names.compatible(sighting.name, entity.name)
            if compatible:
                name_score = 1.0
            else:
                if name_vector is None:
                    name_vector = self._name_vector(sighting.name)
                name_score = float(name_vector @ self._with_vector(candidate))
                if name_score < self.name_threshold:
                    continue
            # A modifier on either side ("grey sofa" for "sofa") is evidence enough; two bare
            # nouns ("chair", "chair") or a match by embedding only need the context gate.
            ambiguous = not compatible or (
                names.generic(sighting.name) and names.generic(entity.name)
            )
            if ambiguous and not self._context_passes(entity_id, candidate.new, sighting):
                continue
            score = name_score + DISTANCE_WEIGHT * (1.0 - distance / self.radius)
            # Equal scores go to the one seen last, then the older one: decided by what was
            # seen, not by the order the grid's sets hold ids in.
            rank = (score, entity.last_seen, -entity.first_seen, entity.id)
            if best is None or rank > best[:4]:
                best = (*rank, candidate)
        return best[4] if best else None

    def _context_passes(self, entity_id: str, new: bool, sighting: Sighting) -> bool:
        if sighting.context is None:
            return True
        contexts = self._contexts_of(entity_id, new).get(sighting.layer)
        if not contexts:
            return True
        context = np.asarray(sighting.context, dtype=np.float32)
        return max(float(context @ c) for c in contexts) >= self.context_threshold

    # --- updating ------------------------------------------------------------------------------

    def _create(self, sighting: Sighting, entity_id: str | None = None) -> Tracked:
        entity = Entity(
            id=entity_id if entity_id is not None else uuid.uuid4().hex,
            name=" ".join(sighting.name.split()),
            entity_type=sighting.entity_type,
            x=sighting.x,
            y=sighting.y,
            z=sighting.z,
            first_seen=sighting.timestamp,
            last_seen=sighting.timestamp,
            observation_count=1,
            confidence=sighting.confidence,
            layer_name=sighting.layer,
            metadata=dict(sighting.metadata),
        )
        self._contexts[entity.id] = {}
        self._trim(self._contexts, CONTEXT_CACHE_SIZE)
        # Its name vector, when known; otherwise embedded with the others at flush().
        tracked = Tracked(entity, self._names.get(_key(sighting.name)), new=True, changed=True)
        stay = tracked.open_stay(sighting.x, sighting.y, sighting.z, sighting.timestamp)
        stay.count = 1
        return tracked

    def _merge(self, tracked: Tracked, sighting: Sighting, *, counted: bool) -> None:
        entity = tracked.entity
        stay = tracked.stay
        if self._back_from_small_move(tracked, sighting):
            self._fold(tracked)
            stay = tracked.stay
        elif (
            whereabouts.distance(stay, sighting.x, sighting.y) > whereabouts.STAY_RADIUS
            and sighting.timestamp - stay.last_seen >= whereabouts.REVISIT_GAP
        ):
            # Came back and found it a few metres away: a new stay (rule 2).
            self._leave(tracked, sighting)
            stay = tracked.stay
        if counted:
            count = stay.count + 1
            # Running mean over the stay's sightings: one noisy sighting moves it by 1/count.
            stay.x += (sighting.x - stay.x) / count
            stay.y += (sighting.y - stay.y) / count
            stay.z += (sighting.z - stay.z) / count
            stay.count = count
            entity.observation_count += 1
        stay.first_seen = min(stay.first_seen, sighting.timestamp)
        stay.last_seen = max(stay.last_seen, sighting.timestamp)
        tracked.touch(stay)
        entity.x, entity.y, entity.z = stay.x, stay.y, stay.z
        entity.first_seen = min(entity.first_seen, sighting.timestamp)
        entity.last_seen = max(entity.last_seen, sighting.timestamp)
        entity.confidence = max(entity.confidence, sighting.confidence)
        if sighting.entity_type and entity.entity_type in (None, "object"):
            entity.entity_type = sighting.entity_type
        if names.more_specific(entity.name, sighting.name):
            self._named[names.normalize(entity.name)].discard(entity.id)
            entity.name = " ".join(sighting.name.split())
            self._named[names.normalize(entity.name)].add(entity.id)
            tracked.vector = self._names.get(_key(sighting.name))  # None: embedded at flush()
        if sighting.metadata:
            entity.metadata = {**entity.metadata, **sighting.metadata}
        tracked.changed = True

    # --- whereabouts (see whereabouts.py for the rules) -----------------------------------------

    def _leave(self, tracked: Tracked, sighting: Sighting) -> None:
        """The thing has left its stay: close it at the sighting's time, open one there."""
        stay = tracked.stay
        stay.ended = sighting.timestamp
        tracked.touch(stay)
        tracked.open_stay(sighting.x, sighting.y, sighting.z, sighting.timestamp)
        tracked.changed = True
        self.moves += 1

    def _back_from_small_move(self, tracked: Tracked, sighting: Sighting) -> bool:
        """The sighting is back at the stay before a small move (rule 2b): off the current
        stay, within STAY_RADIUS of the previous one, the two closer than the entity radius."""
        if len(tracked.stays) < 2:
            return False
        stay, previous = tracked.stays[-1], tracked.stays[-2]
        return (
            whereabouts.distance(stay, sighting.x, sighting.y) > whereabouts.STAY_RADIUS
            and whereabouts.distance(previous, sighting.x, sighting.y) <= whereabouts.STAY_RADIUS
            and whereabouts.distance(previous, stay.x, stay.y) <= self.radius
        )

    def _fold(self, tracked: Tracked) -> None:
        """The small move was two views of a thing that stayed: the current stay is folded
        into the previous one (weighted mean, counts and span together), which is current
        again."""
        stay = tracked.stays.pop()
        previous = tracked.stay
        total = previous.count + stay.count
        if total > 0:
            previous.x = (previous.x * previous.count + stay.x * stay.count) / total
            previous.y = (previous.y * previous.count + stay.y * stay.count) / total
            previous.z = (previous.z * previous.count + stay.z * stay.count) / total
        previous.count = total
        previous.first_seen = min(previous.first_seen, stay.first_seen)
        previous.last_seen = max(previous.last_seen, stay.last_seen)
        previous.ended = None
        tracked.touch(previous)
        if stay.id in tracked.new_stays:
            tracked.new_stays.discard(stay.id)
        else:
            tracked.changed_stays.discard(stay.id)
            tracked.dropped_stays.add(stay.id)
        tracked.changed = True
        self.moves -= 1

    def _moved(self, sighting: Sighting, table: dict[str, Tracked]) -> Tracked | None:
        """The entity this far sighting shows moved (after a move or a split), or None: a
        new object (rules 3 to 5)."""
        at = sighting.timestamp
        named = self._named.get(names.normalize(sighting.name), set())
        if len(named) > whereabouts.MAX_ALIKE:
            return None  # too common a name to follow one thing by it
        candidates: list[Tracked] = []
        for entity_id in sorted(named):
            tracked = table[entity_id]
            entity, stay = tracked.entity, tracked.stay
            far = whereabouts.distance(stay, sighting.x, sighting.y)
            if far <= self.radius or at <= entity.last_seen:
                continue
            if len(tracked.stays) >= 2 and self._never_left(tracked, sighting):
                self._with_vector(tracked)
                self._split(tracked, table)
                return tracked
            if at - entity.last_seen < far / whereabouts.CARRY_SPEED:
                continue  # never in two places at once
            candidates.append(tracked)
        # The one that moved: the earliest seen of those missed at their stay, else the
        # earliest seen of the distinctive ones alone of their name gone long enough. Looked
        # at in that order, so the absence check (an area read each) stops at the first miss.
        candidates.sort(key=lambda t: (t.entity.last_seen, t.entity.id))
        chosen: Tracked | None = None
        for tracked in candidates:
            entity = tracked.entity
            if self._missed_at(tracked.stay, entity.layer_name, at) is not None:
                chosen = tracked
                break
            if chosen is None and (
                not names.generic(sighting.name)
                and at - entity.last_seen >= whereabouts.MOVE_GAP
                and not self._coexisted(tracked)
            ):
                chosen = tracked
        if chosen is None:
            return None
        self._with_vector(chosen)
        self._leave(chosen, sighting)
        self._grid.put(chosen.entity.id, sighting.x, sighting.y)
        return chosen

    def _with_vector(self, tracked: Tracked) -> np.ndarray:
        """Give an entity its name vector (embedded now when not known yet); returns it."""
        if tracked.vector is None:
            tracked.vector = self._name_vector(tracked.entity.name)
        return tracked.vector

    def _name_vector(self, name: str) -> np.ndarray:
        self._name_vectors([name])
        return self._names[_key(name)]

    def _never_left(self, tracked: Tracked, sighting: Sighting) -> bool:
        """The sighting is at the stay the entity last left, and no look there since its last
        sighting missed it (rule 3)."""
        previous = tracked.stays[-2]
        if whereabouts.distance(previous, sighting.x, sighting.y) > self.radius:
            return False
        layer = tracked.entity.layer_name
        return self._missed_at(previous, layer, sighting.timestamp) is None

    def _missed_at(self, stay: EntityPosition, layer: str | None, until: float) -> float | None:
        return whereabouts.missed_at(self._store, stay, layer, until, self.waiting)

    def _coexisted(self, tracked: Tracked) -> bool:
        """Another entity of the same name is known (two such things were seen at once, or a
        sighting could not be this one's)."""
        return len(self._named.get(names.normalize(tracked.entity.name), ())) > 1

    def _split(self, tracked: Tracked, table: dict[str, Tracked]) -> None:
        """The current stay was a second object's: it becomes a new entity with its sightings,
        and ``tracked`` is back at its previous stay (rule 3)."""
        entity = tracked.entity
        stay = tracked.stays.pop()
        previous = tracked.stay
        other = Entity(
            id=uuid.uuid4().hex,
            name=entity.name,
            entity_type=entity.entity_type,
            x=stay.x,
            y=stay.y,
            z=stay.z,
            first_seen=stay.first_seen,
            last_seen=stay.last_seen,
            observation_count=stay.count,
            confidence=entity.confidence,
            layer_name=entity.layer_name,
            metadata=dict(entity.metadata),
        )
        split = Tracked(other, tracked.vector, new=True, changed=True, stays=[stay])
        stay.entity_id = other.id
        stay.ended = None
        if stay.id in tracked.new_stays:
            tracked.new_stays.discard(stay.id)
            split.new_stays.add(stay.id)
        else:
            tracked.changed_stays.discard(stay.id)
            split.taken_stays.add(stay.id)
        previous.ended = None
        tracked.touch(previous)
        entity.x, entity.y, entity.z = previous.x, previous.y, previous.z
        entity.last_seen = max(s.last_seen for s in tracked.stays)
        entity.observation_count = max(1, entity.observation_count - stay.count)
        tracked.changed = True
        # The sightings of the split stay go with it: written edges by their time, staged ones
        # by their observation's time.
        self._splits.append(
            {"old": entity.id, "new": other.id, "since": stay.first_seen, "until": stay.last_seen}
        )
        for observation_id, (members, seen) in self._staged_together.items():
            if entity.id in members and stay.first_seen <= seen <= stay.last_seen:
                members.discard(entity.id)
                members.add(other.id)
                confidence = self._staged_links.pop((entity.id, observation_id), None)
                if confidence is not None:
                    self._staged_links[(other.id, observation_id)] = confidence
        table[other.id] = split
        self._named[names.normalize(other.name)].add(other.id)
        self._contexts[other.id] = {}
        self._dirty.add(other.id)
        self._grid.put(other.id, other.x, other.y)
        self._grid.put(entity.id, entity.x, entity.y)
        self.splits += 1

    def _remember_context(self, entity_id: str, sighting: Sighting) -> None:
        if sighting.context is None:
            return
        contexts = self._contexts_of(entity_id, new=False)
        layer = contexts.setdefault(sighting.layer, [])
        layer.insert(0, np.asarray(sighting.context, dtype=np.float32))
        del layer[CONTEXTS_PER_LAYER:]

    def _change(
        self,
        tracked: list[Tracked],
        links: dict[tuple[str, str], float],
        together: dict[str, tuple[set[str], float]],
    ) -> GraphChange:
        return entity_change(
            tracked,
            links,
            together,
            known=len(self._table or {}),
            splits=self._splits if tracked else [],
            index=self._store.index,
        )

    # --- caches --------------------------------------------------------------------------------

    def _loaded(self) -> dict[str, Tracked]:
        """Every entity, read from the graph once (the resolver is the only writer of
        entities, so its copy stays the truth, staged changes included)."""
        if self._table is None:
            table: dict[str, Tracked] = {}
            stays = reads.all_positions(self._store)
            for entity in reads.entities_in_box(self._store, -_FAR, _FAR, -_FAR, _FAR):
                tracked = table[entity.id] = Tracked(entity, None, stays=stays.get(entity.id, []))
                if not tracked.stays:  # not possible since schema 3; kept whole if it happens
                    stay = tracked.open_stay(entity.x, entity.y, entity.z, entity.first_seen)
                    stay.last_seen, stay.count = entity.last_seen, entity.observation_count
                    tracked.changed = True
                    self._dirty.add(entity.id)
                self._grid.put(entity.id, entity.x, entity.y)
                self._named[names.normalize(entity.name)].add(entity.id)
            self._table = table
        return self._table

    def _prefetch_names(self, sightings: Sequence[Sighting], table: dict[str, Tracked]) -> None:
        """Embed together the names the sightings will be compared by (a sighting and an
        entity within the radius whose names are not compatible): names are embedded only
        to be compared, or when an entity is written (flush(), all at once). A single
        add_entity() embedded its name alone before, at 16-26 ms a text for this model on
        2 cores: a twentieth of an ingest letting the memory embed went to it."""
        needed: dict[str, None] = {}
        for sighting in sightings:
            for entity_id in self._grid.near(sighting.x, sighting.y):
                entity = table[entity_id].entity
                if math.hypot(entity.x - sighting.x, entity.y - sighting.y) > self.radius:
                    continue
                if not names.compatible(sighting.name, entity.name):
                    needed[sighting.name] = None
                    if table[entity_id].vector is None:
                        needed[entity.name] = None
        if needed:
            self._name_vectors(list(needed))

    def _give_vectors(self, tracked: Sequence[Tracked]) -> None:
        """The name vectors of entities about to be written that have none yet, embedded in
        one call."""
        missing = [t for t in tracked if t.vector is None]
        if not missing:
            return
        unknown = self._unknown_names(missing)
        # Read before the cache is trimmed: more names than it keeps can come at once.
        fresh = dict(zip(unknown, self._embed(unknown), strict=True)) if unknown else {}
        for t in missing:
            key = _key(t.entity.name)
            vector = fresh.get(key)
            t.vector = self._names[key] if vector is None else np.asarray(vector, np.float32)
        for key, vector in fresh.items():
            self._names[key] = np.asarray(vector, dtype=np.float32)
        self._trim(self._names, NAME_CACHE_SIZE)

    def _unknown_names(self, tracked: Sequence[Tracked]) -> list[str]:
        """The names (as keys) of these entities that have no vector and no cached name
        vector, sorted: the same names make the same model call whatever order a set gives."""
        keys = {_key(t.entity.name) for t in tracked if t.vector is None}
        return sorted(keys - self._names.keys())

    def _name_vectors(self, labels: Sequence[str]) -> None:
        missing = list(dict.fromkeys(_key(n) for n in labels if _key(n) not in self._names))
        if missing:
            for key, vector in zip(missing, self._embed(missing), strict=True):
                self._names[key] = np.asarray(vector, dtype=np.float32)
        for label in labels:
            self._names.move_to_end(_key(label))
        self._trim(self._names, NAME_CACHE_SIZE)

    def _contexts_of(self, entity_id: str, new: bool) -> dict[str, list[np.ndarray]]:
        cached = self._contexts.get(entity_id)
        if cached is not None:
            self._contexts.move_to_end(entity_id)
            return cached
        contexts: dict[str, list[np.ndarray]] = {}
        if not new:
            rows = [
                r
                for r in reads.entity_contexts(self._store, entity_id, CONTEXT_LOOKBACK)
                if r.text and not is_detection_text(r.text)
            ]
            stored = reads.stored_vectors(self._store, [r.id for r in rows])
            missing = [r for r in rows if r.id not in stored]
            if missing:
                fresh = self._embed([r.text for r in missing])
                stored.update({r.id: v for r, v in zip(missing, fresh, strict=True)})
            for row in rows:
                layer = contexts.setdefault(row.layer, [])
                if len(layer) < CONTEXTS_PER_LAYER:
                    layer.append(np.asarray(stored[row.id], dtype=np.float32))
        self._contexts[entity_id] = contexts
        self._trim(self._contexts, CONTEXT_CACHE_SIZE)
        return contexts

    @staticmethod
    def _trim(cache: OrderedDict[str, Any], size: int) -> None:
        while len(cache) > size:
            cache.popitem(last=False)


_FAR = 1e300
"""Bounds of a box holding every entity."""


def _key(name: str) -> str:
    return " ".join(name.lower().split())
