"""Scratch work that must not outlive the process doing it: its directories and child processes.

A scratch directory is made with an owner file naming this process (id and start time). While
a block runs under ``unwind_on_stop_signals``, SIGTERM and SIGINT unwind it, so its ``finally``
clauses remove the directory before the process ends as the signal would have ended it. A
directory left by a process killed outright (SIGKILL, a power cut) is removed by the next
``remove_stale_scratch`` of its parent directory, once its owner file proves it is a scratch
directory of that kind and its process is gone. A child started by ``run_child`` is killed
when the block unwinds, and dies with its parent however the parent ends (it calls
``die_with_parent`` where the kernel cannot do it).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

OWNER_FILE = "scratch-owner.json"
"""In a scratch directory: the process that made it, and the kind of directory it is."""

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that unwind a block under ``unwind_on_stop_signals``."""

PARENT_POLL_S = 0.5
"""How often a child checks that its parent lives, where the kernel cannot tell it."""

PARENT_ENV = "EMEM_GRAPH_PARENT_PID"
"""Set by ``run_child`` for its child: the process whose end ends the child."""

_MAX_OWNER_FILE = 4096
_PR_SET_PDEATHSIG = 1
_PR_GET_PDEATHSIG = 2


def make_scratch(parent: Path, prefix: str, kind: str) -> Path:
    """A new directory ``parent/PREFIX<random>`` holding the owner file of this process.

    Args:
        parent: where to make it (exists).
        prefix: the name's beginning, e.g. ``.robot_mem_lb.migrate-``.
        kind: what the directory is; ``remove_stale_scratch`` removes only this kind.
    """
    work = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    owner = {"kind": kind, "directory": work.name, "pid": os.getpid(), "started": _start_of_self()}
    (work / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return work


def remove_stale_scratch(parent: Path, name: re.Pattern[str], kind: str) -> list[str]:
    """Remove the scratch directories in ``parent`` whose process is gone.

    A directory is removed only when it is provably one of them: its whole name matches
    ``name``, it is a directory (not a link) of this user, its owner file is a plain file of
    ``kind`` naming this very directory, and the process it names no longer runs (on Linux: no
    live process with that id and start time; where that cannot be told, it is kept).

    Returns:
        The names of the directories removed.
    """
    removed: list[str] = []
    try:
        entries = sorted(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if name.fullmatch(entry.name) and _owner_gone(entry, kind):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


class _Stopped(BaseException):
    """Raised in the main thread by a stop signal; a BaseException, so that no ``except
    Exception`` on the way out swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _StopState:
    """A stop signal as the handler of ``unwind_on_stop_signals`` sees it (main thread)."""

    def __init__(self) -> None:
        self.active = False
        self.reset()

    def reset(self) -> None:
        """No signal seen, no child being started."""
        self.stopping = False
        self.holding = 0
        """Nonzero while a child is being started: a signal then waits (it would leave a
        started child that nothing kills)."""
        self.pending: int | None = None

    def handle(self, signum: int, _frame: object) -> None:
        if self.stopping:  # a second signal must not cut the cleanup short
            return
        if self.holding:
            self.pending = signum
            return
        self.stopping = True
        raise _Stopped(signum)

    def release(self) -> None:
        """End a hold; a signal that came meanwhile is raised now."""
        self.holding -= 1
        if not self.holding and self.pending is not None and not self.stopping:
            self.stopping = True
            raise _Stopped(self.pending)


_STATE = _StopState()


@contextlib.contextmanager
def unwind_on_stop_signals(stopped: Callable[[str], BaseException]) -> Iterator[None]:
    """Make SIGTERM and SIGINT unwind the block (its ``finally`` clauses run; a child of
    ``run_child`` is killed on the way out), then deliver the signal again to the handler it had
    before, which ends the process as it would have without the block.

    The handlers are set only for the block, and only in the main thread (elsewhere nothing is
    set: a killed process's directory is left to ``remove_stale_scratch``). A second signal
    while the block unwinds is ignored, so that it cannot cut the cleanup short.

    Args:
        stopped: the exception to raise, given the signal's name, when the previous handler
            returns instead of ending the process (a handler that only records the signal).
    """
    if threading.current_thread() is not threading.main_thread() or _STATE.active:
        yield
        return
    previous: dict[signal.Signals, Any] = {}
    _STATE.reset()
    _STATE.active = True
    try:
        for sig in STOP_SIGNALS:
            handler = signal.getsignal(sig)
            if handler is not None:  # None: set outside Python, it could not be put back
                previous[sig] = handler
                signal.signal(sig, _STATE.handle)
        yield
    except _Stopped as caught:
        _restore(previous)
        signal.raise_signal(caught.signum)
        raise stopped(signal.Signals(caught.signum).name) from None
    finally:
        # A signal from here on is held, then given to the handler it finds put back.
        _STATE.holding += 1
        _restore(previous)
        _STATE.active = False
        if _STATE.pending is not None and not _STATE.stopping:
            signal.raise_signal(_STATE.pending)


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    previous.clear()


def run_child(
    command: list[str], *, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True)`` for a child that must not
    outlive this process: killed when a stop signal unwinds the caller (the signal waits while
    the child is being started, so that none is left unkilled), and ended by the kernel when
    this process ends however it ends (Linux: PR_SET_PDEATHSIG set before the child's program
    starts; elsewhere the child calls ``die_with_parent``).

    Raises:
        subprocess.TimeoutExpired: the child ran past ``timeout`` (it is killed).
    """
    main = threading.current_thread() is threading.main_thread()
    env = {**env, PARENT_ENV: str(os.getpid())}
    if main:
        _STATE.holding += 1
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            # Safe with threads: the child calls one C function, found in the parent.
            preexec_fn=_bind_to_parent(),
        )
    except BaseException:
        if main:
            _STATE.holding -= 1
        raise
    try:
        if main:
            _STATE.release()
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _bind_to_parent() -> Callable[[], None] | None:
    """What the child runs between fork and exec: PR_SET_PDEATHSIG (Linux), None elsewhere.
    The foreign function is looked up here, in the parent, so the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def bind() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the line above
            os._exit(1)

    return bind


def die_with_parent() -> None:
    """In a child of ``run_child``: end this process when its parent ends, where the kernel does
    not already (no PR_SET_PDEATHSIG: not Linux). A daemon thread watches for the process being
    handed to another parent. Does nothing in a process not started by ``run_child``."""
    try:
        parent = int(os.environ.pop(PARENT_ENV))
    except (KeyError, ValueError):
        return
    if os.getppid() != parent:
        os._exit(1)
    if _kernel_watches():
        return

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="emem-graph-parent-watch", daemon=True).start()


def _kernel_watches() -> bool:
    """Whether the kernel kills this process when its parent ends (PR_SET_PDEATHSIG is set)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        set_to = ctypes.c_int(0)
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return bool(prctl(_PR_GET_PDEATHSIG, ctypes.byref(set_to), 0, 0, 0) == 0 and set_to.value)
    except (OSError, AttributeError):
        return False


def _owner_gone(entry: Path, kind: str) -> bool:
    """Whether ``entry`` is a scratch directory of ``kind`` whose process is provably gone."""
    owner_file = entry / OWNER_FILE
    try:
        directory, marker = entry.lstat(), owner_file.lstat()
        mine = not hasattr(os, "getuid") or directory.st_uid == os.getuid()
        if not (mine and stat.S_ISDIR(directory.st_mode) and stat.S_ISREG(marker.st_mode)):
            return False
        if marker.st_size > _MAX_OWNER_FILE:
            return False
        owner = json.loads(owner_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(owner, dict) or owner.get("kind") != kind:
        return False
    pid, started = owner.get("pid"), owner.get("started")
    if owner.get("directory") != entry.name or type(pid) is not int or pid <= 0:
        return False
    return not _may_run(pid, started if type(started) is int else None)


def _may_run(pid: int, started: int | None) -> bool:
    """Whether process ``pid``, started at ``started`` (clock ticks since boot, from /proc), may
    still run: True unless it is provably gone."""
    if Path("/proc/self/stat").is_file():
        try:
            state, start = _proc_stat(pid)
        except FileNotFoundError:
            return False
        except (OSError, ValueError, IndexError):
            return True
        # A zombie has exited; another start time is another process that reused the id.
        return state not in ("Z", "X") and (started is None or start == started)
    if os.name != "posix":
        return True  # no harmless probe here (os.kill would end the process)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _start_of_self() -> int | None:
    try:
        return _proc_stat(os.getpid())[1]
    except (OSError, ValueError, IndexError):
        return None


def _proc_stat(pid: int) -> tuple[str, int]:
    """(state, start time) of process ``pid`` from /proc/PID/stat."""
    text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    return fields[0], int(fields[19])
