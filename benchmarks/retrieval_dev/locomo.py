"""LoCoMo (Maharana et al. 2024): one memory per conversation, every turn an observation;
questions of categories 1-4 with evidence turns are asked of it."""

from __future__ import annotations

import gzip
import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.retrieval_dev.lines import line_texts, matched
from benchmarks.retrieval_dev.okapi import OkapiBM25
from benchmarks.retrieval_dev.ranking import Answer
from emem_graph import SpatioTemporalMemory

if TYPE_CHECKING:
    from emem_graph.ingest.embeddings import EmbeddingProvider

_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Turn:
    """One stored turn: its dialogue id, text as stored, and time."""

    dia_id: str
    text: str
    timestamp: float


@dataclass(frozen=True)
class Conversation:
    """One conversation's turns and its scored questions (question, evidence ids)."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[tuple[str, frozenset[str]], ...]


def _normal_id(raw: str) -> str:
    match = _EVIDENCE.fullmatch(raw.strip())
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else raw.strip()


def _conversation(sample: dict[str, Any]) -> Conversation:
    talk = sample["conversation"]
    sessions = sorted(int(m.group(1)) for key in talk if (m := _SESSION.match(key)))
    turns = []
    for number in sessions:
        start = datetime.strptime(talk[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
        t0 = start.replace(tzinfo=timezone.utc).timestamp()
        for k, turn in enumerate(talk[f"session_{number}"]):
            text = f"{turn['speaker']}: {' '.join(str(turn['text']).split())}"
            turns.append(Turn(_normal_id(turn["dia_id"]), text, t0 + k))
    known = {t.dia_id for t in turns}
    questions = []
    for qa in sample["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        # "D8:6; D9:17" and "D9:1 D4:4" name several turns in one entry.
        ids = {
            f"D{int(session)}:{int(turn)}"
            for raw in qa.get("evidence", [])
            for session, turn in _EVIDENCE.findall(str(raw))
        }
        evidence = frozenset(ids & known)
        if evidence:
            questions.append((str(qa["question"]), evidence))
    return Conversation(str(sample["sample_id"]), tuple(turns), tuple(questions))


def conversations(data: Path) -> list[Conversation]:
    """The dev file's conversations, in file order."""
    with gzip.open(data / "locomo_dev.json.gz", "rt") as handle:
        samples: list[dict[str, Any]] = json.load(handle)
    return [_conversation(sample) for sample in samples]


def _stored(conversation: Conversation) -> dict[str, list[str]]:
    by_text: dict[str, list[str]] = {}
    for turn in conversation.turns:
        by_text.setdefault(turn.text, []).append(turn.dia_id)
    return by_text


@contextmanager
def memory_of(
    conversation: Conversation, embedder: EmbeddingProvider
) -> Iterator[SpatioTemporalMemory]:
    """A fresh memory holding the conversation, its background work done (removed on exit)."""
    now = max(t.timestamp for t in conversation.turns) + 60.0
    with tempfile.TemporaryDirectory(prefix="emem-locomo-") as directory:
        memory = SpatioTemporalMemory(
            str(Path(directory) / "memory"),
            embedding_provider=embedder,
            get_current_time=lambda: now,
        )
        try:
            for turn in conversation.turns:
                memory.add(turn.text, 0.0, 0.0, timestamp=turn.timestamp, layer_name="dialogue")
            memory.catch_up()
            yield memory
        finally:
            memory.close()


def ask(conversation: Conversation, memory: SpatioTemporalMemory) -> list[Answer]:
    """Every scored question of ``conversation`` asked of ``memory``."""
    stored = _stored(conversation)
    answers = []
    for question, evidence in conversation.questions:
        text = memory.semantic_search(question, n_results=10)
        lines = tuple(frozenset(matched(t, stored) or ()) for t in line_texts(text))
        summaries = sum(not ids for ids in lines[:10])
        answers.append(
            Answer(conversation.sample_id, question, evidence, lines, summaries, "question", text)
        )
    return answers


def ask_bm25(conversation: Conversation) -> list[Answer]:
    """Every scored question ranked by Okapi BM25 over the conversation's turn texts."""
    stored = _stored(conversation)
    texts = list(stored)
    index = OkapiBM25(texts)
    return [
        Answer(
            conversation.sample_id,
            question,
            evidence,
            tuple(frozenset(stored[texts[i]]) for i in index.rank(question, 10)),
        )
        for question, evidence in conversation.questions
    ]
