"""Child process of test_crash.py: ingests into a memory until the parent kills it (SIGKILL).

Usage: python crash_writer.py DB_PATH SEED [create]

With ``create`` the child only opens (creates) the memory, says READY and exits: the parent kills
it while it creates the memory's files. That mode uses the library's HashingEmbedder, because
creating a memory embeds nothing and loading the real model would cost seconds per kill point.

Protocol on stdout (one line each, flushed at once):
    LOADED               the model is loaded; the child now waits for "GO" on stdin (so the
                         parent can warm the next child up while it checks the last one)
    READY                the memory is open
    FLUSHING             about to call mem.flush()
    FLUSHED <id> ...     flush() returned: every id added since the last FLUSHED line is durable

Nothing else is written to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import faulthandler
import os
import random
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

COLORS = ("red", "blue", "green", "yellow", "black", "white", "orange")
THINGS = ("chair", "cup", "door", "table", "person", "box", "plant", "laptop", "bottle")
PLACES = ("door", "window", "kitchen", "sofa", "desk", "shelf", "corridor")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    # A crash of the child by itself (not the parent's SIGKILL) prints every thread's Python
    # stack to its stderr, which the test shows (one SIGSEGV at open was seen in CI, once).
    faulthandler.enable()
    db_path, seed = argv[1], int(argv[2])
    rng = random.Random(seed)
    if argv[3:] == ["create"]:
        return create(db_path)

    from emem_graph import MemoryConfig, SentenceTransformerEmbedder, SpatioTemporalMemory

    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    embedder.embed(["warm up"])  # the first call is slow; keep it out of the ingest timing
    say("LOADED")
    if sys.stdin.readline().strip() != "GO":
        return 0

    config = MemoryConfig(
        db_path=db_path,
        flush_batch_size=rng.randint(5, 20),
        flush_interval=rng.uniform(0.2, 1.0),
        # Few commits per compaction, so kills also land in optimize/cleanup/index builds.
        vector_compact_every=rng.randint(3, 10),
        vector_cleanup_after_seconds=rng.choice([0.0, 10.0]),
    )
    mem = SpatioTemporalMemory(config=config, embedding_provider=embedder)
    say("READY")
    unconfirmed: list[str] = []
    while True:
        for _ in range(rng.randint(1, 30)):
            roll = rng.random()
            if roll < 0.04:
                mem.start_episode(f"task {rng.randrange(1000)}")
            elif roll < 0.06 and mem.active_episode_id is not None:
                mem.start_episode("subtask", parent_episode_id=mem.active_episode_id)
            elif roll < 0.09:
                mem.end_episode()
            x, y = rng.uniform(-100.0, 100.0), rng.uniform(-100.0, 100.0)
            if rng.random() < 0.1:
                oid = mem.add_body_state(
                    f"battery at {rng.randrange(100)} percent", "battery", x=x, y=y
                )
            else:
                text = (
                    f"{rng.choice(COLORS)} {rng.choice(THINGS)} near "
                    f"{rng.choice(PLACES)} {rng.randrange(100000)}"
                )
                oid = mem.add(text, x, y, layer_name=rng.choice(("camera", "lidar")))
            unconfirmed.append(oid)
        say("FLUSHING")
        mem.flush()
        say("FLUSHED " + " ".join(unconfirmed))
        unconfirmed = []


def create(db_path: str) -> int:
    from emem_graph import HashingEmbedder, MemoryConfig, SpatioTemporalMemory

    embedder = HashingEmbedder(384)
    say("LOADED")
    if sys.stdin.readline().strip() != "GO":
        return 0
    config = MemoryConfig(db_path=db_path, embedding_provider="hashing")
    SpatioTemporalMemory(config=config, embedding_provider=embedder).close()
    say("READY")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
