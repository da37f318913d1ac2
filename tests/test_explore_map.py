"""`emem-graph map`: a top-down picture of a memory, rendered read-only and looked at."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.cli import main
from emem_graph.explore import map_drawing
from emem_graph.explore.map_drawing import MapGist, _gist_patch
from emem_graph.explore.mapping import MapSummary, render_map
from emem_graph.retrieval.timeparse import TimeParseError

START = 1_763_800_000.0  # 2025-11-22, a real date: the title shows it
STEP_SECONDS = 2.0
ENTITIES = {"fire extinguisher": (-6.0, 12.0), "charging dock": (16.0, -6.0)}
"""Far from the patrol (x 0..10, y 0..4), inside the area the entity test draws."""
AREA = ("5", "3", "16")
"""--near X Y R: a circle that holds the patrol and both entities."""
EMPTY_SPOT = (5.0, -10.0)
"""Inside AREA, far from the patrol, the entities and their labels."""


@dataclass(frozen=True)
class Patrol:
    directory: Path
    times: list[float]
    """Timestamps of the perception observations (camera), in order."""
    patrol_end: float
    entities_seen: float


def _memory(directory: Path, clock: list[float]) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(directory), maintenance_interval=None)
    return SpatioTemporalMemory(
        config=config, embedding_provider=HashingEmbedder(384), get_current_time=lambda: clock[0]
    )


def _route() -> list[tuple[float, float]]:
    """Two laps around a 10 m x 4 m rectangle, a waypoint every 0.5 m."""
    corners = [(0.0, 0.0), (10.0, 0.0), (10.0, 4.0), (0.0, 4.0), (0.0, 0.0)]
    lap: list[tuple[float, float]] = []
    for (x0, y0), (x1, y1) in itertools.pairwise(corners):
        n = int(max(abs(x1 - x0), abs(y1 - y0)) / 0.5)
        lap += [(x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n) for i in range(n)]
    return lap * 2


@pytest.fixture(scope="module")
def patrol(tmp_path_factory: pytest.TempPathFactory) -> Patrol:
    """A closed memory: a patrol episode (camera detections, captions, battery readings) ended
    with its gists written, then two entities sighted after the patrol, far from its path."""
    directory = tmp_path_factory.mktemp("map") / "memory"
    clock = [START]
    times: list[float] = []
    with _memory(directory, clock) as memory:
        memory.start_episode("patrol")
        for step, (x, y) in enumerate(_route()):
            memory.add(f"1 chair at waypoint {step}", x, y, layer_name="camera")
            times.append(clock[0])
            if step % 3 == 0:
                memory.add(f"a chair seen from ({x}, {y})", x, y, layer_name="captions")
            if step % 5 == 0:
                memory.add_body_state(f"battery {100 - step // 5}%", "battery", x=x, y=y)
            clock[0] += STEP_SECONDS
        memory.end_episode(wait=True)
        patrol_end = clock[0]
        clock[0] += 100.0
        for name, (x, y) in ENTITIES.items():
            memory.add_entity(name, x, y, entity_type="object")
        memory.add_entity("charging dock", *ENTITIES["charging dock"])
    return Patrol(directory, times, patrol_end, patrol_end + 100.0)


def _run(*args: str) -> int:
    return main(["-q", "map", *args])


def _image(path: Path) -> np.ndarray:
    return imread(str(path))[:, :, :3]


def _patch(image: np.ndarray, summary: MapSummary, x: float, y: float, half: int = 8):
    column, row = summary.to_pixel(x, y)
    c, r = round(column), round(row)
    return image[r - half : r + half + 1, c - half : c + half + 1]


def test_map_command_writes_a_png_of_the_requested_size_that_is_not_blank(
    patrol: Patrol, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "map.png"
    assert _run(str(patrol.directory), str(out), "--dpi", "80") == 0

    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = _image(out)
    assert image.shape == (800, 800, 3)  # 10 x 10 inches at 80 dpi
    colours = np.unique((image * 255).round().astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 100  # layers, gists, entities, text: not a blank canvas
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}")
    assert "camera" in printed and "2 entities" in printed


def test_entities_are_drawn_at_their_positions_and_nowhere_else(
    patrol: Patrol, tmp_path: Path
) -> None:
    """The same area drawn with and without the entities (a window that ends before they were
    seen): the pictures differ around each entity's pixel and agree on an empty spot."""
    before = str(patrol.patrol_end + 10)
    without, with_ = tmp_path / "without.png", tmp_path / "with.png"
    assert _run(str(patrol.directory), str(without), "--near", *AREA, "--before", before) == 0
    assert _run(str(patrol.directory), str(with_), "--near", *AREA) == 0
    # The same map drawn from the library gives the transform, and is the same picture.
    summary = render_map(
        patrol.directory, tmp_path / "again.png", area=(5.0, 3.0, 16.0), progress=False
    )
    assert np.array_equal(_image(tmp_path / "again.png"), _image(with_))
    assert summary.entities == 2 and summary.entity_labels == 2

    a, b = _image(without), _image(with_)
    for name, (x, y) in ENTITIES.items():
        difference = np.abs(_patch(a, summary, x, y) - _patch(b, summary, x, y)).sum(axis=2)
        assert (difference > 0.3).sum() > 40, f"{name} not drawn at its position"
    assert np.array_equal(_patch(a, summary, *EMPTY_SPOT), _patch(b, summary, *EMPTY_SPOT))
    # And the patrol itself is in the same place in both.
    assert np.array_equal(_patch(a, summary, 10.0, 0.0, 3), _patch(b, summary, 10.0, 0.0, 3))


