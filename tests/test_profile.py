"""User-profile memory: add, update, node reuse under paraphrase, users kept apart,
retrieval order, grounding in entities (locate / recall by alias), and the LLM path through the
real ``ollama`` client against the fake Ollama server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emem_graph import OllamaLLM
from emem_graph.errors import InvalidInputError
from emem_graph.profile.parse import classify_request, parse_instruction


def _count(memory: Any, cypher: str, params: dict[str, Any] | None = None) -> int:
    rows = memory._store.graph.query_text(cypher, params)
    return int(rows[0]["n"])


def _steps(memory: Any, user: str, alias: str) -> list[str]:
    found = [k for k in memory.profile.knowledge(user) if k.alias == alias]
    assert len(found) == 1
    return [p.text for p in found[0].patterns]


# --- add and update ------------------------------------------------------------------------------


def test_add_object_semantics_links_the_alias_to_its_objects(make_memory):
    memory = make_memory()
    update = memory.profile.add_object_semantics(
        "Alice",
        "my dinnerware set",
        ["blue plates", {"name": "white bowls", "granularity": "category"}],
        "the blue plates and white bowls are my dinnerware set",
    )
    assert update.action == "added" and update.created == ["blue plates", "white bowls"]
    assert (
        _count(
            memory, "MATCH (:User {id: 'alice'})-[:REFERS_TO]->(k:Knowledge) RETURN count(k) AS n"
        )
        == 1
    )
    names = memory._store.graph.query_text(
        "MATCH (k:Knowledge)-[:COMPOSED_OF]->(o:ProfileObject) RETURN o.name AS name, "
        "o.granularity AS g ORDER BY name"
    )
    assert [(r["name"], r["g"]) for r in names] == [
        ("blue plates", "instance"),
        ("white bowls", "category"),
    ]
    # The objects read back in the order they were given, also after later writes.
    memory.profile.add_user_pattern(
        "Alice", "my tea time", ["fill the kettle", "bring the tray to the balcony"]
    )
    assert memory.user_profile("set the table with my dinnerware set", user="alice", k=1) == (
        "1. [object] my dinnerware set (Alice): blue plates — not located yet; white bowls "
        "(any of that kind) — not located yet."
    )


def test_a_later_instruction_updates_the_routine_in_place_with_the_new_steps_in_order(
    make_memory,
):
    memory = make_memory()
    first = memory.profile.update_from_instruction(
        "For my cozy evening, move the candle to the table, then to the couch", "Alice"
    )
    memory.profile.add_object_semantics("Alice", "my reading light", ["brass lamp"])
    candle = memory._store.graph.query_text(
        "MATCH (o:ProfileObject {name: 'candle'}) RETURN o.id AS id"
    )[0]["id"]
    second = memory.profile.update_from_instruction(
        "For my cozy evening, bring the blanket to the sofa, then move the candle to the "
        "coffee table and then turn on the brass lamp",
        "alice",
    )
    assert (first.action, second.action) == ("added", "updated")
    assert second.knowledge_id == first.knowledge_id
    assert _count(memory, "MATCH (k:Knowledge {subtype: 'user_pattern'}) RETURN count(k) AS n") == 1
    assert _steps(memory, "alice", "my cozy evening") == [
        "bring blanket to the sofa",
        "move candle to the coffee table",
        "turn on brass lamp",
    ]
    # Three steps, chained by two BEFORE edges; the old ones are gone.
    assert _count(memory, "MATCH (p:Pattern) RETURN count(p) AS n") == 3
    assert _count(memory, "MATCH (:Pattern)-[b:BEFORE]->(:Pattern) RETURN count(b) AS n") == 2
    # Shared nodes stay (the candle, the lamp of the other knowledge, the couch as 'sofa');
    # the place only the old routine used ('table') is removed.
    assert ("candle", "candle") in second.reused and ("sofa", "couch") in second.reused
    assert ("brass lamp", "brass lamp") in second.reused
    assert memory._store.graph.query_text(
        "MATCH (o:ProfileObject {name: 'candle'}) RETURN o.id AS id"
    ) == [{"id": candle}]
    places = memory._store.graph.query_text(
        "MATCH (l:ProfileLocation) RETURN l.name AS name ORDER BY name"
    )
    assert [r["name"] for r in places] == ["coffee table", "couch"]


def test_structured_steps_keep_their_argument_order(make_memory):
    memory = make_memory()
    memory.profile.add_user_pattern(
        "Bob",
        "my tea time",
        [
            {"action": "fill", "object": "kettle"},
            {"action": "place", "objects": ["teapot", "cup"], "location": "tray"},
            "bring the tray to the balcony",
        ],
    )
    rows = memory._store.graph.query_text(
        "MATCH (p:Pattern {step: 1})-[t:TARGET]->(n) RETURN n.name AS name, t.position AS position "
        "ORDER BY position"
    )
    assert [r["name"] for r in rows] == ["teapot", "cup", "tray"]
    assert _steps(memory, "bob", "my tea time") == [
        "fill kettle",
        "place teapot and cup on tray",
        "bring tray to the balcony",
    ]


# --- node reuse under paraphrase ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [("mouse pad", "mouse mat"), ("kitchen counter", "countertop at kitchen"), ("sofa", "couch")],
)
def test_a_paraphrased_place_reuses_the_existing_node(make_memory, first, second):
    memory = make_memory()
    memory.profile.add_user_pattern("Carol", "my desk setup", [f"put the mouse on the {first}"])
    update = memory.profile.add_user_pattern(
        "Carol", "my evening tidy", [f"move the keys to the {second}"]
    )
    assert update.reused == [(second, first)]
    assert _count(memory, "MATCH (l:ProfileLocation) RETURN count(l) AS n") == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [("red cup", "blue cup"), ("mouse pad", "mouse"), ("left drawer", "right drawer")],
)
def test_similar_but_different_objects_get_their_own_nodes(make_memory, first, second):
    memory = make_memory()
    memory.profile.add_object_semantics("Carol", "my first thing", [first])
    update = memory.profile.add_object_semantics("Carol", "my other thing", [second])
    assert update.reused == [] and update.created == [second]
    assert _count(memory, "MATCH (o:ProfileObject) RETURN count(o) AS n") == 2


# --- users ---------------------------------------------------------------------------------------


def test_each_user_has_their_own_knowledge_and_nodes(make_memory):
    memory = make_memory()
    memory.profile.add_object_semantics("Alice", "my favorite cup", ["yellow cup"])
    memory.profile.add_object_semantics("Bob", "my favorite cup", ["green mug"])
    memory.profile.add_object_semantics("Bob", "my cup for tea", ["yellow cup"])
    alice = memory.user_profile("bring me my favorite cup", user="Alice")
    bob = memory.user_profile("bring me my favorite cup", user="bob", k=1)
    assert alice.splitlines()[0].endswith("(Alice): yellow cup — not located yet.")
    assert "green mug" in bob and "yellow" not in bob
    # The same phrase of two users is two nodes; an update of one leaves the other alone.
    assert _count(memory, "MATCH (o:ProfileObject {name: 'yellow cup'}) RETURN count(o) AS n") == 2
    memory.profile.add_object_semantics("Alice", "my favorite cup", ["white teacup"])
    assert "green mug" in memory.user_profile("my favorite cup", user="Bob", k=1)
    assert memory.user_profile("my cup", user="Dave") == (
        "No profile knowledge found for Dave: no user of that name (users: Alice, Bob)."
    )
    assert memory.user_profile("where are my skis", user="Bob") == (
        "No profile knowledge found for Bob."
    )


# --- retrieval -----------------------------------------------------------------------------------


def test_user_profile_puts_the_requested_knowledge_first_with_steps_in_order(make_memory):
    memory = make_memory()
    profile = memory.profile
    profile.update_from_instruction(
        "The yellow cup with the wooden handle is my favorite cup", "Al"
    )
    profile.update_from_instruction(
        "For my morning routine, open the curtains, then put the mug on the kitchen counter, "
        "then fill the kettle",
        "Al",
    )
    profile.update_from_instruction(
        "For my movie night, dim the lights, then bring the popcorn bowl to the sofa", "Al"
    )
    profile.update_from_instruction("My gardening gloves are the green gloves", "Al")
    routine = memory.user_profile("it's time for my movie night")
    lines = routine.splitlines()
    assert lines[0] == (
        "1. [routine] my movie night (Al): 1) dim lights; 2) bring popcorn bowl to the sofa."
    )
    assert len(lines) <= 3
    hits = profile.search("please fetch my favorite cup", k=3)
    assert hits[0].knowledge.alias == "my favorite cup"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    morning = profile.search("get my morning started", k=1)[0]
    assert [p.text for p in morning.knowledge.patterns] == [
        "open curtains",
        "put mug on the kitchen counter",
        "fill kettle",
    ]
    assert memory.dispatch_tool_call("user_profile", {"query": "cup", "k": 0}).startswith(
        "Error: user_profile: argument 'k'"
    )


def test_the_profile_survives_a_reopen_with_its_step_order(tmp_path, minilm):
    from emem_graph import SpatioTemporalMemory

    path = str(tmp_path / "mem")
    with SpatioTemporalMemory(path, embedding_provider=minilm) as memory:
        memory.profile.add_user_pattern(
            "Eve", "my bedtime", ["close the window", "turn off the lamp", "lock the front door"]
        )
    with SpatioTemporalMemory(path, embedding_provider=minilm) as memory:
        assert _steps(memory, "eve", "my bedtime") == [
            "close window",
            "turn off lamp",
            "lock front door",
        ]


# --- grounding -----------------------------------------------------------------------------------


def test_profile_objects_are_grounded_and_aliases_are_located(make_memory):
    memory = make_memory()
    memory.add_entity("red cup", 8.0, 1.0, entity_type="cup")
    memory.add_entity("yellow cup", 3.2, 1.0, entity_type="cup")
    memory.add("a yellow cup with a wooden handle on the kitchen counter", 3.0, 1.2)
    memory.profile.add_object_semantics(
        "Alice", "my favorite cup", ["yellow cup with the wooden handle"]
    )
    assert memory.user_profile("bring me my favorite cup", user="Alice", k=1) == (
        "1. [object] my favorite cup (Alice): yellow cup with the wooden handle — at (3.2, 1.0) "
        "as entity 'yellow cup'."
    )
    located = memory.locate("my favorite cup")
    assert located.splitlines()[0] == "Location: (3.2, 1.0, 0.0)"
    assert "yellow cup" in memory.recall("my favorite cup")
    # A concept that names no alias is left alone.
    assert memory.profile.resolve_concept("the red cup") is None


def test_an_entity_that_appears_later_grounds_the_waiting_object(make_memory):
    memory = make_memory()
    memory.profile.add_object_semantics("Alice", "my reading glasses", ["black glasses"])
    assert "not located yet" in memory.user_profile("my reading glasses")
    memory.add_entity("black glasses", 1.0, 4.0)
    memory.add_entity("black glasses", 1.4, 4.0)
    assert "at (1.2, 4.0) as entity 'black glasses'" in memory.user_profile("my reading glasses")
    assert (
        _count(memory, "MATCH (:ProfileObject)-[g:GROUNDED_AS]->(:Entity) RETURN count(g) AS n")
        == 1
    )


# --- LLM path (real ollama client, fake Ollama server) ------------------------------------------


def _fake_llm_answer(body: dict[str, Any]) -> str:
    prompt = body["messages"][0]["content"]
    said = prompt.rsplit("User:", 1)[-1]
    if "Classify it" in prompt:
        kind = "user_pattern" if "evening" in said else "object_semantics"
        return json.dumps({"type": kind})
    if "routine" in prompt:
        return json.dumps(
            {
                "alias": "my cozy evening",
                "description": "Move the candle to the table, then to the couch.",
                "steps": [
                    {"action": "move", "objects": [{"name": "candle"}],
                     "locations": [{"name": "table", "expression": "to the table"}]},
                    {"action": "move", "objects": [{"name": "candle"}],
                     "locations": [{"name": "couch", "expression": "to the couch"}]},
                ],
            }
        )  # fmt: skip
    return json.dumps(
        {
            "alias": "my favorite cup",
            "objects": [
                {"name": "yellow cup", "attributes": ["wooden handle"], "granularity": "instance"}
            ],
        }
    )


def test_instructions_go_through_the_llm_client_as_json(tmp_path, minilm, fake_ollama):
    from emem_graph import MemoryConfig, SpatioTemporalMemory

    fake_ollama.json_reply = _fake_llm_answer
    llm = OllamaLLM("llama3.2", host=fake_ollama.url, timeout=5, retries=0)
    config = MemoryConfig(db_path=str(tmp_path / "mem"), llm_retries=0)
    with SpatioTemporalMemory(config=config, embedding_provider=minilm, llm_client=llm) as memory:
        fake_ollama.reset_counts()
        update = memory.profile.update_from_instruction(
            "yellow cup w/ the wooden handle = my fav cup", "Alice"
        )
        assert (update.source, update.alias, update.created) == (
            "llm",
            "my favorite cup",
            ["yellow cup"],
        )
        routine = memory.profile.update_from_instruction(
            "cozy evening: candle goes to the table and after that the couch", "Alice"
        )
        assert routine.source == "llm"
        assert _steps(memory, "alice", "my cozy evening") == [
            "move candle to the table",
            "move candle to the couch",
        ]
        chats = [body for endpoint, body in fake_ollama.bodies if endpoint == "/api/chat"]
        assert len(chats) == 4 and all(isinstance(body["format"], dict) for body in chats)
        # A failing server: the rules understand the common form instead.
        fake_ollama.set_mode("error500")
        fallback = memory.profile.update_from_instruction("The green mug is my tea mug", "Alice")
        assert (fallback.source, fallback.alias) == ("rules", "my tea mug")


# --- rules and bad input -------------------------------------------------------------------------


def test_the_rules_parse_the_common_forms():
    fact = parse_instruction("The blue plates and the white bowls are my dinnerware set.")
    assert (fact.subtype, fact.alias) == ("object_semantics", "my dinnerware set")
    assert [(o.name, o.granularity) for o in fact.objects] == [
        ("blue plates", "category"),
        ("white bowls", "category"),
    ]
    routine = parse_instruction("my morning routine: open the blinds; then put the mug on the desk")
    assert [s.text for s in routine.steps] == ["open blinds", "put mug on the desk"]
    assert classify_request("bring me my favorite cup") == "object_semantics"
    assert classify_request("time for my cozy evening") == "user_pattern"
    with pytest.raises(InvalidInputError, match="could not understand"):
        parse_instruction("what a nice day")


def test_bad_input_is_refused_and_writes_nothing(make_memory):
    memory = make_memory()
    with pytest.raises(InvalidInputError):
        memory.profile.add_object_semantics("", "my cup", ["cup"])
    with pytest.raises(InvalidInputError):
        memory.profile.add_object_semantics("Al", "  ", ["cup"])
    with pytest.raises(InvalidInputError):
        memory.profile.add_object_semantics("Al", "my cup", [])
    with pytest.raises(InvalidInputError, match="is not a step"):
        memory.profile.add_user_pattern("Al", "my routine", ["the table"])
    with pytest.raises(InvalidInputError):
        memory.profile.update_from_instruction("what a nice day", "Al")
    assert memory.dispatch_tool_call("user_profile", {"query": " "}).startswith("Error:")
    assert memory.dispatch_tool_call("user_profile", {"query": "cup", "user": " "}).startswith(
        "Error: user_profile: argument 'user'"
    )
    assert (
        _count(memory, "MATCH (n) WHERE label(n) IN ['User', 'Knowledge'] RETURN count(n) AS n")
        == 0
    )
