"""Degraded dependencies: an LLM server that is slow, failing, answering garbage or absent; an
embedding model that is not there; a memory directory that cannot be written.

The LLM is the real ``ollama`` client against FakeOllamaServer (tests/fake_ollama.py, the one
fake: no Ollama server runs here). Consolidation must fall back to its built-in gist and say so
(counters and a log warning), within the configured timeout, and never leave an episode active or
unconsolidated. A missing model is a clear error at construction, before anything is written. A
read-only directory is a clear error at open with the memory left intact.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaServer, unreachable_url

from emem_graph import MemoryConfig, SpatioTemporalMemory
from emem_graph.consolidation.engine import call_timeout
from emem_graph.errors import BackendUnavailableError, EmemGraphError

LLM_TIMEOUT = 0.5
TEXTS = (
    "a red chair by the kitchen door",
    "2 chair, 1 person",
    "a person sitting on the red chair",
    "a blue cup on the kitchen table",
)


def llm_memory(path: Path, host: str, minilm: Any) -> SpatioTemporalMemory:
    config = MemoryConfig(
        db_path=str(path),
        llm_provider="ollama",
        ollama_host=host,
        llm_timeout=LLM_TIMEOUT,
        llm_retries=1,
        llm_retry_backoff=0.01,
        maintenance_interval=None,
    )
    return SpatioTemporalMemory(config=config, embedding_provider=minilm)


def end_an_episode(mem: SpatioTemporalMemory) -> tuple[str, float]:
    """An episode of four observations, ended and consolidated; returns its id and how long
    end_episode(wait=True) took."""
    mem.start_episode("patrol kitchen")
    for k, text in enumerate(TEXTS):
        mem.add(text, 1.0 + 0.2 * k, 2.0, layer_name="camera")
    started = time.monotonic()
    episode_id = mem.end_episode(wait=True)
    assert episode_id is not None
    return episode_id, time.monotonic() - started


def consolidated(mem: SpatioTemporalMemory, episode_id: str) -> list[str]:
    """The episode's gist texts, after checking it is closed and summarized."""
    store = mem.store
    episode = store.get_episode(episode_id)
    assert episode is not None and episode.status == "completed"
    assert episode.gist, "the episode has no summary"
    assert store.active_episode_ids() == []
    rows = store.graph.query_text(
        "MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation) WHERE g.episode_id = $e "
        "RETURN DISTINCT g.text AS text",
        {"e": episode_id},
    )
    assert rows, "no gist was written"
    return [r["text"] for r in rows]


def test_a_working_llm_writes_the_gist(tmp_path: Path, minilm, fake_ollama) -> None:
    """The control case: the same setup with a healthy server uses the LLM's text."""
    fake_ollama.reply = "The robot saw a red chair and a person in the kitchen."
    fake_ollama.json_reply = json.dumps({"entities": []})
    mem = llm_memory(tmp_path / "mem", fake_ollama.url, minilm)
    try:
        episode_id, _ = end_an_episode(mem)
        assert any("red chair and a person" in t for t in consolidated(mem, episode_id))
        stats = mem.consolidation.stats()
        assert stats["gists_llm_text"] >= 1 and stats["llm_failures"] == 0
    finally:
        mem.close()


@contextlib.contextmanager
def llm_server(mode: str) -> Iterator[str]:
    """The URL of an LLM server behaving as ``mode``: slow, error500, malformed or absent."""
    if mode == "absent":
        yield unreachable_url()
        return
    server = FakeOllamaServer(reply="The LLM's summary.", json_reply="{}").start()
    server.set_mode(mode, delay=LLM_TIMEOUT * 8) if mode == "slow" else server.set_mode(mode)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("mode", ["slow", "error500", "malformed", "absent"])
def test_a_degraded_llm_gives_the_fallback_gist_in_bounded_time_and_says_so(
    tmp_path: Path, minilm, mode: str, caplog, summary
) -> None:
    caplog.set_level(logging.WARNING)
    with llm_server(mode) as url:
        mem = llm_memory(tmp_path / "mem", url, minilm)
        try:
            episode_id, took = end_an_episode(mem)
            texts = consolidated(mem, episode_id)
            stats = mem.consolidation.stats()
        finally:
            mem.close()
    assert "The LLM's summary." not in texts
    assert stats["gists_fallback_text"] >= 1, stats
    assert stats["llm_failures"] >= 1, stats
    assert stats["worker_failures"] == 0, stats
    # Said so: a warning names the LLM failure and the fallback.
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("fall" in w.lower() for w in warnings), warnings
    # One guarded call costs at most call_timeout; a failure skips the LLM for the rest of the
    # job, so the whole consolidation stays within about two calls.
    bound = 2 * call_timeout(MemoryConfig(llm_timeout=LLM_TIMEOUT, llm_retries=1)) + 5.0
    assert took < bound, f"{mode}: consolidation took {took:.1f} s (bound {bound:.1f} s)"
    line = (
        f"degraded LLM ({mode}): fallback gist in {took:.2f} s (bound {bound:.1f} s), "
        f"{stats['llm_failures']} LLM failure(s) reported, episode closed"
    )
    print(line)
    summary.append(line)


