"""Score emem_graph (and Okapi BM25) on the MEMENTO and LoCoMo files under a given path.

Usage: python -m benchmarks.retrieval_dev --data PATH [--embedder NAME] [--cache DIR]
       [--answers FILE.json] [--only memento|locomo]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from benchmarks.retrieval_dev import locomo
from benchmarks.retrieval_dev.embedder_cache import DiskCachedEmbedder
from benchmarks.retrieval_dev.memento import MementoSet
from benchmarks.retrieval_dev.ranking import Answer, locomo_figures, memento_figures


def _row(name: str, figures: dict[str, float]) -> str:
    cells = "  ".join(
        f"{key} {value:.0f}" if key.startswith("summaries") else f"{key} {value:.3f}"
        for key, value in figures.items()
    )
    return f"{name:<28} {cells}"


def main(argv: Sequence[str] | None = None) -> int:
    """Build the memories, ask every request, print the protocol's figures."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval_dev")
    parser.add_argument("--data", type=Path, required=True, help="the retrieval-dev folder")
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2", help="sentence-transformers")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "emem-retrieval-dev-cache",
        help="where computed embeddings are kept between runs (outside the repository)",
    )
    parser.add_argument("--answers", type=Path, help="write every answer to this JSON file")
    parser.add_argument("--only", choices=("memento", "locomo"))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from emem_graph.ingest.embeddings import SentenceTransformerEmbedder

    embedder = DiskCachedEmbedder(
        SentenceTransformerEmbedder(args.embedder), args.cache, args.embedder
    )
    kept: dict[str, list[Answer]] = {}
    try:
        if args.only in (None, "memento"):
            dataset = MementoSet(args.data)
            with dataset.memory(embedder) as memory:
                kept["memento"] = dataset.ask(memory)
            print(_row("MEMENTO, emem_graph", memento_figures(kept["memento"])))
            print(_row("MEMENTO, BM25", memento_figures(dataset.ask_bm25())))
        if args.only in (None, "locomo"):
            answers: list[Answer] = []
            baseline: list[Answer] = []
            for conversation in locomo.conversations(args.data):
                with locomo.memory_of(conversation, embedder) as memory:
                    answers.extend(locomo.ask(conversation, memory))
                baseline.extend(locomo.ask_bm25(conversation))
                embedder.save()
            kept["locomo"] = answers
            print(_row("LoCoMo, emem_graph", locomo_figures(answers)))
            print(_row("LoCoMo, BM25", locomo_figures(baseline)))
    finally:
        embedder.save()
    if args.answers is not None:
        serialisable = {
            name: [
                {**asdict(a), "gold": sorted(a.gold), "lines": [sorted(ids) for ids in a.lines]}
                for a in answers_of
            ]
            for name, answers_of in kept.items()
        }
        args.answers.write_text(json.dumps(serialisable, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
