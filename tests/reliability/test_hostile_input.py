"""Hostile input: whatever a perception model or a planner sends, the memory neither crashes nor
changes when it is only asked, and no text it is given ever becomes Cypher.

Property tests (hypothesis) throw random strings (Cypher and SQL fragments, control characters,
very long strings), NaN/inf/huge numbers, wrong types and unknown keys at ``add`` and at every
tool through ``dispatch_tool_call``. Every Cypher statement sent to Kuzu during the run is
recorded (the Kuzu connection's execute and prepare are wrapped), and none may contain any of
the hostile strings. The read-only Cypher entry points (run_cypher, query_graph, the shell)
refuse every write form, each tested, with the memory unchanged afterwards.
"""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emem_graph import InvalidInputError, MemoryConfig, SpatioTemporalMemory
from emem_graph.errors import EmemGraphError, ReadOnlyQueryError
from emem_graph.explore import cypher as explore_cypher
from emem_graph.explore.shell import shell
from emem_graph.resources import read_cypher, resource_dir
from emem_graph.retrieval.schemas import ALL_SCHEMAS, TOOL_SCHEMAS
from emem_graph.storage import graph as graph_module

INJECTIONS = (
    "') RETURN 1; MATCH (n) DETACH DELETE n //",
    "'}) MATCH (n) DETACH DELETE n RETURN 1 //",
    '" OR 1=1 --',
    "x' OR '1'='1",
    "'; DROP TABLE Observation; --",
    "$rows",
    "`Observation`",
    "}) CREATE (:Entity {id: 'pwned'}) //",
    "kitchen') UNION MATCH (o:Observation) RETURN o.id //",
    "1; COPY Observation TO '/tmp/stolen.csv'",
    "*/ MATCH (n) DELETE n /*",
    "\\'); CALL drop_fts_index('x'); //",
)
CONTROL = "".join(chr(c) for c in range(32)) + "\x7f\u2028\u2029\ufeff\ud7ff"
LONG_TEXT = "chair " * 20_000  # 120,000 characters: over max_text_chars

hostile_strings = st.one_of(
    st.sampled_from(INJECTIONS),
    st.text(max_size=60),
    st.text(alphabet=CONTROL, min_size=1, max_size=20),
    st.builds(lambda a, b: a + b, st.sampled_from(INJECTIONS), st.text(max_size=20)),
    st.just(LONG_TEXT),
    st.text(min_size=1000, max_size=3000),
)
hostile_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([0, -1, 2**31, 2**63, 1e308, -1e308, 5e-324, float("nan"), float("inf")]),
)
wrong_types = st.one_of(
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.just(b"bytes"),
)
hostile_values = st.one_of(hostile_strings, hostile_numbers, wrong_types)

SEEN: list[str] = []
"""Every hostile string the tests sent (checked against the recorded Cypher)."""


