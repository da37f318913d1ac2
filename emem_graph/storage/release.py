"""Give memory freed after a bulk read back to the system.

Opening a large memory reads every observation (the observation index) and every observation
vector (the vector sketch) in batches. What those batches held is freed, but the allocators keep
it: Arrow's pool keeps its pages for reads to come, and the C library's malloc keeps what the
graph engine's and LanceDB's native threads freed in per-thread arenas. At 1M observations the
C library held ~185 MB after the sketch had loaded (measured with `bench/resident.py`);
``malloc_trim`` hands it back. Both calls only return free pages: nothing in use moves.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable

import pyarrow as pa


def release_free_memory() -> None:
    """Return the free pages of Arrow's pool and of the C library's malloc to the system (the
    latter on Linux with glibc; elsewhere only Arrow's)."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where there is none (macOS, musl, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


M_ARENA_MAX = -8
"""glibc's mallopt parameter for the most malloc arenas the process creates."""


def limit_malloc_arenas(most: int) -> bool:
    """Let the C library's malloc create at most ``most`` arenas from now on (glibc on Linux;
    elsewhere nothing). Returns whether the limit was set.

    LanceDB's and the graph engine's native threads each take an arena of their own, and
    what they free in one is not reused by the others: a table appended to in small commits
    all day grew by about 8 KB a row this way (30,000 rows, compacted every 50 commits, Python's
    own heap flat), and by about 1 KB a row with two arenas. The setting is the process's,
    not one memory's; arenas created before it are kept.
    """
    if most <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, most))
