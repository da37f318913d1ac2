"""Read-only Cypher exploration: `emem-graph cypher`, `shell`, `query` and their library."""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
from emem_graph.cli import main
from emem_graph.errors import (
    InvalidInputError,
    QueryTimeoutError,
    ReadOnlyQueryError,
)
from emem_graph.explore.cypher import (
    list_named_queries,
    named_query,
    open_graph,
    parameters_of,
    parse_params,
    query_graph,
    run_cypher,
    run_named_query,
    split_statements,
)
from emem_graph.explore.shell import shell

QUERIES = Path(__file__).resolve().parents[1] / "queries"
"""The repository's named queries, one .cypher file each (every one is listed by --all)."""

CAPTIONS = ["a red cup on the kitchen table", "a silver coffee machine", "the front door, closed"]


@dataclass(frozen=True)
class Built:
    directory: Path
    first_episode: str
    second_episode: str
    chair: str


def _open(directory: Path) -> SpatioTemporalMemory:
    config = MemoryConfig(db_path=str(directory), maintenance_interval=None)
    return SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A small closed memory: two episodes (the second FOLLOWS the first), four observations,
    a red chair entity (only read by the tests, so built once)."""
    directory = tmp_path_factory.mktemp("explore") / "memory"
    with _open(directory) as memory:
        first = memory.start_episode("kitchen patrol")
        memory.add(CAPTIONS[0], 1.0, 2.0, layer_name="captions")
        memory.add(CAPTIONS[1], 1.5, 2.0, layer_name="captions")
        memory.add("1 cup", 1.0, 2.0, layer_name="detections", source_type="detector")
        memory.end_episode(wait=True)
        second = memory.start_episode("hallway patrol")
        memory.add(CAPTIONS[2], 8.0, 0.5, layer_name="captions")
        memory.end_episode(wait=True)
        chair = memory.add_entity("red chair", 3.0, 4.0, entity_type="furniture")
    return Built(directory, first, second, chair)


def _counts(directory: Path) -> dict[str, int]:
    result = run_named_query(directory, "node_counts")
    return dict(zip(result.columns, result.rows[0], strict=True))


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _emem_graph() -> list[str]:
    script = Path(sys.executable).with_name("emem-graph")
    return [str(script)] if script.exists() else [sys.executable, "-m", "emem_graph.cli"]


# --- cypher ------------------------------------------------------------------------------------


def test_cypher_prints_the_rows_as_an_aligned_table(built: Built, capsys) -> None:
    code, out, _ = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (o:Observation) WHERE o.layer = 'captions' "
        "RETURN o.text AS text, o.x AS x ORDER BY o.text",
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split(" | ") == ["text".ljust(len(CAPTIONS[0])), "x"]
    assert [line.split(" | ")[0].strip() for line in lines[2:5]] == sorted(CAPTIONS)
    assert lines[2].split(" | ")[1] == "1.0"
    assert lines[-1] == "(3 rows)"


def test_cypher_json_and_csv_parse_back_to_the_same_rows(built: Built, capsys) -> None:
    statement = (
        "MATCH (e:Entity {name: 'red chair'}) "
        "RETURN e.id AS id, e.entity_type AS type, e.x AS x, e.observation_count AS seen"
    )
    code, out, _ = _cli(capsys, "cypher", str(built.directory), statement, "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert document["columns"] == ["id", "type", "x", "seen"]
    assert document["rows"] == [{"id": built.chair, "type": "furniture", "x": 3.0, "seen": 1}]
    assert document["truncated"] is False

    code, out, _ = _cli(capsys, "cypher", str(built.directory), statement, "--format", "csv")
    assert code == 0
    assert list(csv.reader(io.StringIO(out))) == [
        ["id", "type", "x", "seen"],
        [built.chair, "furniture", "3.0", "1"],
    ]


def test_a_node_comes_back_whole_in_json(built: Built, capsys) -> None:
    code, out, _ = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (e:Episode {name: 'kitchen patrol'}) RETURN e",
        "--format",
        "json",
    )
    assert code == 0
    (row,) = json.loads(out)["rows"]
    assert row["e"]["id"] == built.first_episode
    assert row["e"]["status"] == "completed"


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE (:Episode {id: 'intruder', name: 'x'})",
        "MATCH (o:Observation) SET o.text = 'overwritten'",
        "MATCH (o:Observation) DETACH DELETE o",
        "MATCH (e:Entity) DELETE e",
        "MERGE (:Entity {id: 'intruder'})",
        "DROP TABLE FOLLOWS",
        "ALTER TABLE Episode ADD intruder INT64",
        "COPY Episode FROM 'episodes.csv'",
    ],
)
def test_a_write_is_refused_and_the_memory_is_unchanged(
    built: Built, capsys, statement: str
) -> None:
    before = _counts(built.directory)
    code, out, err = _cli(capsys, "cypher", str(built.directory), statement)
    assert code == 2
    assert out == ""
    assert err.startswith("emem-graph: error: the memory is read-only here")
    assert _counts(built.directory) == before
    texts = run_cypher(built.directory, "MATCH (o:Observation) RETURN o.text AS t").rows
    assert "overwritten" not in {row[0] for row in texts}
    with pytest.raises(ReadOnlyQueryError):
        run_cypher(built.directory, statement)
    # Kuzu itself refuses it, also without the keyword check of the explore layer.
    with open_graph(built.directory) as graph, pytest.raises(ReadOnlyQueryError):
        graph.run_statement(statement, limit=10, timeout_s=10)
    assert _counts(built.directory) == before


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (MATCH (o:Observation) RETURN o.text) TO '{out}/leak.csv'",
        "// a comment first\nEXPORT DATABASE '{out}/leak'",
        "INSTALL json",
        "LOAD EXTENSION json",
        "ATTACH '{out}/other.kuzu' AS other (dbtype kuzu)",
        "BEGIN TRANSACTION",
    ],
)
def test_statements_that_write_files_or_change_the_session_are_refused(
    built: Built, tmp_path: Path, statement: str
) -> None:
    with pytest.raises(ReadOnlyQueryError, match="statements are refused"):
        run_cypher(built.directory, statement.format(out=tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_second_statement_is_refused_before_anything_runs(built: Built, capsys) -> None:
    before = _counts(built.directory)
    code, _, err = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (o:Observation) RETURN count(o); MATCH (e:Episode) DETACH DELETE e",
    )
    assert code == 2
    assert "one Cypher statement at a time" in err
    # A CALL of a function that writes (Kuzu runs create_fts_index as several statements) is
    # refused by the read-only allow-list before Kuzu sees it.
    with pytest.raises(ReadOnlyQueryError, match="CALL create_fts_index"):
        run_cypher(built.directory, "CALL create_fts_index('Observation', 'i', ['text'])")
    assert _counts(built.directory) == before
    # A trailing semicolon, and one inside a string, are not a second statement.
    result = run_cypher(built.directory, "RETURN 'a;b' AS s;")
    assert result.rows == [["a;b"]]


def test_param_values_are_json_when_they_parse_and_text_otherwise() -> None:
    assert parse_params(
        ["n=3", "r=2.5", "on=true", "ids=[1, 2]", 'code="007"', "name=red chair", "none=null"]
    ) == {
        "n": 3,
        "r": 2.5,
        "on": True,
        "ids": [1, 2],
        "code": "007",
        "name": "red chair",
        "none": None,
    }
    with pytest.raises(InvalidInputError, match="NAME=VALUE"):
        parse_params(["novalue"])
    with pytest.raises(InvalidInputError, match="twice"):
        parse_params(["a=1", "a=2"])


def test_cypher_passes_params(built: Built, capsys) -> None:
    code, out, _ = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (o:Observation) WHERE o.layer = $layer AND o.x >= $min_x "
        "RETURN count(o) AS n, min(o.x) AS lowest",
        "--param",
        "layer=captions",
        "--param",
        "min_x=1.2",
        "--format",
        "csv",
    )
    assert code == 0
    assert list(csv.reader(io.StringIO(out))) == [["n", "lowest"], ["2", "1.5"]]


def test_a_missing_param_is_an_error_not_a_silent_null(built: Built, capsys) -> None:
    code, out, err = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (o:Observation) WHERE o.layer = $layer RETURN count(o) AS n",
    )
    assert code == 2
    assert out == ""
    assert "needs parameter(s) $layer" in err
    code, _, err = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (o:Observation) RETURN count(o) AS n",
        "--param",
        "layer=captions",
    )
    assert code == 2
    assert "no parameter(s) layer" in err


def test_parameters_in_comments_and_strings_do_not_count() -> None:
    statement = "// $ignored\nMATCH (o) WHERE o.text = '$not_a_param' AND o.x > $x RETURN o"
    assert parameters_of(statement) == ("x",)
    assert split_statements("RETURN ';' AS a; // c;\nRETURN 2;") == [
        "RETURN ';' AS a",
        "// c;\nRETURN 2",
    ]


def test_the_row_limit_truncates_and_says_so(built: Built, capsys) -> None:
    statement = "MATCH (o:Observation) RETURN o.id AS id ORDER BY id"
    result = run_cypher(built.directory, statement, limit=2)
    assert len(result.rows) == 2
    assert result.truncated
    assert not run_cypher(built.directory, statement, limit=4).truncated

    code, out, _ = _cli(capsys, "cypher", str(built.directory), statement, "--limit", "2")
    assert code == 0
    assert out.splitlines()[-1] == "(2 rows; more were left out at the limit of 2 rows)"
    code, out, err = _cli(
        capsys, "cypher", str(built.directory), statement, "--limit", "3", "--format", "csv"
    )
    assert len(out.splitlines()) == 1 + 3
    assert "only the first" in err
    code, out, _ = _cli(
        capsys, "cypher", str(built.directory), statement, "--limit", "1", "--format", "json"
    )
    assert json.loads(out)["truncated"] is True


def test_a_query_past_its_timeout_is_stopped_with_a_clear_error(built: Built) -> None:
    # 4e8 rows: about 3 s on this machine, 60 times the timeout (a product of the fixture's few
    # observations finished inside 0.05 s on a lucky run).
    many = "UNWIND range(1, 20000) AS i UNWIND range(1, 20000) AS j RETURN sum(i * j) AS s"
    with pytest.raises(QueryTimeoutError, match=r"longer than 0\.05 s"):
        run_cypher(built.directory, many, timeout_s=0.05)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(InvalidInputError, match="timeout"):
            run_cypher(built.directory, "RETURN 1 AS one", timeout_s=bad)
    with pytest.raises(InvalidInputError, match="row limit"):
        run_cypher(built.directory, "RETURN 1 AS one", limit=0)


@pytest.mark.parametrize(
    ("statement", "params", "where"),
    [
        ("RETURN '\udcff' AS v", None, r"the Cypher statement .*'\\udcff' at position 8"),
        ("RETURN $v AS v", {"v": "\ud800"}, r"parameter \$v .*'\\ud800' at position 0"),
        ("RETURN $v AS v", {"v": ["ok", {"k": "a\ud800"}]}, r"parameter \$v\[1\]\['k'\]"),
    ],
)
def test_text_utf8_cannot_encode_is_refused_at_every_cypher_door(
    built: Built, capsys, statement: str, params: dict[str, object] | None, where: str
) -> None:
    # A lone surrogate (argv bytes that are not UTF-8) reached the engine's binding: a bare
    # TypeError naming its C++ signature from query_graph, a multi-line StorageError from
    # run_cypher, "Unable to cast Python instance ... PYBIND11_DETAILED_ERROR_MESSAGES" for a
    # parameter.
    def refused(call) -> str:
        with pytest.raises(InvalidInputError, match=where) as caught:
            call()
        message = str(caught.value)
        assert len(message.splitlines()) == 1
        assert "incompatible function arguments" not in message
        assert "Unable to cast" not in message
        return message

    refused(lambda: run_cypher(built.directory, statement, params))
    with open_graph(built.directory) as graph:
        refused(lambda: query_graph(graph, statement, params))
        assert query_graph(graph, "RETURN 1 AS one").rows == [[1]]  # the graph still answers
    if params is None:
        code, out, err = _cli(capsys, "cypher", str(built.directory), statement)
    else:
        code, out, err = _cli(
            capsys, "cypher", str(built.directory), statement, "--param", "v=\udcff"
        )
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "not valid text" not in err and "lone surrogate" in err


def test_the_engine_refusing_a_statement_it_cannot_take_is_bad_input_on_one_line(
    built: Built,
) -> None:
    # Below the door's check (check_statement), the binding's TypeError for a statement it
    # cannot cast came out bare from GraphDB.run_statement and as a multi-line StorageError
    # from GraphDB.query_text.
    with open_graph(built.directory) as graph:
        for call, words in (
            (
                lambda: graph.run_statement("RETURN '\udcff' AS v", limit=1, timeout_s=5.0),
                "lone surrogate '\\\\udcff' at position 8",
            ),
            (
                lambda: graph.run_statement("RETURN $v", {"v": "\ud800"}, limit=1, timeout_s=5),
                "not valid Unicode",
            ),
            (lambda: graph.query_text("RETURN '\udcff' AS v"), "not valid Unicode"),
        ):
            with pytest.raises(InvalidInputError, match=words) as caught:
                call()
            assert len(str(caught.value).splitlines()) == 1


@pytest.mark.parametrize(
    ("statement", "position"),
    [
        ("MATCH (o:Observation RETURN o", "at line 1, offset 21: near 'RETURN'"),
        ("RETURN ", "at line 1, offset 7 (the end of the statement)"),
        ("RETURN 1 AS one\nFROM x", "at line 2, offset 0: near 'FROM'"),
    ],
)
def test_a_parser_error_is_one_line_naming_where(
    built: Built, capsys, statement: str, position: str
) -> None:
    # Kuzu's parser error ends in a drawing (the line quoted, carets under it): the message
    # reached the Python API on three lines.
    with pytest.raises(InvalidInputError, match="Parser exception") as caught:
        run_cypher(built.directory, statement)
    assert len(str(caught.value).splitlines()) == 1
    assert str(caught.value).endswith(position)
    with open_graph(built.directory) as graph, pytest.raises(InvalidInputError) as in_process:
        query_graph(graph, statement)
    assert str(in_process.value) == str(caught.value)
    code, _, err = _cli(capsys, "cypher", str(built.directory), statement)
    assert code == 2
    assert err.splitlines() == [f"emem-graph: error: {caught.value}"]


def test_a_missing_directory_or_a_non_memory_is_a_clear_error(
    built: Built, tmp_path: Path, capsys
) -> None:
    code, _, err = _cli(capsys, "cypher", str(tmp_path / "nowhere"), "RETURN 1")
    assert code == 2
    assert "no memory directory" in err
    code, _, err = _cli(capsys, "cypher", str(tmp_path), "RETURN 1")
    assert code == 2
    assert "is not an emem_graph memory" in err
    assert not (tmp_path / "graph.kuzu").exists()


def test_a_memory_held_by_another_process_is_a_clear_error(tmp_path: Path) -> None:
    directory = tmp_path / "running"
    with _open(directory) as memory:
        memory.add("the robot is running", 0.0, 0.0)
        memory.flush()
        done = subprocess.run(
            [*_emem_graph(), "cypher", str(directory), "RETURN 1"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2, done.stderr
    assert "open read-write in another process" in done.stderr
    assert "ROS bridge's Query service" in done.stderr
    assert "Traceback" not in done.stderr


# --- named queries -----------------------------------------------------------------------------


def test_query_list_shows_names_params_and_descriptions(capsys) -> None:
    code, out, _ = _cli(capsys, "query", "--list")
    assert code == 0
    lines = out.splitlines()
    recall = lines.index("recall $x $y $radius")
    assert lines[recall + 1].strip().startswith("Everything linked to the observations of an area")
    assert "episode_chain $id" in lines
    assert "node_counts" in lines
    # The store's own queries (writes, export steps, plumbing) only with --all.
    assert "create_entity" not in out and "export_observations" not in out
    assert "index_observations" not in out
    user_count = sum(1 for line in lines if line and not line.startswith((" ", "(")))
    internal = len(list(QUERIES.glob("*.cypher"))) - user_count
    assert lines[-1] == f"({user_count} queries; --all also lists {internal} internal ones)"

    code, out, _ = _cli(capsys, "query", "--list", "--all")
    assert code == 0
    lines = out.splitlines()
    assert "create_entity $id $name $entity_type $x $y $z $first_seen $last_seen " in out
    assert any(line.startswith("close_episode $id") and "[writes" in line for line in lines)
    assert "export_observations" in lines and "recall $x $y $radius" in lines
    assert {query.name for query in list_named_queries()} >= {"recall", "episode_chain"}
    assert all(not q.internal for q in list_named_queries(include_internal=False))
    assert len(list_named_queries()) == len(list(QUERIES.glob("*.cypher")))


def test_a_mistyped_command_gets_a_suggestion_and_every_command_a_description(capsys) -> None:
    from emem_graph.cli import build_parser

    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as exit_:
            main(list(argv))
        assert exit_.value.code == 2
        return capsys.readouterr().err

    assert "did you mean query?" in refused("qurey", "--list")
    assert "did you mean" not in refused("xyzzy")
    assert "did you mean table?" in refused("query", "DIR", "recall", "--format", "tabel")

    def walk(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield name, sub
                    yield from walk(sub)

    commands = dict(walk(build_parser()))
    assert len(commands) >= 18
    assert all(sub.description for sub in commands.values()), [
        name for name, sub in commands.items() if not sub.description
    ]


def test_a_node_column_reads_as_one_column_per_property(built: Built, capsys) -> None:
    code, out, _ = _cli(capsys, "cypher", str(built.directory), "MATCH (e:Entity) RETURN e LIMIT 2")
    assert code == 0
    header = out.splitlines()[0]
    assert [cell.strip() for cell in header.split("|")][:2] == ["e.id", "e.name"]
    assert '"_label"' not in out and "e.vector" not in out
    code, out, _ = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (o:Observation)-[r]->(x) RETURN r, x LIMIT 3",
    )
    header = [cell.strip() for cell in out.splitlines()[0].split("|")]
    assert header[0] == "r:label"  # a relationship names its type
    # An untyped pattern's properties that are NULL in every row are left out.
    rows = [[c.strip() for c in line.split("|")] for line in out.splitlines()[2:-1]]
    assert rows and all(any(row[i] != "NULL" for row in rows) for i in range(len(header)))
    code, out, _ = _cli(
        capsys,
        "cypher",
        str(built.directory),
        "MATCH (e:Entity) RETURN e LIMIT 1",
        "--format",
        "json",
    )
    assert '"_label": "Entity"' in out  # json keeps the node whole


def test_query_recall_returns_what_is_linked_to_an_area(built: Built, capsys) -> None:
    code, out, _ = _cli(
        capsys,
        "query",
        str(built.directory),
        "recall",
        "--param",
        "x=1.0",
        "--param",
        "y=2.0",
        "--param",
        "radius=1",
        "--format",
        "json",
    )
    assert code == 0
    rows = json.loads(out)["rows"]
    kitchen_gists = run_cypher(
        built.directory,
        "MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation) WHERE o.x < 2 RETURN DISTINCT g.id",
    ).rows
    assert kitchen_gists
    assert {row["id"] for row in rows if row["kind"] == "gist"} == {g[0] for g in kitchen_gists}
    assert all(row["links"] >= 1 for row in rows)


def test_query_episode_chain_walks_back_along_follows(built: Built, capsys) -> None:
    code, out, _ = _cli(
        capsys,
        "query",
        str(built.directory),
        "episode_chain",
        "--param",
        f"id={built.second_episode}",
    )
    assert code == 0
    result = run_named_query(built.directory, "episode_chain", {"id": built.second_episode})
    assert result.columns == ["relation", "id", "hops"]
    assert result.rows == [["previous", built.first_episode, 1]]
    assert built.first_episode in out


def test_an_unknown_query_name_lists_close_names(built: Built, capsys) -> None:
    code, _, err = _cli(capsys, "query", str(built.directory), "episode_chian")
    assert code == 2
    assert "no named query 'episode_chian'" in err
    assert "episode_chain" in err
    with pytest.raises(InvalidInputError, match="recall"):
        named_query("recal")


def test_a_named_write_query_is_refused_too(built: Built) -> None:
    before = _counts(built.directory)
    assert named_query("close_episode").writes
    with pytest.raises(ReadOnlyQueryError):
        run_named_query(
            built.directory,
            "close_episode",
            {"id": built.first_episode, "end_time": 0.0, "status": "interrupted"},
        )
    assert _counts(built.directory) == before


# --- shell -------------------------------------------------------------------------------------


def test_the_shell_runs_statements_piped_into_a_subprocess(built: Built) -> None:
    script = (
        "MATCH (o:Observation)\n"
        "WHERE o.layer = 'detections'\n"
        "RETURN o.text AS detected;\n"
        "MATCH (e:Episode) RETURN count(e) AS episodes\n"
        "\n"
        ":quit\n"
        "RETURN 'after quit' AS never;\n"
    )
    done = subprocess.run(
        [*_emem_graph(), "shell", str(built.directory)],
        input=script,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "detected",
        "--------",
        "1 cup",
        "(1 row)",
        "episodes",
        "--------",
        "2",
        "(1 row)",
    ]


def test_the_shell_prints_errors_and_keeps_going(built: Built) -> None:
    script = io.StringIO(
        "CREATE (:Episode {id: 'intruder'});\n"
        ":limit 1\n"
        ":format csv\n"
        "MATCH (o:Observation) RETURN o.layer AS layer ORDER BY layer; RETURN 1 AS one;\n"
        ":param layer=captions\n"
        "MATCH (o:Observation) WHERE o.layer = $layer\n"
        "RETURN count(o) AS n\n"
        ":nonsense\n"
        ":query node_counts\n"
        ":help\n"
        ":queries\n"
        ":format yaml\n"
        "RETURN 'last, no semicolon' AS last"
    )
    out, err = io.StringIO(), io.StringIO()
    before = _counts(built.directory)
    shell(built.directory, stdin=script, stdout=out, stderr=err)
    lines = out.getvalue().splitlines()
    assert lines[:6] == ["layer", "captions", "one", "1", "n", "3"]
    assert lines[6] == "observations,episodes,gists,entities"
    assert lines[7].startswith(f"{before['observations']},{before['episodes']},")
    assert ":limit N" in out.getvalue()
    assert "recall $x $y $radius" in lines
    assert lines[-2:] == ["last", '"last, no semicolon"']  # csv quotes the comma
    errors = err.getvalue().splitlines()
    assert errors[0].startswith("error: the memory is read-only here")
    assert errors[1] == "(only the first 1 rows: :limit N shows more)"
    assert errors[2] == "error: unknown command :nonsense (:help lists the commands)"
    assert errors[3].startswith("error: the format is one of table, json, csv")
    assert len(errors) == 4
    assert _counts(built.directory) == before


def test_shell_params_may_hold_spaces_and_feed_named_queries(built: Built) -> None:
    script = io.StringIO(
        ":param name='red chair'\n"
        "MATCH (e:Entity {name: $name}) RETURN e.entity_type AS type;\n"
        f":query episode_chain id={built.second_episode}\n"
        ":params\n"
    )
    out, err = io.StringIO(), io.StringIO()
    shell(built.directory, stdin=script, stdout=out, stderr=err, output="csv")
    assert err.getvalue() == ""
    assert out.getvalue().splitlines() == [
        "type",
        "furniture",
        "relation,id,hops",
        f"previous,{built.first_episode},1",
        "name='red chair'",
    ]
