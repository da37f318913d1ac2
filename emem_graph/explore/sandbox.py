"""The Cypher sandbox: a developer's read-only statement runs in a child process that cannot
write files, read outside the memory, reach the network or change anything, with a wall-clock
timeout and a memory bound enforced from outside.

Layers, each refusing on its own (the text allow-list of explore.guard comes first):

- the child opens the graph with Kuzu's ``read_only=True`` and a bounded buffer pool: Kuzu
  refuses every write to the memory;
- Kuzu's own plan of each statement must hold reading operators only (storage.statement_runner
  plan_refusal): COPY ... TO, EXPORT, settings, ATTACH and file-reading functions are refused;
- before Kuzu starts a thread, the child restricts itself with Linux Landlock: read access
  beneath the memory directory only, no file or directory made, written, removed or renamed
  anywhere, no TCP bind or connect (ABI >= 4), no signals or abstract sockets out of the
  sandbox (ABI >= 6); ``PR_SET_NO_NEW_PRIVS``; ``RLIMIT_FSIZE=0`` (no byte written to any
  file, also without Landlock) and ``RLIMIT_CORE=0``;
- the parent kills the child at the timeout (a statement Kuzu cannot interrupt, e.g. binding
  ``range()``, included) and when its resident memory passes ``max_memory_mb`` (polled every
  20 ms): QueryTimeoutError, QueryResourceError. The next statement starts a fresh child.

Rows come back as JSON with tagged values (explore/sandbox_wire.py; never pickle: the parent
trusts nothing the child sends) and are decoded to the Python values Kuzu returns (datetime,
date, timedelta, UUID, Decimal, bytes, nodes as dicts...). The Landlock calls are
explore/landlock.py.

This module is imported in the child with a bare ``emem_graph`` package (the child needs only
storage.graph; the full package takes seconds to import): keep its top-level imports light.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from emem_graph.errors import (
    DatabaseInUseError,
    DatabaseLockedError,
    InvalidInputError,
    QueryResourceError,
    QueryTimeoutError,
    StorageError,
)
from emem_graph.explore.landlock import landlock_abi, restrict_self
from emem_graph.explore.sandbox_wire import (
    decode_value,
    encode_value,
    error_document,
    error_from,
    send,
)
from emem_graph.resources import read_cypher
from emem_graph.storage.graph import GraphDB, load_engine
from emem_graph.storage.graph_engine import resolve_engine
from emem_graph.storage.open_registry import held_read_write
from emem_graph.storage.statement_runner import CypherResult

log = logging.getLogger(__name__)

DEFAULT_MAX_MEMORY_MB = 1024
"""The most resident memory a sandboxed statement's process may take (MB)."""
MIN_MAX_MEMORY_MB = 256
"""Below this the child cannot even start (Python, Kuzu and pyarrow: ~150 MB measured)."""
STARTUP_TIMEOUT_S = 120.0
"""How long the child may take to import and open the graph (seconds, a loaded machine)."""
KILL_GRACE_S = 0.25
"""The child answers a timed-out statement itself (Kuzu's timeout) or is killed this long after."""
POLL_S = 0.02
"""How often the parent reads the child's resident memory."""
DATA_BASE_MB = 512
"""RLIMIT_DATA of the child beyond Kuzu's reservation and max_memory_mb (its own ~470 MB)."""

_BOOTSTRAP = (
    "import sys, types; package = types.ModuleType('emem_graph'); "
    "package.__path__ = [sys.argv[1]]; sys.modules['emem_graph'] = package; "
    "from emem_graph.explore.sandbox import child_main; child_main(sys.argv[2:])"
)
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_warned = False


# --- the layers ------------------------------------------------------------------------------


def sandbox_layers() -> dict[str, bool]:
    """Which layers the sandbox applies on this machine, by name (all but ``landlock`` and
    ``landlock_network`` are always on; ``memory_bound`` needs /proc)."""
    abi = landlock_abi()
    return {
        "text_allow_list": True,
        "read_only_engine": True,
        "plan_check": True,
        "landlock_files": abi >= 1,
        "landlock_network": abi >= 4,
        "no_new_privs": sys.platform.startswith("linux"),
        "no_file_writes_rlimit": True,
        "timeout_kill": True,
        "memory_bound": Path("/proc/self/status").is_file(),
    }


# --- the child -------------------------------------------------------------------------------