def test_close_does_not_wait_for_a_hung_llm(tmp_path: Path, minilm) -> None:
    with llm_server("slow") as url:
        mem = llm_memory(tmp_path / "mem", url, minilm)
        mem.start_episode("patrol")
        for k, text in enumerate(TEXTS):
            mem.add(text, float(k), 0.0)
        mem.end_episode(wait=False)
        started = time.monotonic()
        mem.close()
        took = time.monotonic() - started
    assert took < call_timeout(MemoryConfig(llm_timeout=LLM_TIMEOUT, llm_retries=1)) + 5.0
    reopened = SpatioTemporalMemory(
        config=MemoryConfig(db_path=str(tmp_path / "mem"), maintenance_interval=None),
        embedding_provider=minilm,
    )
    try:
        assert reopened.store.active_episode_ids() == []
        gists = reopened.store.graph.query_text("MATCH (g:Gist) RETURN count(g) AS n")[0]["n"]
        assert gists >= 1
    finally:
        reopened.close()


# --- the embedding model ---------------------------------------------------------------------


def test_a_missing_embedding_model_is_a_clear_error_before_anything_is_written(
    tmp_path: Path,
) -> None:
    db = tmp_path / "mem"
    missing = tmp_path / "no-such-model"
    config = MemoryConfig(db_path=str(db), embedding_checkpoint=str(missing))
    with pytest.raises(BackendUnavailableError) as caught:
        SpatioTemporalMemory(config=config)
    assert "no-such-model" in str(caught.value)
    assert not db.exists(), "a memory directory was created although the model is missing"


def test_an_absent_ollama_embedder_is_a_clear_error_at_construction(tmp_path: Path) -> None:
    db = tmp_path / "mem"
    config = MemoryConfig(
        db_path=str(db),
        embedding_provider="ollama",
        ollama_host=unreachable_url(),
        ollama_timeout=1.0,
    )
    started = time.monotonic()
    with pytest.raises(BackendUnavailableError) as caught:
        SpatioTemporalMemory(config=config)
    assert time.monotonic() - started < 30.0
    assert "ollama" in str(caught.value).lower() or "127.0.0.1" in str(caught.value)
    assert not db.exists()


# --- a read-only memory directory ------------------------------------------------------------


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[str]:
    """Make ``directory`` unwritable; yields how. As an ordinary user chmod does it; root
    ignores permission bits, so there a read-only bind mount of the directory does (skipped
    when mounting is not permitted)."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [directory, *directory.rglob("*")]}
        for path in modes:
            path.chmod(modes[path] & ~0o222)
        try:
            yield "chmod a-w"
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    bound = subprocess.run(
        ["mount", "--bind", str(directory), str(directory)], capture_output=True, text=True
    )
    if bound.returncode != 0:
        pytest.skip(f"running as root and cannot bind-mount read-only: {bound.stderr.strip()}")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(directory)], capture_output=True, text=True
        )
        if remount.returncode != 0:
            pytest.skip(f"running as root and cannot remount read-only: {remount.stderr}")
        yield "read-only bind mount (root ignores chmod)"
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def test_a_read_only_directory_is_a_clear_error_and_nothing_is_corrupted(
    tmp_path: Path, minilm, summary
) -> None:
    db = tmp_path / "mem"
    config = MemoryConfig(db_path=str(db), maintenance_interval=None)
    with SpatioTemporalMemory(config=config, embedding_provider=minilm) as mem:
        ids = [mem.add(text, float(k), 1.0) for k, text in enumerate(TEXTS)]
    before = sorted((p.relative_to(db), p.stat().st_size) for p in db.rglob("*") if p.is_file())

    with read_only(db) as how:
        with pytest.raises(EmemGraphError) as caught:
            SpatioTemporalMemory(config=config, embedding_provider=minilm)
        message = str(caught.value)
        assert str(db) in message or "read-only" in message.lower(), message
        # The explore surface still reads it.
        from emem_graph.explore.cypher import run_cypher

        rows = run_cypher(db, "MATCH (o:Observation) RETURN count(o) AS n").rows
        assert rows == [[len(ids)]]
    after = sorted((p.relative_to(db), p.stat().st_size) for p in db.rglob("*") if p.is_file())
    assert after == before, "files changed although the directory was read-only"

    with SpatioTemporalMemory(config=config, embedding_provider=minilm) as mem:
        assert [o.id for o in mem.store.get_observations(ids)] == ids
        assert "red chair" in mem.semantic_search("red chair by the door")
    refused = type(caught.value).__name__
    line = f"read-only directory ({how}): open refused with {refused}, files unchanged"
    print(line)
    summary.append(line)
