"""Episode consolidation with an Ollama LLM (FakeOllamaServer, a fake) that answers, is slow,
fails with 500, returns malformed output, or is unreachable: every case ends with a closed
episode and a gist, and neither end_episode() nor close() waits on the LLM."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaServer, unreachable_url
from test_llm_ollama import extraction_answer

from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory

REPLY = "The robot checked the kitchen: a red chair next to the kitchen table."


def kitchen_episode(mem: SpatioTemporalMemory, clock: Any) -> str:
    episode = mem.start_episode("kitchen check")
    for i in range(3):
        clock.advance(10)
        mem.add("1 chair, 1 table", 2.0 + 0.1 * i, 2.0, layer_name="detections")
        mem.add("a red chair next to the kitchen table", 2.0 + 0.1 * i, 2.2, layer_name="captions")
        mem.add_body_state(f"battery {80 - i}%", "battery", 2.0, 2.0)
    return episode


def llm_memory(make_memory: Any, clock: Any, host: str, **fields: Any) -> SpatioTemporalMemory:
    settings: dict[str, Any] = {
        "llm_provider": "ollama",
        "ollama_host": host,
        "llm_timeout": 0.5,
        "llm_retries": 1,
        "llm_retry_backoff": 0.05,
        "maintenance_interval": None,
    }
    settings.update(fields)
    return make_memory(clock=clock, **settings)


def episode_gists(mem: SpatioTemporalMemory, episode_id: str) -> list[dict[str, Any]]:
    return mem.store.graph.query_text(
        "MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation) WHERE g.episode_id = $e "
        "RETURN g.id AS id, g.text AS text, g.layer AS layer, "
        "g.source_observation_count AS count, count(o) AS edges",
        {"e": episode_id},
    )


@pytest.mark.parametrize("mode", ["ok", "slow", "error500", "malformed", "bad_json", "unreachable"])
def test_every_llm_outcome_ends_with_a_closed_episode_and_a_gist(
    make_memory: Any, fake_ollama: FakeOllamaServer, clock: Any, mode: str
) -> None:
    fake_ollama.reply = REPLY
    fake_ollama.json_reply = extraction_answer
    if mode == "slow":
        fake_ollama.set_mode("slow", delay=3.0)
    elif mode in ("error500", "malformed"):
        fake_ollama.set_mode(mode)
    elif mode == "bad_json":
        fake_ollama.json_reply = "entities: red chair, kitchen table"
    host = unreachable_url() if mode == "unreachable" else fake_ollama.url
    mem = llm_memory(make_memory, clock, host)
    episode_id = kitchen_episode(mem, clock)

    assert mem.end_episode(wait=True) == episode_id

    episode = mem.store.get_episode(episode_id)
    assert episode is not None and episode.status == "completed" and mem.active_episode_id is None
    [gist] = episode_gists(mem, episode_id)
    assert gist["count"] == gist["edges"] == 6  # body state is never summarized
    assert gist["layer"] is None  # detections and captions: a cross-layer gist
    assert episode.gist == gist["text"]
    # The LLM's answer or the digest, then how many observations, where and when.
    where = r" 6 observations (around|near the [a-z ]+) \(2\.1, 2\.1\), "
    if mode in ("ok", "bad_json"):
        assert re.match(re.escape(REPLY) + where, gist["text"]), gist["text"]
    else:
        digest = "A red chair next to the kitchen table (3x). Detected chair 3x, table 3x."
        assert re.match(re.escape(digest) + where, gist["text"]), gist["text"]
    assert "battery" not in gist["text"]
    names = {e.name for e in map(mem.store.get_entity, entity_ids(mem)) if e}
    assert names == {"red chair", "kitchen table"}  # detections by rule + captions (LLM or rule)
    stats = mem.consolidation.stats()
    assert stats["gists_llm_text"] == (1 if mode in ("ok", "bad_json") else 0)


def entity_ids(mem: SpatioTemporalMemory) -> list[str]:
    return [row["id"] for row in mem.store.graph.query_text("MATCH (e:Entity) RETURN e.id AS id")]


def test_the_llm_runs_off_the_robot_thread_and_close_does_not_wait_for_it(
    make_memory: Any, fake_ollama: FakeOllamaServer, clock: Any, tmp_path: Path
) -> None:
    fake_ollama.set_mode("slow", delay=30.0)
    mem = llm_memory(make_memory, clock, fake_ollama.url, llm_timeout=30.0, llm_retries=2)
    episode_id = kitchen_episode(mem, clock)
    mem.flush()  # end_episode flushes first; time only what consolidation adds

    started = time.monotonic()
    assert mem.end_episode() == episode_id
    assert time.monotonic() - started < 1.0  # returned at once; the LLM is still thinking
    assert mem.active_episode_id is None
    assert mem.store.get_episode(episode_id).status == "completed"
    deadline = time.monotonic() + 10
    while fake_ollama.count("/api/chat") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_ollama.count("/api/chat") >= 1

    started = time.monotonic()
    mem.close()
    assert time.monotonic() - started < 5.0  # the pending work finished with the fallback

    reopened = make_memory(clock=clock, maintenance_interval=None)
    episode = reopened.store.get_episode(episode_id)
    assert episode.status == "completed" and episode.gist
    assert len(episode_gists(reopened, episode_id)) == 1


def test_without_consolidate_the_episode_closes_without_gists(make_memory: Any, clock: Any) -> None:
    mem = make_memory(clock=clock, maintenance_interval=None)
    episode_id = kitchen_episode(mem, clock)
    mem.end_episode(consolidate=False)
    mem.close()
    reopened = make_memory(clock=clock, maintenance_interval=None)
    episode = reopened.store.get_episode(episode_id)
    assert episode.status == "completed" and episode.gist is None
    assert episode_gists(reopened, episode_id) == []
    tiers = {o.tier for o in reopened.store.get_episode_observations(episode_id)}
    assert tiers == {"short_term"}


def test_starting_an_episode_consolidates_the_one_it_ends(make_memory: Any, clock: Any) -> None:
    mem = make_memory(clock=clock, maintenance_interval=None)
    first = kitchen_episode(mem, clock)
    mem.start_episode("next task")
    mem.end_episode(wait=True)  # jobs run in order: the first episode's is done too
    assert len(episode_gists(mem, first)) == 1


def test_long_pauses_split_an_episode_into_one_gist_per_chunk(make_memory: Any, clock: Any) -> None:
    mem = make_memory(clock=clock, maintenance_interval=None, consolidation_window=60.0)
    episode_id = mem.start_episode("two visits")
    for t in (0.0, 10.0, 20.0, 500.0, 510.0):
        mem.add(f"a shelf with books, seen at {t:.0f}", 1.0, 1.0, timestamp=t)
    mem.end_episode(wait=True)
    gists = sorted(
        (g for g in map(mem.store.get_gist, [r["id"] for r in episode_gists(mem, episode_id)])),
        key=lambda g: g.time_start,
    )
    assert [(g.time_start, g.time_end, g.source_observation_count) for g in gists] == [
        (0.0, 20.0, 3),
        (500.0, 510.0, 2),
    ]
    assert all(g.layer_name == "default" and g.extent_wkt.startswith("POLYGON") for g in gists)
    assert {o.tier for o in mem.store.get_episode_observations(episode_id)} == {"long_term"}


CHILD = textwrap.dedent(
    """
    import os, sys, time
    from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory
    config = MemoryConfig(db_path=sys.argv[1], embedding_dim=384, llm_provider="ollama",
                          ollama_host=sys.argv[2], llm_timeout=30.0, maintenance_interval=None)
    mem = SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384))
    episode = mem.start_episode("interrupted consolidation")
    for i in range(4):
        mem.add("a red chair next to the kitchen table", 1.0 + i, 2.0, layer_name="captions")
    mem.end_episode()                  # closed; its consolidation waits on the slow LLM
    time.sleep(1.0)
    print("gist before the kill:", repr(mem.store.get_episode(episode).gist))
    print(episode, flush=True)
    os._exit(9)                        # killed before any gist is written
    """
)


def test_an_episode_whose_consolidation_was_cut_short_is_consolidated_on_reopen(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.set_mode("slow", delay=60.0)
    path = tmp_path / "mem"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), fake_ollama.url],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 9, result.stderr
    *_, before, episode_id = result.stdout.strip().splitlines()
    assert before == "gist before the kill: ''"  # closed and marked pending, not written

    config = MemoryConfig(db_path=str(path), embedding_dim=384, maintenance_interval=None)
    with SpatioTemporalMemory(config=config, embedding_provider=HashingEmbedder(384)) as mem:
        # Reopening consolidates it in the background (it may be done before we look).
        deadline = time.monotonic() + 30
        while not mem.store.get_episode(episode_id).gist and time.monotonic() < deadline:
            time.sleep(0.05)
        episode = mem.store.get_episode(episode_id)
        assert episode.status == "completed" and episode.gist
        assert len(episode_gists(mem, episode_id)) == 1
