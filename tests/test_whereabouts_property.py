"""Objects move, as properties over random histories: whatever order, places and
gaps the sightings of alike objects come in, the memory never loses a sighting, every entity has
exactly one current stay and sits on it, no stay lies between two places (each is on a spot where
the object was seen), locate answers a seen spot, and the stays read back the same after a
restart. Real Kuzu and LanceDB; the hashing embedder (every sighting is named alike, so the
vectors carry nothing the rule could use)."""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.consolidation import reads
from emem_graph.models import STAY_RADIUS

SPOTS = [(1.0, 1.0), (12.0, 9.0), (-8.0, 4.0), (3.0, -10.0)]
"""Four places at least 9 m apart: a stay anywhere but on one of them lies between places."""
T = 1_000_000.0
LOCATION = re.compile(r"^Location: \((-?[\d.]+), (-?[\d.]+), (-?[\d.]+)\)", re.MULTILINE)

sightings = st.lists(
    st.tuples(
        st.sampled_from(range(len(SPOTS))),
        st.sampled_from([5.0, 45.0, 400.0, 2_000.0, 7_200.0]),  # seconds since the last one
        st.floats(-0.4, 0.4),  # jitter of the detection around the spot
        st.sampled_from(["red cup", "mug"]),  # a distinctive name and a bare noun
        st.booleans(),  # whether a look at the spot without the object comes first
    ),
    min_size=1,
    max_size=14,
)


def _open(directory: Path, now: float) -> SpatioTemporalMemory:
    config = MemoryConfig(
        db_path=str(directory), maintenance_interval=None, entity_extraction=False
    )
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=lambda: now
    )


def _state(mem: SpatioTemporalMemory) -> dict[str, list[tuple[float, ...]]]:
    mem.flush()
    ids = [row["id"] for row in mem.store.graph.query_text("MATCH (e:Entity) RETURN e.id AS id")]
    return {
        entity: sorted(
            (round(s.x, 6), round(s.y, 6), s.first_seen, s.last_seen, s.count, s.current)
            for s in found
        )
        for entity, found in reads.positions_of(mem.store, ids).items()
    }


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sightings)
def test_any_history_of_alike_objects_keeps_every_sighting_on_a_seen_spot(history) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "memory"
        t = T
        seen: list[tuple[str, float, float]] = []
        for spot, gap, jitter, name, _ in history:
            t += gap
            x, y = SPOTS[spot][0] + jitter, SPOTS[spot][1] - jitter
            seen.append((name, x, y))
        now = t + 60.0
        mem = _open(directory, now)
        try:
            t = T
            for spot, gap, jitter, name, looked_first in history:
                t += gap
                x, y = SPOTS[spot][0] + jitter, SPOTS[spot][1] - jitter
                if looked_first:
                    # The robot looks at another spot first and sees only the floor there.
                    other = SPOTS[(spot + 1) % len(SPOTS)]
                    mem.add("an empty floor", other[0], other[1], timestamp=t - 1.0)
                mem.add_entity(name, x, y, timestamp=t)
            before = _state(mem)

            entities = mem.store.graph.query_text(
                "MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.x AS x, e.y AS y, "
                "e.observation_count AS count"
            )
            # Nothing lost: every sighting is counted by exactly one entity, and by its stays.
            assert sum(row["count"] for row in entities) == len(history)
            for row in entities:
                stays = before[row["id"]]
                assert sum(s[4] for s in stays) == row["count"], (row, stays)
                current = [s for s in stays if s[5]]
                # Exactly one current stay, and the entity sits on it.
                assert len(current) == 1, stays
                assert math.dist((row["x"], row["y"]), current[0][:2]) < 1e-6
                for s in stays:
                    # No stay between two places: each is on a spot its name was seen at.
                    spots = [(x, y) for name, x, y in seen if name == row["name"]]
                    assert min(math.dist(s[:2], spot) for spot in spots) <= STAY_RADIUS, (s, seen)
                    assert s[2] <= s[3]  # first seen no later than last seen

            for name in {name for name, _, _ in seen}:
                answer = mem.locate(name)
                found = LOCATION.search(answer)
                assert found, answer
                where = (float(found.group(1)), float(found.group(2)))
                assert min(math.dist(where, spot) for spot in SPOTS) <= STAY_RADIUS + 0.6, answer
        finally:
            mem.close()  # a failing example must not leave its database open

        reopened = _open(directory, now)
        try:
            assert _state(reopened) == before
        finally:
            reopened.close()
