"""A memory left by a writer that SIGKILLed itself (a module of its own: test files import it
by name, as they do sim_clock)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


def run_killed_writer(program: str, path: Path, *args: object) -> Path:
    """Run ``program`` (Python source that writes a memory at ``path`` and SIGKILLs itself) in a
    child process; check that it died of that kill and left a write-ahead log. Returns ``path``."""
    run = subprocess.run(
        [sys.executable, "-c", program, str(path), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert (path / "graph.kuzu.wal").stat().st_size > 0
    return path
