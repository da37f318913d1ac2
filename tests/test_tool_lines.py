"""A tool answers n lines when the memory holds them, however often the robot repeated one
text at one place, and a time window that ends before it starts is refused, not answered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import InvalidInputError
from emem_graph.models import Gist, Observation
from emem_graph.retrieval.formatting import (
    LINE_FILL_MAX_RECORDS,
    format_by_layer,
    format_collapsed,
    records_for_lines,
)

T = 1_700_000_000.0


@pytest.fixture
def parked(tmp_path: Path) -> Iterator[SpatioTemporalMemory]:
    """A robot parked in front of a table, captioning it every second (40 times), then five
    other captions near the sink, and three observations around the table."""
    config = MemoryConfig(
        db_path=str(tmp_path / "mem"), maintenance_interval=None, entity_extraction=False
    )
    memory = SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=lambda: T + 1000
    )
    for i in range(40):
        memory.add("a red cup on the table", 0.1, 0.1, timestamp=T + i, layer_name="captions")
    for i in range(5):
        memory.add(
            f"a red cup number {i} near the sink",
            5.0 + 2 * i,
            0.0,
            timestamp=T + 100 + i,
            layer_name="captions",
        )
    for i, text in enumerate(["a blue chair", "a green plant", "an open door"]):
        memory.add(text, 1.0, 0.2 + 0.5 * i, timestamp=T + 200 + i, layer_name="captions")
    memory.flush()
    yield memory
    memory.close()


def test_semantic_search_fills_n_lines_past_forty_copies_of_one_text(
    parked: SpatioTemporalMemory,
) -> None:
    # It asked for n hits, then once for 3n: 40 copies filled both, and one line came back,
    # "(x15, ...)", although six distinct lines matched.
    lines = parked.semantic_search("red cup on the table", n_results=5).splitlines()
    assert len(lines) == 5
    assert "a red cup on the table (x40," in lines[0]


def test_spatial_and_temporal_query_list_what_a_repeated_text_hid(
    parked: SpatioTemporalMemory,
) -> None:
    # Both cut to n records before grouping: "1. a red cup on the table (x5, ...)" alone.
    near = parked.spatial_query(0.0, 0.0, radius=2.0, n_results=5).splitlines()
    assert len(near) == 4  # the table's caption and the three observations around it
    assert "(x40," in near[0]
    window = parked.temporal_query(time_after=T - 1, time_before=T + 50, n_results=5)
    assert window.splitlines() == [window.splitlines()[0]] and "(x40," in window
    recent = parked.temporal_query(time_after=T - 1, n_results=5).splitlines()
    assert len(recent) == 5


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("semantic_search", {"query": "red cup"}),
        ("spatial_query", {"x": 0.0, "y": 0.0}),
        ("temporal_query", {}),
        ("search_gists", {"query": "red cup"}),
        ("locate", {"concept": "red cup"}),
    ],
)
def test_a_time_window_that_ends_before_it_starts_is_refused_in_one_line(
    parked: SpatioTemporalMemory, tool: str, args: dict[str, object]
) -> None:
    # A planner that swapped the bounds was answered with the gists spanning the window.
    with pytest.raises(InvalidInputError, match=r"time window is empty.*swap them"):
        getattr(parked, tool)(time_after=T + 150, time_before=T + 50, **args)
    answer = parked.dispatch_tool_call(tool, {**args, "time_after": "-10m", "time_before": "-1h"})
    assert "time window is empty" in answer and len(answer.splitlines()) == 1


def test_the_last_minutes_ending_before_time_before_are_an_empty_answer(
    parked: SpatioTemporalMemory,
) -> None:
    # Not an error: the caller asked for the last 5 minutes, all of it after time_before.
    assert parked.temporal_query(last_n_minutes=5, time_before=T + 10) == "No observations found."


def test_filling_lines_stops_when_the_records_run_out_or_at_the_bound() -> None:
    same = Gist(id="g", text="same", x=0.0, y=0.0, time_start=T, time_end=T)  # one line
    asked: list[int] = []

    def fifty(k: int) -> list[Gist]:
        asked.append(k)
        return [same] * min(k, 50)

    assert len(records_for_lines(fifty, 10)) == 50
    assert asked == [10, 30, 90]

    def endless(k: int) -> list[Gist]:
        asked.append(k)
        return [same] * k

    asked.clear()
    assert len(records_for_lines(endless, 10)) == LINE_FILL_MAX_RECORDS
    assert asked[-1] == LINE_FILL_MAX_RECORDS


def test_one_text_two_square_metres_apart_by_centimetres_reads_as_one_line(
    tmp_path: Path,
) -> None:
    # 0.99 and 1.01 lie in two square metres and both read "(1.0,0.0)": two identical lines.
    config = MemoryConfig(
        db_path=str(tmp_path / "mem"), maintenance_interval=None, entity_extraction=False
    )
    with SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=lambda: T + 10
    ) as memory:
        memory.add("a red cup on the table", 0.99, 0.0, timestamp=T)
        memory.add("a red cup on the table", 1.01, 0.0, timestamp=T)
        memory.add("a red cup on the table", 1.04, 0.0, timestamp=T + 1)  # shown (1.0,0.0) too
        memory.add("a red cup on the table", 7.0, 0.0, timestamp=T + 2)
        for answer in (
            memory.semantic_search("red cup", n_results=5),
            memory.spatial_query(1.0, 0.0, radius=10.0, n_results=5),
            memory.temporal_query(n_results=5),
        ):
            lines = answer.splitlines()
            assert len(lines) == 2, answer
            assert any("(1.0,0.0)" in line and "(x3," in line for line in lines), answer
            assert any("(7.0,0.0)" in line for line in lines), answer


def test_recent_context_keeps_one_line_per_place_of_a_text(tmp_path: Path) -> None:
    # Recent grouped by text alone and showed the first position: the kitchen's sighting read
    # as the office's, "(50.0,0.0) a red cup on the table (x2)".
    config = MemoryConfig(
        db_path=str(tmp_path / "mem"), maintenance_interval=None, entity_extraction=False
    )
    with SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=lambda: T + 60
    ) as memory:
        memory.add("a red cup on the table", 0.0, 0.0, timestamp=T)
        memory.add("a red cup on the table", 50.0, 0.0, timestamp=T + 10)
        memory.add("a red cup on the table", 50.2, 0.0, timestamp=T + 20)
        recent = memory.get_current_context().split("Recent", 1)[1].splitlines()
        cups = [line for line in recent if "red cup" in line]
        assert len(cups) == 2, recent
        assert any("(0.0,0.0)" in line and "(x" not in line for line in cups), cups
        assert any("(50." in line and "(x2)" in line for line in cups), cups


def _cup(x: float, t: float, text: str = "a red cup") -> Observation:
    return Observation(
        id=f"o{t}", text=text, x=x, y=0.0, z=0.0, timestamp=T + t, layer_name="vision"
    )


def test_places_read_alike_do_not_chain_square_metres_into_one_line() -> None:
    # 1.01 joined 0.99 (both read "(1.0,0.0)") and its square metre was then taken for that
    # group: 1.98, two metres from 0.02, joined too, one line "(x4)" for two places, and
    # another order of the same records gave two lines.
    records = [_cup(0.99, 1), _cup(1.01, 2), _cup(0.02, 3), _cup(1.98, 4)]
    for order in (records, records[::-1], records[2:] + records[:2]):
        lines = format_collapsed(order)
        assert any(line.startswith("[vision] (2.0,0.0)") for line in lines), lines
        counts = [int(line.split("(x")[1].split(",")[0]) if "(x" in line else 1 for line in lines]
        assert sum(counts) == 4, lines  # no record lost from the counts
        assert len(lines) == len(set(lines))
        shown = format_by_layer(order, with_coordinates=True)
        assert any("(2.0,0.0)" in line for line in shown), shown


def test_texts_that_print_alike_are_one_line() -> None:
    # one_line shows every control character as a space, and grouping folded only spaces:
    # four identical lines.
    texts = ["a red cup", "a\x1bred cup", "a\x7fred cup", "a\x01red cup"]
    records = [_cup(1.0, i, text) for i, text in enumerate(texts)]
    assert len(format_collapsed(records)) == 1
    assert len(format_by_layer(records, with_coordinates=True)) == 1
    assert len(format_by_layer(records, with_coordinates=False)) == 1
