"""Give memory freed after a bulk read back to the system.

Opening a large memory reads every observation (the observation index) and every observation
vector (the vector sketch) in batches. What those batches held is freed, but the allocators keep
it: Arrow's pool keeps its pages for reads to come, and the C library's malloc keeps what the
graph engine's and LanceDB's native threads freed in per-thread arenas. At 1M observations the
C library held ~185 MB after the sketch had loaded (measured with the issue-23 resident bench);
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