def child_main(argv: list[str]) -> None:
    """The child: ``GRAPH_PATH ROOT BUFFER_POOL_MB ENGINE_CHECKS MAX_MEMORY_MB RESERVE``; one
    JSON request a line on stdin, one JSON answer a line on stdout."""
    graph_path, root, buffer_pool_mb, engine_checks = (
        Path(argv[0]),
        Path(argv[1]),
        int(argv[2]),
        argv[3] == "1",
    )
    max_memory_mb, reserve = int(argv[4]), int(argv[5])
    out = sys.stdout
    # No byte to any file (pipes are not files), no core dump; EFBIG instead of a signal.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The heap bound that needs no /proc: Kuzu's buffer-pool reservation (``reserve`` bytes of
    # address space), ~500 MB of Python, Kuzu and pyarrow (measured), then max_memory_mb; an
    # allocation past it fails (std::bad_alloc: an error, not a crash).
    data = reserve + ((DATA_BASE_MB + max_memory_mb) << 20)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_DATA, (data, data))
    # What the child reads outside the memory is read now, before Landlock: the schema and the
    # query ensure_schema runs (read_cypher caches them).
    read_cypher("schema", "graph")
    read_cypher("queries", "get_memory_info")
    try:
        load_engine(resolve_engine())  # its native module lies outside what Landlock lets in
        abi = restrict_self(root)
        graph = GraphDB(
            graph_path, read_only=True, buffer_pool_mb=buffer_pool_mb, max_db_size=reserve
        )
    except DatabaseLockedError:
        send(out, error_document(DatabaseLockedError.held_elsewhere(root)))
        return
    except BaseException as exc:
        send(out, error_document(exc))
        return
    try:
        graph.ensure_schema({})
    except BaseException as exc:
        send(out, error_document(exc))
        graph.close()
        return
    send(out, {"ready": {"landlock_abi": abi}})
    for line in sys.stdin:
        try:
            request = json.loads(line)
            result = graph.run_statement(
                request["cypher"],
                {key: decode_value(value) for key, value in request["params"].items()},
                limit=int(request["limit"]),
                timeout_s=float(request["timeout_s"]),
                max_path_depth=request.get("max_path_depth"),
                check_plan=engine_checks,
            )
            answer: dict[str, Any] = {
                "result": {
                    "columns": result.columns,
                    "rows": [[encode_value(value) for value in row] for row in result.rows],
                    "truncated": result.truncated,
                }
            }
        except BaseException as exc:
            answer = error_document(exc)
        send(out, answer)
    graph.close()


# --- the parent ------------------------------------------------------------------------------


