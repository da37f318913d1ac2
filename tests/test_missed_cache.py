"""The absence check of entity_query, kept between writes: asked for every entity
an answer lists, it is read from the observation index once per write to the index, and a
clock moving on without new observations asks the same question. The answers stay fresh: a
look that missed the thing, written after an answer, is said in the next one at once, at the
same clock or a later one."""

from __future__ import annotations

from typing import Any

from emem_graph.retrieval.formatting import format_time

T = 1_000_000.0
HOUR = 3600.0
QUIET = {"maintenance_interval": None, "entity_extraction": False}


def test_a_look_written_after_an_answer_is_in_the_next_answer(make_memory: Any) -> None:
    clock = [T + 2 * HOUR]
    mem = make_memory(clock=lambda: clock[0], **QUIET)
    for i in range(3):
        mem.add("a red cup in the bathroom sink", 12.0, 9.0, timestamp=T + 60 * i)
        mem.add_entity("red cup", 12.0, 9.0, timestamp=T + 60 * i)
    mem.flush()
    first = mem.entity_query(name="red cup")
    assert "stale" not in first
    clock[0] += 60.0  # the clock moves on, nothing new: the same answer
    assert mem.entity_query(name="red cup") == first
    looked = T + HOUR
    mem.add("a bathroom sink with a towel", 12.3, 9.2, timestamp=looked)
    mem.flush()
    stale = f"[stale: not seen at its last position at {format_time(looked)}]"
    assert stale in mem.entity_query(name="red cup")
    clock[0] += 60.0
    assert stale in mem.entity_query(name="red cup")
    # A later look, with the clock still past it, is the one said.
    later = T + HOUR + 300
    mem.add("white tiles and the sink", 12.1, 9.1, timestamp=later)
    mem.flush()
    answer = mem.entity_query(name="red cup")
    assert f"[stale: not seen at its last position at {format_time(later)}]" in answer


def test_a_clock_before_the_look_does_not_see_it(make_memory: Any) -> None:
    """The key clamps the time to the latest observation, never past the clock: a question
    asked at a time before the look is not answered with it."""
    clock = [T + HOUR - 10]
    mem = make_memory(clock=lambda: clock[0], **QUIET)
    mem.add("a red cup in the bathroom sink", 12.0, 9.0, timestamp=T)
    mem.add_entity("red cup", 12.0, 9.0, timestamp=T)
    mem.add("a bathroom sink with a towel", 12.3, 9.2, timestamp=T + HOUR)
    mem.flush()
    assert "stale" not in mem.entity_query(name="red cup")
    clock[0] = T + HOUR + 10
    assert "[stale: not seen at its last position" in mem.entity_query(name="red cup")


def test_the_stays_kept_in_process_answer_as_the_graph_and_a_reopen(make_memory: Any) -> None:
    """The tools read the stays from the store's in-process entity index: after
    moves, it holds what the graph holds, and a reopened memory (the index loaded from the
    graph) gives the same answers, a moved thing's history included."""
    from emem_graph.consolidation import reads

    mem = make_memory(clock=lambda: T + 3 * HOUR, **QUIET)
    for i in range(3):
        mem.add("a red cup on the kitchen table", 1.0, 1.0, timestamp=T + 60 * i)
        mem.add_entity("red cup", 1.0, 1.0, timestamp=T + 60 * i)
        mem.add_entity(f"blue box {i}", 5.0 * i, 4.0, timestamp=T + 60 * i)
    for i in range(3):
        t = T + HOUR + 60 * i
        mem.add("a red cup in the bathroom sink", 12.0, 9.0, timestamp=t)
        mem.add_entity("red cup", 12.0, 9.0, timestamp=t)
    mem.flush()
    questions = [{"name": "cup"}, {"name": "box"}, {}]
    every = [mem.entity_query(**q) for q in questions]
    assert "moved: now at (12.0, 9.0)" in every[0]
    ids = [e.id for e in mem.store.entities.find(limit=100)]
    assert mem.store.entities.stays_of(ids) == reads.all_positions(mem.store)
    path = mem.config.db_path
    mem.close()
    again = make_memory(name=path.rsplit("/", 1)[-1], clock=lambda: T + 3 * HOUR, **QUIET)
    assert [again.entity_query(**q) for q in questions] == every
