"""Fork server for test_large_records.py: loads the library once, then per request forks a
child that opens a memory, writes one large observation, says so once flush() returned, and
waits to be killed (SIGKILL).

Protocol: the server says ``LOADED``; for each stdin line ``RUN <db> <seed> <size>`` a child
says ``FLUSHED <id> <pid>`` after flush() returned (the record is acknowledged), and the server
says ``EXIT <code>`` once that child is gone (-9: killed).
"""

from __future__ import annotations

import os
import random
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def large_text(seed: int, size: int) -> str:
    """``size`` characters of words drawn from ``seed`` (the test draws the same)."""
    rng = random.Random(seed)
    words = []
    length = 0
    while length < size:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def write_one(db_path: str, seed: int, size: int) -> None:
    from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory

    mem = SpatioTemporalMemory(
        config=MemoryConfig(db_path=db_path, maintenance_interval=None),
        embedding_provider=HashingEmbedder(384),
    )
    oid = mem.add(large_text(seed, size), float(seed % 7), 1.0, timestamp=1_790_000_000.0 + seed)
    mem.flush()
    say(f"FLUSHED {oid} {os.getpid()}")
    time.sleep(600)  # killed here


def main() -> int:
    import emem_graph.memory  # noqa: F401  (loaded once, before the forks)

    say("LOADED")
    for line in sys.stdin:
        _, db_path, seed, size = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                write_one(db_path, int(seed), int(size))
            finally:
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        say(f"EXIT {-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
