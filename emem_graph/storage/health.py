"""The memory's own record of damage: what was found damaged on open and what was done about it,
and the graph's high-water mark, which tells a write-ahead log that lost committed data.

Two small JSON files beside the graph, each replaced whole (written to a temporary file, then
renamed over the old one), so a reader sees the old or the new file, never half of one:

- ``health.json``: counters (``vector_rebuilds``, ``graph_losses``, ``damage_reports``) and the
  last reports (time, what, action), shown by ``emem-graph stats``.
- ``graph_mark.json``: how many observations the graph held after its last commit. Kuzu
  0.11.3 replays a damaged WAL up to the damage and drops the rest without a word (measured: a
  WAL cut in half gave back 20 of 60 flushed observations, a removed or garbled one none), so
  on open a graph holding fewer observations than the mark has lost committed data: reported.

Durability: the mark is written after each graph commit without fsync (one write of a
fixed-width record in place, ~2 us next to a commit's milliseconds). A process killed at any
point leaves the write in the page cache, so it survives. A power cut may lose the latest mark
writes: the mark then lags the graph (as long as the graph's own commits reached the disk) and
a loss may be under-reported; a power cut that loses graph commits the mark did record is
reported. Observation nodes are never deleted (archival keeps them), so the count only grows.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

from emem_graph.errors import DamagedMemoryError, StorageError

log = logging.getLogger(__name__)

HEALTH_FILE = "health.json"
MARK_FILE = "graph_mark.json"
REPORTS_KEPT = 20
"""The latest damage reports kept in health.json (the counters keep counting)."""
COUNTERS = ("vector_rebuilds", "graph_losses", "damage_reports")


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Replace ``path`` with ``value`` as JSON: temporary file, then an atomic rename."""
    _write_text(path, json.dumps(value, indent=1))


def _write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: temporary file, then an atomic rename."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


RECORD_MAX_BYTES = 4 * 1024 * 1024
"""A mark, seal, health record or rebuild note larger than this is damaged (never read whole:
a file of many GiB put there would take the robot's memory)."""