def test_time_window_changes_what_is_drawn(patrol: Patrol, tmp_path: Path) -> None:
    everything = render_map(patrol.directory, tmp_path / "all.png", progress=False)
    second_lap = patrol.times[len(patrol.times) // 2]
    later = render_map(
        patrol.directory, tmp_path / "later.png", time_after=second_lap, progress=False
    )
    early = render_map(
        patrol.directory, tmp_path / "early.png", time_before=second_lap - 1, progress=False
    )

    assert everything.layers["camera"] == len(patrol.times)
    assert later.layers["camera"] + early.layers["camera"] == len(patrol.times)
    assert 0 < later.observations < everything.observations
    assert early.entities == 0 and later.entities == everything.entities == 2
    assert early.time_span == (everything.time_span[0], second_lap - 1)  # type: ignore[index]
    # Relative times count back from the memory's newest moment (the entity sightings).
    recent = render_map(patrol.directory, tmp_path / "recent.png", time_after="5m", progress=False)
    expected = sum(t >= patrol.entities_seen - 300 for t in patrol.times)
    assert recent.layers.get("camera", 0) == expected


def test_area_and_layers_select_what_is_drawn(patrol: Patrol, tmp_path: Path) -> None:
    cameras = render_map(patrol.directory, tmp_path / "cam.png", layers=["camera"], progress=False)
    assert set(cameras.layers) == {"camera"} and cameras.body_state == 0
    corner = render_map(patrol.directory, tmp_path / "corner.png", area=(0, 0, 1.2), progress=False)
    assert 0 < corner.observations < cameras.observations
    assert corner.entities == 0
    assert corner.xlim[0] <= -1.2 and corner.xlim[1] >= 1.2 and corner.ylim[0] <= -1.2
    box = render_map(patrol.directory, tmp_path / "box.png", area=(15, -7, 17, -5), progress=False)
    assert box.entities == 1 and box.observations == 0 and not box.empty


def test_body_state_is_drawn_but_not_part_of_the_trajectory(patrol: Patrol, tmp_path: Path) -> None:
    summary = render_map(patrol.directory, tmp_path / "map.png", progress=False)
    assert summary.body_state == summary.layers["battery"] > 0
    assert summary.trajectory_points == summary.layers["camera"] + summary.layers["captions"]
    assert summary.gists > 0


def test_many_observations_are_downsampled_and_say_so(
    patrol: Patrol, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(map_drawing, "MAX_POINTS", 50)
    summary = render_map(patrol.directory, tmp_path / "map.png", progress=False)
    assert summary.downsampled and summary.points_drawn <= 50
    assert summary.observations == sum(summary.layers.values()) > 50
    assert f"({summary.points_drawn} drawn)" in summary.describe()


def test_empty_memory_gives_an_image_saying_so(tmp_path: Path) -> None:
    with _memory(tmp_path / "empty", [START]):
        pass
    out = tmp_path / "empty.png"
    assert _run(str(tmp_path / "empty"), str(out)) == 0
    summary = render_map(tmp_path / "empty", out, progress=False)
    assert summary.empty and summary.observations == summary.entities == summary.gists == 0
    centre = _patch(_image(out), summary, 0.0, 0.0, 30)  # where "empty memory" is written
    assert (centre.sum(axis=2) < 2.0).any()


def test_the_memory_is_opened_read_only(patrol: Patrol, tmp_path: Path) -> None:
    files = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in patrol.directory.rglob("*")}
    render_map(patrol.directory, tmp_path / "map.png", progress=False)
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in patrol.directory.rglob("*")} == (
        files
    )


