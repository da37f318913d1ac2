"""MEMENTO (Kwon et al. 2025): one memory of every acquisition instruction, a layer per scene;
each utilisation request is asked in its scene's layer."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.retrieval_dev.lines import is_summary_line, line_texts, matched
from benchmarks.retrieval_dev.okapi import OkapiBM25
from benchmarks.retrieval_dev.ranking import Answer
from emem_graph import SpatioTemporalMemory

if TYPE_CHECKING:
    from emem_graph.ingest.embeddings import EmbeddingProvider

CLOCK = 1_700_100_000.0
STAGES = ("single_memory_utilization_stage", "joint_memory_utilization_stage")


def _episodes(data: Path, stage: str) -> list[dict[str, Any]]:
    with gzip.open(data / f"memento_dev_{stage}.json.gz", "rt") as handle:
        episodes: list[dict[str, Any]] = json.load(handle)["episodes"]
    return episodes


def _text(episode: dict[str, Any]) -> str:
    return " ".join(str(episode["instruction"]).split())


def _requests(data: Path) -> Iterator[tuple[str, str, str, frozenset[str]]]:
    """(kind, scene, request, gold ids) of every utilisation episode."""
    for stage in STAGES:
        kind = "single" if stage.startswith("single") else "joint"
        for episode in _episodes(data, stage):
            related = episode["metadata"]["related_episode_id"]
            gold = related if isinstance(related, list) else [related]
            yield kind, episode["scene_id"], _text(episode), frozenset(str(g) for g in gold)


class MementoSet:
    """The acquisition memories of the dev files under ``data``, stored per the protocol."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.memories = _episodes(data, "memory_acquisition_stage")
        self.requests = list(_requests(data))
        self.stored: dict[str, dict[str, list[str]]] = {}
        """Per scene: text -> ids of the episodes that stored it."""
        for episode in self.memories:
            by_text = self.stored.setdefault(episode["scene_id"], {})
            by_text.setdefault(_text(episode), []).append(str(episode["episode_id"]))

    @contextmanager
    def memory(self, embedder: EmbeddingProvider) -> Iterator[SpatioTemporalMemory]:
        """A memory holding every acquisition instruction (closed and removed on exit)."""
        with tempfile.TemporaryDirectory(prefix="emem-memento-") as directory:
            memory = SpatioTemporalMemory(
                str(Path(directory) / "memory"),
                embedding_provider=embedder,
                get_current_time=lambda: CLOCK,
            )
            try:
                for i, episode in enumerate(self.memories):
                    memory.add(
                        _text(episode),
                        x=float(i % 20),
                        y=float(i // 20),
                        timestamp=1_700_000_000 + i,
                        layer_name=f"scene_{episode['scene_id']}",
                    )
                memory.catch_up()
                yield memory
            finally:
                memory.close()

    def ask(self, memory: SpatioTemporalMemory) -> list[Answer]:
        """Every request asked of ``memory``."""
        answers = []
        for kind, scene, request, gold in self.requests:
            text = memory.semantic_search(request, n_results=10, layer=f"scene_{scene}")
            stored = self.stored[scene]
            lines = tuple(frozenset(matched(t, stored) or ()) for t in line_texts(text))
            summaries = sum(is_summary_line(line) for line in text.splitlines()[:10])
            answers.append(Answer(scene, request, gold, lines, summaries, kind, text))
        return answers

    def ask_bm25(self) -> list[Answer]:
        """Every request ranked by Okapi BM25 over its scene's instructions."""
        answers = []
        indexes: dict[str, tuple[OkapiBM25, list[str]]] = {}
        for scene, by_text in self.stored.items():
            texts = list(by_text)
            indexes[scene] = (OkapiBM25(texts), texts)
        for kind, scene, request, gold in self.requests:
            index, texts = indexes[scene]
            lines = tuple(frozenset(self.stored[scene][texts[i]]) for i in index.rank(request, 10))
            answers.append(Answer(scene, request, gold, lines, 0, kind))
        return answers