def read_json_record(path: Path) -> dict[str, Any] | None:
    """The JSON object in the small record file ``path`` (a mark, a seal, the health record, a
    rebuild note); None when missing.

    Raises:
        ValueError: anything else (unreadable, larger than RECORD_MAX_BYTES, not UTF-8, not
            JSON, nested past the parser's depth, not an object).
    """
    try:
        with path.open("rb") as record:
            data = record.read(RECORD_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(str(exc)) from exc
    if len(data) > RECORD_MAX_BYTES:
        raise ValueError(f"larger than {RECORD_MAX_BYTES:,} bytes")
    try:
        value = json.loads(data.decode("utf-8"))  # a JSONDecodeError is a ValueError
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def read_health(root: Path) -> dict[str, Any]:
    """The damage record of the memory in ``root``: every counter (0 when never reported) and
    ``reports``, the latest reports (an unreadable record reads as empty)."""
    try:
        stored = read_json_record(root / HEALTH_FILE) or {}
    except ValueError:
        stored = {}
    record: dict[str, Any] = {name: _count(stored.get(name)) for name in COUNTERS}
    reports = stored.get("reports")
    record["reports"] = (
        [r for r in reports if isinstance(r, dict)] if isinstance(reports, list) else []
    )
    return record


def report_damage(root: Path, what: str, action: str, *, counter: str | None = None) -> None:
    """Log a WARNING saying what was damaged and what was done, and count it in health.json.

    Args:
        root: the memory's directory.
        what: what was found damaged (one sentence).
        action: what was done about it (one sentence).
        counter: a counter to raise besides ``damage_reports`` (``vector_rebuilds``,
            ``graph_losses``).
    """
    log.warning("memory %s: %s; %s", root, what, action)
    record = read_health(root)
    try:
        read_json_record(root / HEALTH_FILE)
    except ValueError as exc:  # read_health read it as empty: say that its counts restart
        record["reports"].append(
            {
                "time": time.time(),
                "what": f"{HEALTH_FILE} was unreadable ({exc})",
                "action": "its counters restarted from this report",
            }
        )
    record["damage_reports"] += 1
    if counter is not None:
        record[counter] += 1
    record["reports"] = [
        *record["reports"],
        {"time": time.time(), "what": what, "action": action},
    ][-REPORTS_KEPT:]
    try:
        _write_json(root / HEALTH_FILE, record)
    except OSError as exc:  # the warning above was given; a read-only disk must not stop open
        log.warning("memory %s: the damage record could not be written: %s", root, exc)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


class GraphMark:
    """The count of observations the graph held after its last commit (graph_mark.json).

    Args:
        root: the memory's directory.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / MARK_FILE
        self.observations = 0
        self._fd: int | None = None

    def check(self, held: int) -> bool:
        """Compare the graph's observation count at open with the mark; report a loss (the
        graph holds fewer) or a damaged mark, then set the mark to ``held``.

        Args:
            held: the observations the graph holds now.

        Returns:
            Whether a readable mark was there (False: a memory from before the mark, or a
            damaged mark; the caller may look for a loss another way).
        """
        root = self.path.parent
        try:
            stored = read_json_record(self.path)
            marked = None if stored is None else stored["observations"]
            if marked is not None and (not isinstance(marked, int) or marked < 0):
                raise ValueError(f"observations={marked!r}")
        except (ValueError, KeyError) as exc:
            report_damage(
                root,
                f"the graph's high-water mark {self.path.name} is unreadable ({exc})",
                "it was written again from the graph; a loss of committed observations in this "
                "open cannot be ruled out",
            )
            marked = None
        if marked is not None and held < marked:
            report_damage(
                root,
                f"the graph holds {held} observations but {marked} were committed: its "
                "write-ahead log (graph.kuzu.wal) was damaged and Kuzu dropped the rest",
                f"{marked - held} flushed observations are lost; restore the memory's "
                "directory from a backup to get them back, or go on with what is left",
                counter="graph_losses",
            )
        self.observations = held
        try:
            # Whole and atomic once per open; then rewritten in place after each commit.
            _write_text(self.path, self._record())
            self._fd = os.open(self.path, os.O_WRONLY)
        except OSError as exc:
            log.warning("graph mark %s not written: %s", self.path, exc)
        return marked is not None

    def committed(self, added: int) -> None:
        """Raise the mark by ``added`` observations just committed to the graph: one write of
        a fixed-width record over the old one, in place (~2 us; a temporary file and a rename
        cost 1-2 ms on ext4, which flushes a file replaced by rename). The record is one
        write of under 64 bytes inside one block: a killed process cannot tear it."""
        if not added:
            return
        self.observations += added
        if self._fd is not None:
            try:
                os.pwrite(self._fd, self._record().encode(), 0)
            except OSError as exc:
                log.warning("graph mark %s not written: %s", self.path, exc)

    def close(self) -> None:
        """Release the mark's file (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _record(self) -> str:
        # Fixed width: a later, shorter count never leaves the tail of a longer one behind.
        return f'{{"observations": {self.observations:>20}}}\n'


def move_aside(path: Path) -> Path:
    """Rename a damaged file or directory to ``<name>.damaged-<UTC time>`` beside it (never
    deleted: its owner may want it). Returns the new path.

    Raises:
        StorageError: the rename failed.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    suffix = 1
    while target.exists():
        suffix += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{suffix}")
    try:
        os.replace(path, target)
    except OSError as exc:
        raise StorageError(
            f"{path} is damaged and could not be moved aside ({exc}); move it away by hand "
            "and open the memory again to rebuild it from the graph"
        ) from exc
    return target


def refuse_lost_graph(root: Path, graph_file: str, vector_dir: str) -> None:
    """Refuse to open a memory whose graph file is gone or empty (with no write-ahead log to
    rebuild it from) while its other files show it held data: Kuzu would create a new, empty
    graph in its place and the memory would go on as if it had never held anything.

    Raises:
        DamagedMemoryError: the graph, the memory's source of truth, is lost.
    """
    graph = root / graph_file
    wal = root / f"{graph_file}.wal"
    if _size(graph) or _size(wal):
        return
    try:
        mark = read_json_record(root / MARK_FILE) or {}
    except ValueError:
        mark = {}
    held_rows = any((root / vector_dir).glob("*.lance/data/*.lance"))
    if _count(mark.get("observations")) or held_rows:
        state = "missing" if not graph.exists() else "empty"
        raise DamagedMemoryError(
            f"the graph file {graph} is {state} but the memory held data (its vector table or "
            f"{MARK_FILE} say so): the graph is the memory's source of truth and cannot be "
            "rebuilt; restore the directory from a backup (nothing was changed)"
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