class CypherSandbox:
    """One child process serving read-only statements on one memory directory; reusable for
    many statements (a shell session), respawned after it was killed.

    Args:
        directory: the memory's directory.
        max_memory_mb: kill a statement's process above this resident memory (MB).
        engine_checks: Kuzu's plan check in the child (tests turn it off to show the OS layer
            alone).

    Raises:
        InvalidInputError: no memory in ``directory``, or a bound out of range.
        DatabaseLockedError: another process holds the memory read-write.
        SchemaVersionError, StorageError: the graph cannot be read.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
        engine_checks: bool = True,
    ) -> None:
        from emem_graph.explore.readonly import graph_path_of

        if not (isinstance(max_memory_mb, int) and max_memory_mb >= MIN_MAX_MEMORY_MB):
            raise InvalidInputError(
                f"the memory bound must be at least {MIN_MAX_MEMORY_MB} MB, not {max_memory_mb!r}"
            )
        self.root = Path(directory).resolve()
        self.graph_path = graph_path_of(self.root)
        if held_read_write(self.graph_path):
            # The child is another process: Kuzu's lock would refuse it with a message about
            # "another process", which would mislead the caller holding the memory right here.
            raise DatabaseInUseError(
                f"the memory {self.root} is open read-write in this process (a "
                "SpatioTemporalMemory): a sandboxed reader is another process and Kuzu lets "
                "none in meanwhile; query it through that instance (query_graph on "
                "memory.store.graph) or close() it first"
            )
        self.max_memory_mb = max_memory_mb
        self.engine_checks = engine_checks
        self.peak_memory_mb = 0.0
        self.landlock_abi = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._stderr_tail = b""
        self._start()

    # --- public ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The child's process id (None between a kill and the next statement)."""
        return self._process.pid if self._process is not None else None

    def run(
        self,
        cypher: str,
        params: dict[str, Any] | None = None,
        *,
        limit: int,
        timeout_s: float,
        max_path_depth: int | None = None,
    ) -> CypherResult:
        """Run one statement (checked here by the text allow-list first) in the child.

        Raises:
            ReadOnlyQueryError: refused by a layer; nothing was written.
            QueryTimeoutError: no answer within ``timeout_s`` (the child was killed).
            QueryResourceError: the child passed ``max_memory_mb`` (it was killed).
            InvalidInputError: a bad statement, parameter, limit or timeout.
        """
        from emem_graph.explore.statement import check_statement

        given = check_statement(cypher, params, limit=limit, timeout_s=timeout_s)
        if self._process is None or self._process.poll() is not None:
            self._start()
        request = {
            "cypher": cypher,
            "params": {key: encode_value(value) for key, value in given.items()},
            "limit": limit,
            "timeout_s": timeout_s,
            "max_path_depth": max_path_depth,
        }
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            self._died("before the statement")
        answer = self._answer(timeout_s + KILL_GRACE_S, timeout_s=timeout_s)
        if "error" in answer:
            raise error_from(answer["error"])
        body = answer["result"]
        return CypherResult(
            columns=[str(name) for name in body["columns"]],
            rows=[[decode_value(value) for value in row] for row in body["rows"]],
            truncated=bool(body["truncated"]),
        )

    def close(self) -> None:
        """End the child (idempotent)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            assert process.stdin is not None
            process.stdin.close()
        try:
            process.wait(2.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> CypherSandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- internals ------------------------------------------------------------------------

    def _start(self) -> None:
        global _warned
        buffer_pool_mb = max(64, self.max_memory_mb // 4)
        self._buffer = b""
        self._stderr_tail = b""
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _BOOTSTRAP,
                _PACKAGE_DIR,
                str(self.graph_path),
                str(self.root),
                str(buffer_pool_mb),
                "1" if self.engine_checks else "0",
                str(self.max_memory_mb),
                str(_reservation(self.graph_path)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        threading.Thread(
            target=self._drain_stderr, args=(self._process,), daemon=True, name="emem-sandbox-err"
        ).start()
        ready = self._answer(STARTUP_TIMEOUT_S, timeout_s=None)
        if "error" in ready:
            self.close()
            raise error_from(ready["error"])
        self.landlock_abi = int(ready["ready"]["landlock_abi"])
        if self.landlock_abi < 1 and not _warned:
            _warned = True
            log.warning(
                "Landlock is not available on this system: the Cypher sandbox goes on with Kuzu's "
                "read-only mode, the plan check, RLIMIT_FSIZE=0 and the time and memory bounds"
            )

    def _drain_stderr(self, process: subprocess.Popen[bytes]) -> None:
        stream = process.stderr
        if stream is None:
            return
        with contextlib.suppress(OSError, ValueError):
            descriptor = stream.fileno()
            while chunk := os.read(descriptor, 4096):
                self._stderr_tail = (self._stderr_tail + chunk)[-2000:]

    def _answer(self, wait_s: float, *, timeout_s: float | None) -> dict[str, Any]:
        """The child's next answer line, within ``wait_s`` seconds and ``max_memory_mb``."""
        process = self._process
        assert process is not None and process.stdout is not None
        descriptor = process.stdout.fileno()
        deadline = time.monotonic() + wait_s
        limit_bytes = max(self.max_memory_mb, 64) << 20
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                if timeout_s is None:
                    raise StorageError(
                        f"the Cypher sandbox did not start within {wait_s:g} s; try again"
                    )
                raise QueryTimeoutError(
                    f"the query ran longer than {timeout_s:g} s and was stopped; narrow it "
                    "(LIMIT, a WHERE on an indexed id) or give a longer timeout"
                )
            readable, _, _ = select.select([descriptor], [], [], min(POLL_S, left))
            if readable:
                chunk = os.read(descriptor, 1 << 20)
                if not chunk:
                    self._died("while running the statement")
                self._buffer += chunk
                if len(self._buffer) > limit_bytes:
                    self._kill()
                    raise QueryResourceError(
                        f"the query's result passed {self.max_memory_mb} MB and was stopped; "
                        "return fewer or smaller rows (LIMIT, fewer columns)"
                    )
            rss = _resident_mb(process.pid)
            self.peak_memory_mb = max(self.peak_memory_mb, rss)
            if rss > self.max_memory_mb:
                self._kill()
                raise QueryResourceError(
                    f"the query needed more than {self.max_memory_mb} MB of memory and was "
                    f"stopped at {rss:.0f} MB; narrow it (LIMIT, smaller range() or lists) or "
                    "give a larger --max-memory-mb"
                )
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            document = json.loads(line)
        except ValueError:
            self._kill()
            raise StorageError("the Cypher sandbox answered garbage; it was stopped") from None
        if not isinstance(document, dict):
            self._kill()
            raise StorageError("the Cypher sandbox answered garbage; it was stopped")
        return document

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _died(self, when: str) -> None:
        process = self._process
        code = process.wait() if process is not None else None
        self._kill()
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        tail = self._stderr_tail.decode(errors="replace").strip().splitlines()[-3:]
        raise StorageError(
            f"the Cypher sandbox process ended {when} ({how}); nothing was written"
            + (f": {' / '.join(tail)}" if tail else "")
        )


def _reservation(graph_path: Path) -> int:
    """The address space Kuzu may reserve for the graph's buffer pool (max_db_size): a power of
    two at least twice the graph's files, at least 1 GB."""
    size = sum(
        path.stat().st_size
        for path in (graph_path, graph_path.with_name(graph_path.name + ".wal"))
        if path.is_file()
    )
    reserve = 1 << 30
    while reserve < 2 * size:
        reserve <<= 1
    return reserve


def _resident_mb(pid: int) -> float:
    """The resident memory of process ``pid`` in MB (0 where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


__all__ = [
    "DEFAULT_MAX_MEMORY_MB",
    "CypherSandbox",
    "sandbox_layers",
]
