"""Child process of tests/test_determinism.py: open a copy of a memory, ask the demo's questions
twice and print the answers as JSON (one list per pass).

usage: python determinism_probe.py MEMORY_DIR NOW {quiet|busy}

"busy": the vector table is compacted (fragments merged, the scalar and full-text indexes
built) before the first pass, and compacted again on another thread during the second.
"""

from __future__ import annotations

import json
import sys
import threading

from emem_graph import MemoryConfig, SpatioTemporalMemory
from emem_graph.evals.demo import demo_questions
from emem_graph.ingest.embeddings import SentenceTransformerEmbedder


def main() -> None:
    directory, now, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    config = MemoryConfig(db_path=directory, maintenance_interval=None)
    memory = SpatioTemporalMemory(
        config=config,
        embedding_provider=SentenceTransformerEmbedder(),
        get_current_time=lambda: now,
    )
    try:
        passes = []
        for attempt in range(2):
            busy = None
            if mode == "busy" and attempt == 0:
                memory.store.vectors.compact()
            elif mode == "busy":
                busy = threading.Thread(target=memory.store.vectors.compact)
                busy.start()
            passes.append(
                [memory.dispatch_tool_call(name, args) for name, args in demo_questions()]
            )
            if busy is not None:
                busy.join()
        print(json.dumps(passes))
    finally:
        memory.close()


if __name__ == "__main__":
    main()
