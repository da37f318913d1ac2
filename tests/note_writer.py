"""Child process of test_acknowledged_notes.py: stores notes until the parent kills it (SIGKILL).

Usage: python note_writer.py DB_PATH DOOR

DOOR is ``dispatch`` (``memory.dispatch_tool_call("store_specific_memory", ...)``, as a planner
calls it) or ``method`` (the facade's ``memory.store_specific_memory``). The memory has the
default flush settings and the library's HashingEmbedder.

Protocol on stdout (one line each, flushed at once):
    READY                the memory is open; the child reads one note a line on stdin
    <answer>             the answer to storing that note, printed as soon as it is returned

Nothing else is written to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    db_path, door = argv[1], argv[2]
    from emem_graph import SpatioTemporalMemory
    from emem_graph.ingest.embeddings import HashingEmbedder

    memory = SpatioTemporalMemory(db_path, embedding_provider=HashingEmbedder(384))
    say("READY")
    for line in sys.stdin:
        note = line.rstrip("\n")
        if door == "dispatch":
            answer = memory.dispatch_tool_call(
                "store_specific_memory", {"content": note, "x": 1.0, "y": 2.0}
            )
        else:
            try:
                answer = memory.store_specific_memory(note, x=1.0, y=2.0)
            except Exception as exc:  # the parent shows it: the note was not acknowledged
                answer = f"Error: {type(exc).__name__}: {exc}"
        say(" ".join(answer.split()))
    memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
