"""Linux Landlock from Python: the running kernel's Landlock ABI, and a process restricting
itself to reading beneath one directory (no other file-system access, no TCP, no signals or
abstract sockets out of the domain where the ABI has them), with ``PR_SET_NO_NEW_PRIVS``.

The Cypher sandbox's child (explore/sandbox.py) calls restrict_self before Kuzu starts a
thread; the module imports only the standard library, since that child imports it with a
bare ``emem_graph`` package.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_PR_SET_NO_NEW_PRIVS = 38
_LANDLOCK_RULE_PATH_BENEATH = 1
_ACCESS_FS_READ = (1 << 2) | (1 << 3)  # READ_FILE | READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def restrict_self(readable: Path) -> int:
    """Landlock this process (and every thread it starts later): read beneath ``readable``,
    nothing else on the file system, no TCP; returns the ABI used (0: not available).

    Landlock binds the calling thread only: call it before any other thread exists.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    abi = landlock_abi()
    if abi < 1:
        return 0
    # Every file-system right the ABI knows is handled (so denied unless a rule allows it).
    handled_fs = (1 << 13) - 1  # ABI 1: EXECUTE ... MAKE_SYM
    handled_fs |= (1 << 13) if abi >= 2 else 0  # REFER
    handled_fs |= (1 << 14) if abi >= 3 else 0  # TRUNCATE
    handled_fs |= (1 << 15) if abi >= 5 else 0  # IOCTL_DEV
    attr = _RulesetAttr(handled_fs, 0b11 if abi >= 4 else 0, 0b11 if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(
        _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        directory = os.open(readable, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = _PathBeneath(_ACCESS_FS_READ, directory)
            if (
                libc.syscall(
                    _SYS_LANDLOCK_ADD_RULE,
                    ctypes.c_int(ruleset),
                    ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                )
                != 0
            ):
                raise OSError(ctypes.get_errno(), "landlock_add_rule failed")
        finally:
            os.close(directory)
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)):
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def landlock_abi() -> int:
    """The Landlock ABI version of the running kernel; 0 where there is none (old kernel, not
    Linux, disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(
            _SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1)
        )
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))