def test_gists_are_drawn_as_their_extent_or_a_circle_without_one() -> None:
    square = "POLYGON ((0 0, 2 0, 2 2, 0 2, 0 0))"
    polygon = _gist_patch(MapGist(1.0, 1.0, 1.4, square, None, 0))
    assert polygon.get_xy().min(axis=0).tolist() == [0.0, 0.0]
    assert polygon.get_xy().max(axis=0).tolist() == [2.0, 2.0]
    for extent in (None, "", "not wkt"):
        circle = _gist_patch(MapGist(3.0, 4.0, 1.5, extent, "camera", 0))
        assert (circle.center, circle.radius) == ((3.0, 4.0), 1.5)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--near", "nan", "0", "1"], "x must be a finite number"),
        (["--near", "0", "0", "-1"], "radius must be positive"),
        (["--box", "3", "0", "1", "5"], "xmin < xmax"),
        (["--after", "banana"], "cannot parse 'banana'"),
        (["--after", "100", "--before", "50"], "the time window is empty"),
        (["--dpi", "0"], "dpi must be a positive"),
        (["--dpi", "5000"], "each side must be 100 to"),
    ],
)
def test_bad_inputs_exit_2_with_a_clear_message(
    patrol: Patrol,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    out = tmp_path / "map.png"
    assert _run(str(patrol.directory), str(out), *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("emem-graph: error: ") and message in err
    assert not out.exists()


def test_a_swapped_time_window_is_refused_as_the_tools_do(patrol: Patrol, tmp_path: Path) -> None:
    """The tools' parse_time_window check and message: the bounds as given, and 'swap them'."""
    out = tmp_path / "swapped.png"
    with pytest.raises(TimeParseError, match="swap them") as raised:
        render_map(patrol.directory, out, time_after="-10m", time_before="-1h", progress=False)
    assert "time_after ('-10m') is later than time_before ('-1h')" in str(raised.value)
    assert "\n" not in str(raised.value)
    with pytest.raises(TimeParseError, match="swap them"):
        render_map(
            patrol.directory, out, time_after=patrol.patrol_end, time_before=START, progress=False
        )
    assert not out.exists()


def test_the_map_command_refuses_a_swapped_time_window_in_one_line(
    patrol: Patrol, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "swapped.png"
    assert _run(str(patrol.directory), str(out), "--after", "-10m", "--before", "-1h") == 2
    err = capsys.readouterr().err
    assert err.startswith("emem-graph: error: the time window is empty: ")
    assert "time_after ('-10m') is later than time_before ('-1h'); swap them" in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_a_window_whose_bounds_are_equal_is_drawn(patrol: Patrol, tmp_path: Path) -> None:
    """As parse_time_window: start == end is a window of one instant (bounds inclusive)."""
    instant = patrol.times[0]
    summary = render_map(
        patrol.directory,
        tmp_path / "instant.png",
        time_after=instant,
        time_before=instant,
        layers=["camera"],
        progress=False,
    )
    assert summary.observations == 1 and not summary.empty


def test_bad_paths_exit_2_with_a_clear_message(
    patrol: Patrol, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = str(patrol.directory)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    cases = [
        ((memory, str(tmp_path / "no" / "such" / "dir" / "map.png")), "does not exist"),
        ((memory, str(a_file / "map.png")), "does not exist"),
        ((memory, str(tmp_path / "map.jpg")), "ending in .png"),
        ((memory, str(tmp_path)), "ending in .png"),
        ((str(tmp_path / "nowhere"), str(tmp_path / "map.png")), "is not an emem_graph memory"),
    ]
    for args, message in cases:
        assert _run(*args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("emem-graph: error: ") and message in err, (args, err)
    assert not (tmp_path / "nowhere").exists()  # a mistyped DIR is not created


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_output_exits_2(
    patrol: Patrol, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert _run(str(patrol.directory), str(locked / "map.png")) == 2
    assert "permission denied" in capsys.readouterr().err