class CypherRecorder:
    """Records the text of every statement sent to Kuzu on any connection."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.baseline: list[str] = []
        self._lock = threading.Lock()

    def mark_baseline(self) -> None:
        """What the library sent before any hostile input (BEGIN TRANSACTION, COMMIT, the
        primary-key lookups it assembles...): text found there proves nothing."""
        with self._lock:
            self.baseline = list(self.statements)

    def record(self, query: Any) -> None:
        if isinstance(query, str):
            with self._lock:
                self.statements.append(query)

    def containing(self, needles: list[str]) -> list[tuple[str, str]]:
        """(needle, statement) for every statement holding one of ``needles``. Needles shorter
        than 6 characters, or found in the library's own Cypher (an argument named "radius"),
        prove nothing and are skipped; so are those in what the library sent before any hostile
        input (see mark_baseline)."""
        own = "\n".join(
            [
                *(
                    read_cypher(folder, path.stem)
                    for folder in ("queries", "schema")
                    for path in resource_dir(folder).glob("*.cypher")
                ),
                *self.baseline,
            ]
        )
        telling = {n for n in needles if len(n.strip()) >= 6 and n not in own}
        unique = set(self.statements)
        return [(n, s) for n in telling for s in unique if n in s]


@pytest.fixture(scope="module")
def recorder() -> Iterator[CypherRecorder]:
    recorder = CypherRecorder()
    connection = graph_module.load_engine(graph_module.resolve_engine()).Connection
    execute, prepare = connection.execute, connection.prepare

    def recorded_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        recorder.record(query)
        return execute(self, query, *args, **kwargs)

    def recorded_prepare(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        recorder.record(query)
        return prepare(self, query, *args, **kwargs)

    connection.execute, connection.prepare = recorded_execute, recorded_prepare
    try:
        yield recorder
    finally:
        connection.execute, connection.prepare = execute, prepare


def build_memory(path: Path, minilm: Any) -> SpatioTemporalMemory:
    """A small memory with every kind of node and edge: observations in an episode with its
    gist, body state, an entity, observations outside episodes."""
    clock = [1_000_000.0]
    mem = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(path), maintenance_interval=None),
        embedding_provider=minilm,
        get_current_time=lambda: clock[0],
    )
    mem.start_episode("patrol kitchen")
    for k, text in enumerate(
        ["a red chair by the door", "2 chair, 1 person", "a blue cup on the table", "open door"]
    ):
        clock[0] += 5.0
        mem.add(text, 1.0 + k, 2.0, layer_name="camera")
    mem.add_body_state("battery 80 percent", "battery")
    mem.add_entity("red chair", 1.0, 2.0, entity_type="furniture")
    mem.end_episode(wait=True)
    mem.add("a green plant by the window", 5.0, 5.0, layer_name="camera")
    mem.flush()
    return mem


def graph_counts(mem: SpatioTemporalMemory) -> tuple[int, int]:
    graph = mem._store.graph
    nodes = graph.query_text("MATCH (n) RETURN count(n) AS n")[0]["n"]
    edges = graph.query_text("MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"]
    return int(nodes), int(edges)


@pytest.fixture(scope="module")
def memory(
    tmp_path_factory: pytest.TempPathFactory, minilm: Any, recorder: CypherRecorder
) -> Iterator[SpatioTemporalMemory]:
    mem = build_memory(tmp_path_factory.mktemp("hostile") / "mem", minilm)
    recorder.mark_baseline()
    yield mem
    mem.close()


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tool = draw(st.sampled_from(list(TOOL_SCHEMAS)))
    names = list(ALL_SCHEMAS[tool]["parameters"]["properties"])
    keys = st.sampled_from(names) | st.sampled_from(INJECTIONS) | st.text(max_size=10)
    arguments = draw(st.dictionaries(keys, hostile_values, max_size=6))
    if names and draw(st.booleans()):  # a required argument is usually there, hostile
        arguments[names[0]] = draw(hostile_strings)
    return tool, arguments


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [*strings_in(k), *strings_in(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def test_tools_survive_hostile_arguments_and_change_nothing(
    memory: SpatioTemporalMemory, recorder: CypherRecorder, scale, summary
) -> None:
    # The capabilities' upkeep (entities linked to places, the area forest built) runs at the
    # first tool call after a write, whatever its arguments: done first, so that what is
    # counted is what hostile calls could change.
    memory.catch_up()
    before = graph_counts(memory)
    tried = {"dict": 0, "json": 0, "errors": 0}

    @settings(
        max_examples=scale.hostile_examples,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(call=tool_calls(), as_json=st.booleans(), raw=hostile_strings)
    def run(call: tuple[str, dict[str, Any]], as_json: bool, raw: str) -> None:
        tool, arguments = call
        SEEN.extend(strings_in(arguments))
        SEEN.append(raw)
        if as_json:
            try:
                text = json.dumps(arguments, allow_nan=True)
            except (TypeError, ValueError):
                text = raw
            answer = memory.dispatch_tool_call(tool, text)
            tried["json"] += 1
        else:
            answer = memory.dispatch_tool_call(tool, arguments)
            tried["dict"] += 1
        assert isinstance(answer, str)
        tried["errors"] += answer.startswith("Error:")
        # A bad name is an error line too.
        assert memory.dispatch_tool_call(raw, arguments).startswith("Error:")

    run()
    assert graph_counts(memory) == before, "a query changed the memory"
    leaks = recorder.containing(SEEN)
    assert not leaks, f"hostile text reached Cypher: {leaks[:3]}"
    total = tried["dict"] + tried["json"]
    line = (
        f"hostile input, tools ({scale.label()}): {total} calls through dispatch_tool_call "
        f"({tried['json']} as JSON text, {tried['errors']} answered 'Error:'), 0 exceptions, "
        f"node/edge counts unchanged {before}, {len(set(recorder.statements))} distinct Cypher "
        f"statements checked, 0 containing input text"
    )
    print(line)
    summary.append(line)


@st.composite
def add_calls(draw: st.DrawFn) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "text": draw(hostile_strings | wrong_types),
        "x": draw(hostile_numbers | st.floats(-100, 100)),
        "y": draw(hostile_numbers | st.floats(-100, 100)),
    }
    optional = {
        "z": hostile_numbers,
        "timestamp": hostile_numbers | wrong_types,
        "layer_name": hostile_strings | wrong_types,
        "source_type": hostile_strings | wrong_types,
        "confidence": hostile_numbers | wrong_types,
        "metadata": st.dictionaries(hostile_strings, hostile_values, max_size=3) | wrong_types,
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            arguments[key] = draw(strategy)
    return arguments


def test_add_takes_or_refuses_hostile_input_cleanly(
    memory: SpatioTemporalMemory, recorder: CypherRecorder, scale, summary
) -> None:
    """``add`` either stores the text exactly as given or raises InvalidInputError (writing
    nothing); never another exception, never a corrupted memory."""
    accepted: dict[str, str] = {}
    refused = 0
    before = memory._store.counts()["observations"]

    @settings(
        max_examples=scale.hostile_examples, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(arguments=add_calls())
    def run(arguments: dict[str, Any]) -> None:
        nonlocal refused
        SEEN.extend(strings_in(arguments))
        try:
            oid = memory.add(**arguments)
        except InvalidInputError:
            refused += 1
            return
        accepted[oid] = arguments["text"]
        assert math.isfinite(float(arguments["x"])) and math.isfinite(float(arguments["y"]))

    run()
    store = memory.store  # flushes
    assert store.counts()["observations"] == before + len(accepted)
    assert store.counts()["pending_vectors"] == 0
    stored = {o.id: o.text for o in store.get_observations(list(accepted))}
    assert stored == accepted, "an accepted text was not stored exactly"
    leaks = recorder.containing(SEEN)
    assert not leaks, f"hostile text reached Cypher: {leaks[:3]}"
    line = (
        f"hostile input, add ({scale.label()}): {len(accepted) + refused} calls, "
        f"{len(accepted)} stored exactly, {refused} refused with InvalidInputError, "
        "0 other exceptions, 0 Cypher statements containing input text"
    )
    print(line)
    summary.append(line)


def test_a_hostile_layer_name_filters_to_nothing_instead_of_widening_the_search(
    memory: SpatioTemporalMemory,
) -> None:
    """The LanceDB filter quotes strings: an SQL fragment as a layer matches no layer."""
    for fragment in ("camera' OR '1'='1", "x') OR (1=1", "camera'--"):
        answer = memory.semantic_search("red chair", layer=fragment)
        assert "red chair by the door" not in answer, fragment
        answer = memory.spatial_query(1.0, 2.0, radius=50.0, layer=fragment)
        assert "red chair by the door" not in answer, fragment


# --- the read-only Cypher entry points -------------------------------------------------------

WRITE_FORMS = {
    "CREATE": "CREATE (:Entity {id: 'intruder', name: 'x'})",
    "MERGE": "MERGE (e:Entity {id: 'intruder'}) RETURN e",
    "SET": "MATCH (o:Observation) SET o.text = 'overwritten' RETURN count(o)",
    "DELETE": "MATCH (n) DETACH DELETE n",
    "DROP": "DROP TABLE Observation",
    "ALTER": "ALTER TABLE Observation ADD intruder STRING",
    "COPY": "COPY (MATCH (o:Observation) RETURN o.text) TO '{out}/stolen.csv'",
    "COPY FROM": "COPY Entity FROM '{out}/entities.csv'",
    "LOAD": "LOAD EXTENSION fts",
    "LOAD FROM": "LOAD FROM '{out}/entities.csv' RETURN *",
    "LOAD FROM later": "MATCH (o:Observation) WITH count(o) AS n LOAD FROM '{out}/entities.csv' "
    "RETURN *",
    "INSTALL": "INSTALL httpfs",
    "ATTACH": "ATTACH '{out}/other.kuzu' AS other (dbtype kuzu)",
    "lowercase": "match (o:Observation) set o.tier = 'archived' return count(o)",
    "after a comment": "/* only a read */ MATCH (o:Observation) DETACH DELETE o",
    "EXPLAIN": "EXPLAIN MATCH (o:Observation) DELETE o",
    "CALL": "CALL drop_fts_index('Observation', 'text_index')",
    "after WITH": "MATCH (o:Observation) WITH o LIMIT 1 CREATE (:Entity {id: o.id + 'x'})",
}


@pytest.fixture(scope="module")
def closed_memory(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Path:
    """A memory directory, closed (the read-only entry points open it themselves)."""
    path = tmp_path_factory.mktemp("readonly") / "mem"
    build_memory(path, minilm).close()
    out = path.parent
    (out / "entities.csv").write_text("intruder,x,,0,0,0,0,0,1,1,,\n")
    return path


def snapshot(path: Path) -> dict[str, Any]:
    """Node and edge counts by label, every observation's text and tier, the tables: read in
    one sandbox (one child process for the three statements)."""
    with explore_cypher.CypherSandbox(path) as sandbox:

        def rows(statement: str) -> list[list[Any]]:
            return sandbox.run(statement, limit=10_000, timeout_s=60).rows

        return {
            "counts": rows(
                "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN label(n) AS kind, "
                "count(DISTINCT n) AS nodes, count(r) AS edges ORDER BY kind"
            ),
            "observations": rows("MATCH (o:Observation) RETURN o.id, o.text, o.tier ORDER BY o.id"),
            "tables": rows("CALL show_tables() RETURN name ORDER BY name"),
        }


@pytest.fixture(scope="module")
def closed_snapshot(closed_memory: Path) -> dict[str, Any]:
    """The closed memory as built: after every refused write form it must still be this."""
    return snapshot(closed_memory)


@pytest.mark.parametrize("form", list(WRITE_FORMS))
def test_read_only_cypher_refuses_every_write_form(
    closed_memory: Path, closed_snapshot: dict[str, Any], form: str
) -> None:
    out = closed_memory.parent
    statement = WRITE_FORMS[form].replace("{out}", str(out))
    before = closed_snapshot
    with pytest.raises(EmemGraphError):
        explore_cypher.run_cypher(closed_memory, statement)
    with explore_cypher.open_graph(closed_memory) as graph, pytest.raises(EmemGraphError):
        explore_cypher.query_graph(graph, statement)
    err = io.StringIO()
    shell(closed_memory, stdin=io.StringIO(statement + ";\n"), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().strip(), f"the shell ran {form} without an error"
    assert snapshot(closed_memory) == before, f"{form} changed the memory"
    assert not (out / "stolen.csv").exists(), "a COPY ... TO wrote a file"
    assert not (out / "other.kuzu").exists()


def test_the_write_refusal_is_a_read_only_error_for_plain_writes(closed_memory: Path) -> None:
    for form in ("CREATE", "MERGE", "SET", "DELETE", "DROP", "ALTER", "COPY", "INSTALL"):
        with pytest.raises(ReadOnlyQueryError):
            statement = WRITE_FORMS[form].replace("{out}", "/nonexistent")
            explore_cypher.run_cypher(closed_memory, statement)


def test_memory_still_opens_and_answers_after_the_refusals(closed_memory: Path, minilm) -> None:
    mem = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(closed_memory), maintenance_interval=None),
        embedding_provider=minilm,
    )
    try:
        assert "red chair" in mem.semantic_search("red chair")
        assert mem._store.counts()["pending_vectors"] == 0
    finally:
        mem.close()


def test_the_recorder_would_catch_text_pasted_into_cypher() -> None:
    """The leak check is not vacuous: a statement built from input is found."""
    recorder = CypherRecorder()
    recorder.record("MATCH (o:Observation) RETURN o")
    recorder.mark_baseline()
    pasted = f"MATCH (o:Observation) WHERE o.text = '{INJECTIONS[0]}' RETURN o"
    recorder.record(pasted)
    assert recorder.containing([INJECTIONS[0], "COMMIT", "x"]) == [(INJECTIONS[0], pasted)]
