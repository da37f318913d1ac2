"""Export (GraphML, node-link JSON, Parquet, CSV) and stats, through the emem-graph command."""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stepped_memory import START, SteppedMemory

from emem_graph import HashingEmbedder
from emem_graph.cli import main
from emem_graph.explore.export import export_memory
from emem_graph.outputs import DIRECTORY_MARKER, FILE_MANIFEST
from emem_graph.retrieval.timeparse import TimeParseError

KITCHEN = (1.0, 2.0)
HALL = (20.0, 20.0)
NODE_TABLES = (
    "Observation", "Episode", "Gist", "Entity",
    "Position", "Place", "User", "Knowledge", "Pattern", "ProfileObject", "ProfileLocation",
)  # fmt: skip
REL_TABLES = (
    "BELONGS_TO", "FOLLOWS", "SUBTASK_OF", "SUMMARIZES", "OBSERVED_IN", "COOCCURS_WITH",
    "WAS_AT", "CONNECTS", "AT_PLACE", "REFERS_TO", "ENTAILS", "TARGET", "COMPOSED_OF", "BEFORE",
    "GROUNDED_AS",
)  # fmt: skip


@dataclass(frozen=True)
class Remembered:
    directory: Path
    kitchen_episode: str
    hall_episode: str
    texts: dict[str, str]
    """Observation id -> text."""


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Remembered:
    """A small closed memory: a kitchen episode and a hall episode (each consolidated into a
    gist), detections after them for extract_entities, entities added by hand (one merged),
    and a body-state reading in the hall."""
    directory = tmp_path_factory.mktemp("export") / "mem"
    stepped = SteppedMemory(directory)
    mem, step = stepped.memory, stepped.step
    texts: dict[str, str] = {}

    def add(text: str, x: float, y: float, **kwargs: object) -> None:
        texts[stepped.add(text, x, y, **kwargs)] = text

    kitchen = mem.start_episode("kitchen")
    add("2 chairs, 1 person", KITCHEN[0], KITCHEN[1], source_type="detection")
    add("1 chair, 1 person", KITCHEN[0] + 0.2, KITCHEN[1], source_type="detection")
    add("a kettle on the stove", KITCHEN[0], KITCHEN[1] + 0.3)
    mem.end_episode(wait=True)
    step(300)
    hall = mem.start_episode("hall")
    add("1 cup, 1 plant", HALL[0], HALL[1], source_type="detection")
    add("1 plant, 1 cup", HALL[0] + 0.1, HALL[1], source_type="detection")
    body = "battery 80%"
    texts[mem.add_body_state(body, "battery", x=HALL[0], y=HALL[1], timestamp=step())] = body
    mem.end_episode(wait=True)
    step(300)
    add("2 chairs, 1 table", KITCHEN[0] + 0.1, KITCHEN[1] + 0.1, source_type="detection")
    # The capabilities' tables: places come with the observations; a profile fact and routine.
    stepped.finish()
    return Remembered(directory, kitchen, hall, texts)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``emem-graph -q ARGV`` and return its stdout; fail on a non-zero exit."""
    code = main(["-q", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def stats_of(capsys: pytest.CaptureFixture[str], directory: Path) -> dict:
    return json.loads(run(capsys, "stats", str(directory), "--json"))


def nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {name: n for name, n in counts.items() if n}


# --- stats -----------------------------------------------------------------------------------


def test_stats_counts_what_was_remembered(
    memory: Remembered, capsys: pytest.CaptureFixture[str]
) -> None:
    stats = stats_of(capsys, memory.directory)
    assert stats["nodes"]["Observation"] == len(memory.texts) == 7
    assert stats["nodes"]["Episode"] == 2
    assert stats["nodes"]["Gist"] >= 2
    # red door (merged), charging dock, and the detected chair, person, cup, plant, table
    assert stats["nodes"]["Entity"] >= 5
    assert set(stats["edges"]) == set(REL_TABLES)
    assert stats["edges"]["BELONGS_TO"] == 6
    assert stats["edges"]["FOLLOWS"] == 1
    assert stats["edges"]["SUMMARIZES"] >= 5
    assert stats["edges"]["OBSERVED_IN"] >= 5
    assert stats["edges"]["COOCCURS_WITH"] >= 2
    assert stats["nodes"]["Place"] >= 2 and stats["edges"]["AT_PLACE"] >= 6
    assert stats["nodes"]["User"] == 1 and stats["nodes"]["Knowledge"] == 2
    assert stats["nodes"]["Pattern"] == 2 and stats["edges"]["BEFORE"] == 1
    assert stats["observations_by_source"] == {"perception": 6, "body_state": 1, "agent_note": 0}
    assert stats["observations_by_layer"] == {"vision": 6, "battery": 1}
    assert sum(stats["observations_by_tier"].values()) == 7
    assert stats["observations_by_tier"]["long_term"] == 5  # the consolidated episodes
    assert stats["first_observation_time"] == START + 10
    assert stats["first_observation_utc"] == "2026-09-21T14:13:30Z"
    assert stats["last_observation_time"] > stats["first_observation_time"]
    assert stats["vector_rows"]["observation"] == 7
    assert stats["vector_rows"]["gist"] == stats["nodes"]["Gist"]
    assert stats["vector_rows"]["entity"] == stats["nodes"]["Entity"]
    assert stats["pending_vectors"] == 0
    disk = stats["disk"]
    assert disk["graph"] > 0 and disk["vectors"] > 0
    assert disk["total"] >= disk["graph"] + disk["vectors"] + disk["pending_vectors"]


def test_stats_text_has_every_section(
    memory: Remembered, capsys: pytest.CaptureFixture[str]
) -> None:
    text = run(capsys, "stats", str(memory.directory))
    for section in (
        "nodes (",
        "edges (",
        "observations by tier",
        "observations by layer",
        "body state vs perception",
        "time span (UTC)",
        "disk use",
        "vector rows (",
    ):
        assert f"\n{section}" in text, section
    for line in ("Observation", "COOCCURS_WITH", "long_term", "battery", "body_state"):
        assert line in text
    assert "2026-09-21T14:13:30Z" in text
    assert "graph (file + wal)" in text and "pending vectors" in text
    assert "pending (not yet indexed)  0" in text


# --- whole-memory exports --------------------------------------------------------------------


def test_graphml_export_reads_back_in_networkx_with_the_stats_counts(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stats = stats_of(capsys, memory.directory)
    out = tmp_path / "memory.graphml"
    run(capsys, "export", str(memory.directory), "--format", "graphml", str(out))
    graph = nx.read_graphml(out)
    assert graph.is_directed()
    assert Counter(d["label"] for _, d in graph.nodes(data=True)) == nonzero(stats["nodes"])
    assert Counter(d["label"] for *_, d in graph.edges(data=True)) == nonzero(stats["edges"])
    # properties keep their types; unset ones (NULL) are absent
    observation = next(d for _, d in graph.nodes(data=True) if d.get("text") == "1 cup, 1 plant")
    assert observation["label"] == "Observation" and observation["x"] == HALL[0]
    assert observation["episode_id"] == memory.hall_episode
    after = next(d for _, d in graph.nodes(data=True) if d.get("text") == "2 chairs, 1 table")
    assert "episode_id" not in after
    cooccurs = [d for *_, d in graph.edges(data=True) if d["label"] == "COOCCURS_WITH"]
    assert all(isinstance(d["count"], int) and d["count"] >= 1 for d in cooccurs)
    assert all(d["first_seen"] <= d["last_seen"] for d in cooccurs)
    observed = [d for *_, d in graph.edges(data=True) if d["label"] == "OBSERVED_IN"]
    assert all(isinstance(d["confidence"], float) for d in observed)
    body = next(d for _, d in graph.nodes(data=True) if d.get("source_type") == "interoception")
    assert body["text"] == "battery 80%"


def test_node_link_json_export_reads_back_in_networkx_with_the_stats_counts(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stats = stats_of(capsys, memory.directory)
    out = tmp_path / "memory.json"
    run(capsys, "export", str(memory.directory), "--format", "json", str(out))
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"directed", "multigraph", "graph", "nodes", "edges"} <= set(data)
    # "edges" is networkx 3.6's default key; naming it keeps this working on 3.4 and 3.5
    graph = nx.node_link_graph(data, edges="edges")
    assert isinstance(graph, nx.MultiDiGraph)
    assert Counter(d["label"] for _, d in graph.nodes(data=True)) == nonzero(stats["nodes"])
    assert Counter(k for *_, k in graph.edges(keys=True)) == nonzero(stats["edges"])
    kitchen = graph.nodes[memory.kitchen_episode]
    assert kitchen["label"] == "Episode" and kitchen["name"] == "kitchen"
    assert graph.has_edge(memory.hall_episode, memory.kitchen_episode, key="FOLLOWS")


def test_parquet_export_writes_one_file_per_table_with_the_stats_counts(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stats = stats_of(capsys, memory.directory)
    out = tmp_path / "parquet"
    run(capsys, "export", str(memory.directory), "--format", "parquet", str(out))
    written = (p.name for p in out.iterdir() if p.name not in (DIRECTORY_MARKER, FILE_MANIFEST))
    assert sorted(written) == sorted(f"{t}.parquet" for t in NODE_TABLES + REL_TABLES)
    for table in NODE_TABLES:
        read = pq.read_table(out / f"{table}.parquet")
        assert read.num_rows == stats["nodes"][table], table
        assert read.column_names[0] == "id" and "vector" not in read.column_names
    for rel in REL_TABLES:
        read = pq.read_table(out / f"{rel}.parquet")
        assert read.num_rows == stats["edges"][rel], rel
        assert read.column_names[:2] == ["from", "to"]
    cooccurs = pq.read_table(out / "COOCCURS_WITH.parquet")
    assert cooccurs.schema.field("count").type == pa.int64()
    assert {"first_seen", "last_seen"} <= set(cooccurs.column_names)
    assert "confidence" in pq.read_table(out / "OBSERVED_IN.parquet").column_names
    summarized = pq.read_table(out / "SUMMARIZES.parquet").column("to_table").to_pylist()
    assert set(summarized) == {"Observation"}


def test_csv_export_writes_one_file_per_table_with_the_stats_counts(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stats = stats_of(capsys, memory.directory)
    out = tmp_path / "csv"
    run(capsys, "export", str(memory.directory), "--format", "csv", str(out))
    expected = {**stats["nodes"], **stats["edges"]}
    for table, count in expected.items():
        with open(out / f"{table}.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == count, table
    with open(out / "Observation.csv", newline="", encoding="utf-8") as handle:
        texts = {row["text"] for row in csv.DictReader(handle)}
    assert texts == set(memory.texts.values())
    with open(out / "BELONGS_TO.csv", newline="", encoding="utf-8") as handle:
        edges = list(csv.DictReader(handle))
    assert {e["to"] for e in edges} == {memory.kitchen_episode, memory.hall_episode}
    assert {e["from"] for e in edges} <= set(memory.texts)


# --- filtered exports ------------------------------------------------------------------------


def test_area_export_holds_the_kitchen_observations_and_what_links_to_them(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "kitchen.json"
    x, y = KITCHEN
    run(
        capsys,
        "export",
        str(memory.directory),
        "--format",
        "json",
        str(out),
        "--near",
        str(x),
        str(y),
        "1.5",
    )
    graph = nx.node_link_graph(json.loads(out.read_text(encoding="utf-8")), edges="edges")
    by_label: dict[str, list[dict]] = {}
    for _, d in graph.nodes(data=True):
        by_label.setdefault(d["label"], []).append(d)
    texts = {d["text"] for d in by_label["Observation"]}
    assert texts == {
        "2 chairs, 1 person",
        "1 chair, 1 person",
        "a kettle on the stove",
        "2 chairs, 1 table",
    }
    assert [n for n in graph if graph.nodes[n]["label"] == "Episode"] == [memory.kitchen_episode]
    assert all(d["episode_id"] == memory.kitchen_episode for d in by_label["Gist"])
    names = {d["name"] for d in by_label["Entity"]}
    assert {"chair", "person"} <= names
    assert not names & {"cup", "plant", "red door", "charging dock"}
    labels = Counter(k for *_, k in graph.edges(keys=True))
    assert labels["BELONGS_TO"] == 3 and labels["OBSERVED_IN"] >= 4
    assert "FOLLOWS" not in labels  # the hall episode it follows is not exported
    assert labels["COOCCURS_WITH"] >= 1


def test_episode_export_holds_that_episode_with_its_body_state(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "hall"
    run(
        capsys,
        "export",
        str(memory.directory),
        "--format",
        "parquet",
        str(out),
        "--episode",
        memory.hall_episode,
    )
    observations = pq.read_table(out / "Observation.parquet").to_pylist()
    assert {o["text"] for o in observations} == {"1 cup, 1 plant", "1 plant, 1 cup", "battery 80%"}
    assert {o["episode_id"] for o in observations} == {memory.hall_episode}
    assert "interoception" in {o["source_type"] for o in observations}
    assert pq.read_table(out / "Episode.parquet").column("id").to_pylist() == [memory.hall_episode]
    entities = set(pq.read_table(out / "Entity.parquet").column("name").to_pylist())
    assert entities == {"cup", "plant"}
    exported = {o["id"] for o in observations}
    belongs = pq.read_table(out / "BELONGS_TO.parquet")
    assert set(belongs.column("from").to_pylist()) == exported
    observed = pq.read_table(out / "OBSERVED_IN.parquet")
    assert set(observed.column("to").to_pylist()) <= exported


def test_time_export_counts_relative_times_back_from_the_newest_observation(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stats = stats_of(capsys, memory.directory)
    last = stats["last_observation_time"]
    out = tmp_path / "recent.graphml"
    # "--after -1m" as a user types it: argparse alone would take "-1m" for an option.
    run(capsys, "export", str(memory.directory), "--format", "graphml", str(out), "--after", "-1m")
    graph = nx.read_graphml(out)
    observations = [d for _, d in graph.nodes(data=True) if d["label"] == "Observation"]
    assert [d["text"] for d in observations] == ["2 chairs, 1 table"]
    assert all(last - 60 <= d["timestamp"] <= last for d in observations)
    # The entities come with their stays (whereabouts).
    assert {d["label"] for _, d in graph.nodes(data=True)} == {"Observation", "Entity", "Position"}
    before = tmp_path / "early.graphml"
    run(
        capsys,
        "export",
        str(memory.directory),
        "--format",
        "graphml",
        str(before),
        "--before",
        str(START + 30),
    )
    early = nx.read_graphml(before)
    early_texts = {d["text"] for _, d in early.nodes(data=True) if d["label"] == "Observation"}
    assert early_texts == {"2 chairs, 1 person", "1 chair, 1 person", "a kettle on the stove"}


# --- vectors, read-only, errors --------------------------------------------------------------


def test_vectors_flag_adds_each_nodes_384_float_vector_to_the_parquet_node_files(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "vectors"
    summary = run(
        capsys, "export", str(memory.directory), "--format", "parquet", str(out), "--vectors"
    )
    assert "vectors:" in summary
    for table in ("Observation", "Gist", "Entity"):
        read = pq.read_table(out / f"{table}.parquet")
        assert read.schema.field("vector").type == pa.list_(pa.float32(), 384), table
        assert read.column("vector").null_count == 0, table
    assert "vector" not in pq.read_table(out / "Episode.parquet").column_names
    observations = pq.read_table(out / "Observation.parquet").to_pylist()
    texts = [o["text"] for o in observations]
    # The memory stores float16 (vector_dtype): the export gives those numbers, widened.
    expected = HashingEmbedder(384).embed(texts).astype(np.float16).astype(np.float32)
    stored = np.array([o["vector"] for o in observations], dtype=np.float32)
    np.testing.assert_array_equal(stored, expected)


def test_export_never_changes_the_memory(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def files() -> dict[str, tuple[int, int]]:
        return {
            str(p.relative_to(memory.directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in memory.directory.rglob("*")
        }

    before_files, before_stats = files(), stats_of(capsys, memory.directory)
    for format, out in (("graphml", "g.graphml"), ("json", "g.json"), ("csv", "csv")):
        run(capsys, "export", str(memory.directory), "--format", format, str(tmp_path / out))
    run(
        capsys,
        "export",
        str(memory.directory),
        "--format",
        "parquet",
        str(tmp_path / "pq"),
        "--vectors",
        "--near",
        "1",
        "2",
        "3",
    )
    after_stats = stats_of(capsys, memory.directory)
    assert files() == before_files
    assert {k: v for k, v in after_stats.items() if k != "disk"} == {
        k: v for k, v in before_stats.items() if k != "disk"
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--format", "graphml", "OUT", "--vectors"], "Parquet files only"),
        (["--format", "json", "OUT", "--near", "0", "0", "-1"], "radius"),
        (["--format", "json", "OUT", "--after", "sometime"], "time_after"),
        (["--format", "json", "OUT", "--after", "1m", "--before=-1h"], "time window is empty"),
    ],
)
def test_export_refuses_bad_arguments_with_a_message(
    memory: Remembered,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(["-q", "export", str(memory.directory), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_export_refuses_a_swapped_time_window_as_the_tools_do(
    memory: Remembered, tmp_path: Path
) -> None:
    """The tools' parse_time_window check and message: the bounds as given, and 'swap them'."""
    out = tmp_path / "swapped.json"
    with pytest.raises(TimeParseError, match="swap them") as raised:
        export_memory(
            memory.directory, out, "json", time_after="-10m", time_before="-1h", progress=False
        )
    assert "time_after ('-10m') is later than time_before ('-1h')" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not out.exists()
    with pytest.raises(TimeParseError, match="swap them"):
        export_memory(memory.directory, out, "json", time_after=START + 30, time_before=START)
    assert not out.exists()


def test_export_command_refuses_a_swapped_time_window_in_one_line(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "swapped.json"
    argv = ["-q", "export", str(memory.directory), "--format", "json", str(out)]
    assert main([*argv, "--after", "-10m", "--before", "-1h"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("emem-graph: error: the time window is empty: ")
    assert "time_after ('-10m') is later than time_before ('-1h'); swap them" in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_export_takes_a_window_whose_bounds_are_equal(
    memory: Remembered, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As parse_time_window: start == end is a window of one instant (bounds inclusive)."""
    last = stats_of(capsys, memory.directory)["last_observation_time"]
    summary = export_memory(
        memory.directory,
        tmp_path / "instant.json",
        "json",
        time_after=last,
        time_before=last,
        progress=False,
    )
    assert summary.nodes["Observation"] == 1


def test_export_and_stats_refuse_a_directory_without_a_memory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["stats", str(tmp_path)]) == 2
    assert "not an emem_graph memory" in capsys.readouterr().err
    out = tmp_path / "x.json"
    assert main(["-q", "export", str(tmp_path), "--format", "json", str(out)]) == 2
    assert "not an emem_graph memory" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
