"""What this process holds at a moment: its resident memory and its open file descriptors,
read from Linux's ``/proc/self`` (the robot's-day benchmark samples them over a run)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from emem_graph.errors import BackendUnavailableError

PROC_SELF = Path("/proc/self")
DELETED = " (deleted)"
"""What Linux appends to the target of a descriptor whose file was unlinked while open."""


@dataclass(frozen=True)
class Footprint:
    """The process at one moment.

    Attributes:
        rss_bytes: resident set size (VmRSS).
        fds: open file descriptors (the one reading the descriptor table included).
        deleted_fds: descriptors whose file was deleted while they stayed open (space on disk
            the process keeps from being freed).
    """

    rss_bytes: int
    fds: int
    deleted_fds: int

    @property
    def rss_mb(self) -> float:
        """Resident set size in MB (10^6 bytes)."""
        return self.rss_bytes / 1e6


def check_available() -> None:
    """Raises BackendUnavailableError where /proc/self is not there to read (not Linux)."""
    if not (PROC_SELF / "status").is_file() or not (PROC_SELF / "fd").is_dir():
        raise BackendUnavailableError(
            "bench --day reads the process's memory and descriptors from /proc/self, which "
            "this system does not have: run it on Linux"
        )


def footprint() -> Footprint:
    """This process's resident memory and descriptors now."""
    fds = 0
    deleted = 0
    for name in os.listdir(PROC_SELF / "fd"):
        try:
            target = os.readlink(PROC_SELF / "fd" / name)
        except OSError:  # closed between the listing and the read
            continue
        fds += 1
        deleted += target.endswith(DELETED)
    return Footprint(rss_bytes=resident_bytes(), fds=fds, deleted_fds=deleted)


def resident_bytes() -> int:
    """This process's resident set size now (VmRSS; Linux reports kB, that is KiB)."""
    with open(PROC_SELF / "status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
