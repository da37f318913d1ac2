"""Bag replay: a recorded run (ROS 1 or ROS 2, sqlite3 or MCAP) through the bridge's pipeline.

The bag's layer, position and trigger topics are read in time order with rosbags' ``AnyReader``,
each message is deserialized and given to :class:`~ros_bridge.pipeline.IngestPipeline` with its
bag time, and the trigger runs on bag time, so the memory built offline is the memory the live
node would have built. No ROS installation is needed.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from emem_graph.errors import BackendUnavailableError, InvalidInputError
from ros_bridge.config import BridgeConfig
from ros_bridge.messages import normalise_type
from ros_bridge.pipeline import IngestPipeline, IngestStats

if TYPE_CHECKING:
    from rosbags.highlevel import AnyReader

    from emem_graph.memory import SpatioTemporalMemory

__all__ = [
    "BagError",
    "DamagedBagError",
    "ReplaySummary",
    "bag_storage",
    "read_rate",
    "replay_bag",
    "require_rosbags",
]

log = logging.getLogger(__name__)


class BagError(InvalidInputError):
    """A bag cannot be replayed: no bag at the path, not a readable bag, a configured topic
    missing from it or recorded with another message type, or damage found while reading."""


class DamagedBagError(BagError):
    """Reading stopped partway through a bag at damage (a truncated or corrupt record).

    Every message read before the damage was replayed, and the memory was flushed: ``summary``
    says what was read and stored up to there.
    """

    def __init__(self, message: str, summary: ReplaySummary) -> None:
        super().__init__(message)
        self.summary = summary


@dataclass
class ReplaySummary:
    """What a replay read and stored."""

    bag: Path
    storage: str
    """``sqlite3``, ``mcap`` or ``rosbag1``."""
    memory_dir: str
    topics: dict[str, int]
    """Messages read per topic."""
    stats: IngestStats
    """The pipeline's counters."""
    start: float | None = None
    """Bag time of the first message read (float seconds)."""
    end: float | None = None
    elapsed_s: float = 0.0
    """Wall seconds of reading, ingesting and the final flush of the memory."""
    flush_s: float = 0.0
    """Of elapsed_s, the seconds of the final flush (embedding and writing what was queued)."""
    missing_topics: list[str] = field(default_factory=list)
    """Configured topics the bag does not have (replayed anyway with allow_missing)."""
    undecodable: int = 0
    """Messages rosbags could not deserialize (skipped)."""
    pose_outliers: int = 0
    """Position samples dropped because their stamp lay far from every other sample's."""
    pose_clock_jumps: int = 0
    """Times the position samples' clock jumped (a reset) and the replay followed it."""

    @property
    def messages(self) -> int:
        """Messages read from the bag."""
        return sum(self.topics.values())

    @property
    def observations(self) -> int:
        """Observations stored: perception and body state."""
        return self.stats.stored + self.stats.body_states

    @property
    def messages_per_s(self) -> float:
        """Messages replayed per wall second."""
        return self.messages / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def observations_per_s(self) -> float:
        """Observations stored per wall second."""
        return self.observations / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def bag_seconds(self) -> float:
        """Seconds of bag time replayed."""
        return (self.end - self.start) if self.start is not None and self.end is not None else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-able values."""
        return {
            "bag": str(self.bag),
            "storage": self.storage,
            "memory_dir": self.memory_dir,
            "topics": dict(self.topics),
            "messages": self.messages,
            "observations": self.observations,
            **self.stats.as_dict(),
            "undecodable": self.undecodable,
            "pose_outliers": self.pose_outliers,
            "pose_clock_jumps": self.pose_clock_jumps,
            "missing_topics": list(self.missing_topics),
            "start": self.start,
            "end": self.end,
            "bag_seconds": self.bag_seconds,
            "elapsed_s": self.elapsed_s,
            "flush_s": self.flush_s,
            "messages_per_s": self.messages_per_s,
            "observations_per_s": self.observations_per_s,
        }

    def describe(self) -> str:
        """A few lines for a person: what was read, stored and dropped, and how fast."""
        s = self.stats
        lines = [
            f"Replayed {self.bag} ({self.storage}, {self.bag_seconds:.1f} s of bag time) "
            f"into {self.memory_dir}",
            f"  read {self.messages} messages: "
            + ", ".join(f"{topic} {n}" for topic, n in self.topics.items()),
            f"  stored {self.observations} observations ({s.stored} perception, "
            f"{s.body_states} body state) on {s.triggers} triggers",
            f"  dropped: {s.dropped_no_pose} no pose, {s.dropped_stale} stale, "
            f"{s.dropped_empty} empty, {s.dropped_error} unusable; {s.deduplicated} deduplicated, "
            f"{s.superseded} superseded by a newer message",
            f"  {self.elapsed_s:.2f} s (final flush {self.flush_s:.2f} s): "
            f"{self.messages_per_s:,.0f} messages/s, {self.observations_per_s:,.1f} observations/s",
        ]
        if self.undecodable:
            lines.append(f"  {self.undecodable} messages could not be deserialized (skipped)")
        if self.pose_outliers or self.pose_clock_jumps:
            lines.append(
                f"  position: {self.pose_outliers} samples dropped as far in time from the "
                f"others (bad stamps), {self.pose_clock_jumps} clock jumps followed"
            )
        if self.missing_topics:
            lines.append("  not in the bag: " + ", ".join(self.missing_topics))
        return "\n".join(lines)


def require_rosbags() -> None:
    """Check that rosbags, the library that reads and writes bags, is installed.

    Raises:
        BackendUnavailableError: it is not.
    """
    try:
        import rosbags  # noqa: F401
    except ImportError as exc:  # pragma: no cover - rosbags is a dependency
        raise BackendUnavailableError(
            "reading and writing bags needs rosbags (an emem-graph dependency): "
            "pip install rosbags==0.11.9"
        ) from exc


def bag_storage(bag: Path) -> str:
    """``rosbag1`` for a ``.bag`` file, else the ROS 2 storage (``mcap`` or ``sqlite3``)."""
    if bag.suffix == ".bag":
        return "rosbag1"
    if bag.is_dir() and any(bag.glob("*.mcap")):
        return "mcap"
    return "sqlite3"


def _cause(exc: BaseException) -> str:
    """What the reader raised, on one short line (rosbags quotes whole message definitions)."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= 200 else text[:199] + "…"


def _open_reader(bag: Path) -> AnyReader:
    require_rosbags()
    from rosbags.highlevel import AnyReader

    try:
        exists = bag.exists()
    except (OSError, ValueError) as exc:  # a name too long, a NUL in it
        raise BagError(f"{bag} cannot be a bag path: {_cause(exc)}") from None
    if not exists:
        raise BagError(f"no bag at {bag} (a ROS 2 bag directory or a ROS 1 .bag file)")
    try:
        reader = AnyReader([bag])
        reader.open()
    except Exception as exc:
        # rosbags parses the bag's bytes: a damaged file makes it raise its own errors but also
        # UnicodeDecodeError, KeyError, sqlite errors... Each means "not a readable bag".
        raise BagError(f"{bag} is not a readable ROS bag: {_cause(exc)}") from None
    return reader


def _close_reader(reader: AnyReader) -> None:
    try:
        reader.close()
    except Exception as exc:  # reading is over; a damaged file must not hide the replay's outcome
        log.warning("closing the bag reader failed: %s", _cause(exc))


def _read(reader: AnyReader, connections: list[Any]) -> Iterator[tuple[Any, int, Any]]:
    """The reader's messages of ``connections`` in time order.

    Raises:
        _Damage: the reader failed partway (a truncated or corrupt record).
    """
    messages = reader.messages(connections=connections)
    while True:
        try:
            item = next(messages)
        except StopIteration:
            return
        except Exception as exc:  # any error parsing the bag's bytes is damage (see _open_reader)
            raise _Damage(exc) from exc
        yield item


class _Damage(Exception):
    """The reader failed partway through the bag (wraps what it raised)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(_cause(cause))
        self.cause = cause


def _select(
    reader: AnyReader, bag: Path, wanted: list[tuple[str, str]], allow_missing: bool
) -> tuple[list[Any], list[str]]:
    """The reader's connections of the wanted topics, and the topics it lacks.

    Raises:
        BagError: a topic recorded with another type; missing topics (unless allow_missing);
            none of the topics in the bag.
    """
    by_topic: dict[str, list[Any]] = {}
    for connection in reader.connections:
        by_topic.setdefault(connection.topic, []).append(connection)
    selected: list[Any] = []
    missing: list[str] = []
    for topic, type_name in wanted:
        connections = by_topic.get(topic)
        if not connections:
            missing.append(topic)
            continue
        for connection in connections:
            recorded = normalise_type(connection.msgtype)
            if recorded != normalise_type(type_name):
                raise BagError(
                    f"{bag}: topic {topic} was recorded as {recorded}, "
                    f"but the config says {type_name}"
                )
        selected.extend(connections)
    available = ", ".join(f"{t} ({c[0].msgtype})" for t, c in sorted(by_topic.items()))
    if not selected:
        raise BagError(
            f"{bag} has none of the configured topics ({', '.join(t for t, _ in wanted)}); "
            f"it has: {available or 'no topics'}"
        )
    if missing and not allow_missing:
        raise BagError(
            f"{bag} has no topic {', '.join(missing)} (configured); it has: {available}. "
            "Fix the topic names, or replay anyway with allow_missing (--allow-missing)"
        )
    return selected, missing


def replay_bag(
    bag: Path | str,
    config: BridgeConfig,
    memory: SpatioTemporalMemory | None = None,
    progress: bool = True,
    *,
    allow_missing: bool = False,
    embedding_provider: Any = None,
) -> ReplaySummary:
    """Replay ``bag`` through the bridge's ingest pipeline into a memory.

    Messages of the configured topics are read in bag-time order; each is given to the
    pipeline with its bag receive time (the pipeline prefers the header stamp). A rate trigger
    fires whenever a period of bag time has passed, a topic trigger on each trigger message,
    and once more at the end for the last pending messages.

    Args:
        bag: A ROS 2 bag directory (sqlite3 or MCAP) or a ROS 1 ``.bag`` file.
        config: The bridge configuration (layers, position, trigger, memory).
        memory: The memory to write; default: open ``config.memory_dir`` (with the memory's
            clock on bag time, and batches of 256 unless the config sets flush_batch_size)
            and close it at the end.
        progress: Show a progress bar.
        allow_missing: Replay even when configured topics are absent (they are listed in the
            summary); without it that is an error.
        embedding_provider: Embedder of the memory opened here (default: the configured one).

    Returns:
        The summary: messages read, observations stored, drops, elapsed time and rates.

    Raises:
        BagError: no bag at the path, not a bag, a topic missing or of another type.
        DamagedBagError: damage partway through the bag (a BagError): the messages before it
            were replayed and flushed; its ``summary`` says what was stored.
        BackendUnavailableError: rosbags is not installed.
    """
    bag = Path(bag)
    reader = _open_reader(bag)
    now = [0.0]
    opened_here = memory is None
    try:
        connections, missing = _select(reader, bag, _subscriptions(config), allow_missing)
        if memory is None:
            # Offline nobody waits for an observation to be searchable: write big batches.
            batching = {} if "flush_batch_size" in config.memory else {"flush_batch_size": 256}
            memory = config.open_memory(
                embedding_provider=embedding_provider,
                get_current_time=lambda: now[0],
                **batching,
            )
        summary = ReplaySummary(
            bag=bag,
            storage=bag_storage(bag),
            memory_dir=str(memory.config.db_path),
            topics={},
            stats=IngestStats(),
            missing_topics=missing,
        )
        try:
            damage = _replay(reader, connections, config, memory, now, summary, progress)
        finally:
            if opened_here:
                memory.close()
    finally:
        _close_reader(reader)
    if damage is not None:
        raise DamagedBagError(
            f"{bag} is damaged: reading stopped after {summary.messages} messages "
            f"({damage}); those were replayed and {summary.observations} observations are "
            f"stored in {summary.memory_dir}; to read past the damage, salvage the bag first "
            "(mcap recover, sqlite3 .recover)",
            summary,
        )
    return summary


def _subscriptions(config: BridgeConfig) -> list[tuple[str, str]]:
    """The topics IngestPipeline.subscriptions() gives for ``config``, known before a memory is
    opened (so a bag that does not fit fails before the embedding model loads)."""
    topics: dict[str, str] = {}
    for layer in config.layers:
        topics.setdefault(layer.topic, layer.type)
    if config.position is not None:
        topics.setdefault(config.position.topic, config.position.type)
    if config.trigger.topic is not None:
        type_name = config.topic_type(config.trigger.topic)
        topics.setdefault(config.trigger.topic, type_name or "std_msgs/msg/Empty")
    return list(topics.items())


def _replay(
    reader: AnyReader,
    connections: list[Any],
    config: BridgeConfig,
    memory: SpatioTemporalMemory,
    now: list[float],
    summary: ReplaySummary,
    progress: bool,
) -> str | None:
    """Replay the messages of ``connections`` and flush the memory.

    Returns:
        None, or what the reader raised at damage partway (the messages before it were
        replayed, the last trigger run and the memory flushed all the same).
    """
    pipeline = IngestPipeline(memory, config, clock=lambda: now[0])
    summary.stats = pipeline.stats
    rate_trigger = config.trigger.rate_hz is not None
    counts = dict.fromkeys(dict.fromkeys(c.topic for c in connections), 0)
    total = sum(max(c.msgcount, 0) for c in connections)
    started = time.perf_counter()
    damage: str | None = None
    with tqdm(total=total, unit="msg", desc="replay", disable=not progress) as bar:
        try:
            for connection, t_ns, raw in _read(reader, connections):
                t = t_ns * 1e-9
                now[0] = t
                if summary.start is None:
                    summary.start = t
                summary.end = t
                counts[connection.topic] += 1
                bar.update()
                try:
                    msg = reader.deserialize(raw, connection.msgtype)
                except Exception as exc:  # bytes rosbags cannot decode (see _open_reader)
                    summary.undecodable += 1
                    log.warning(
                        "%s message at %.3f not deserialized: %s", connection.topic, t, _cause(exc)
                    )
                    fired = False
                else:
                    fired = pipeline.on_message(connection.topic, msg, receive_time=t)
                # A trigger at bag time t sees every message received up to and including t.
                if fired or (rate_trigger and pipeline.due(t)):
                    pipeline.tick(t)
        except _Damage as exc:  # what was read stays: the last trigger and the flush run below
            damage = str(exc)
        if rate_trigger and summary.end is not None:
            pipeline.tick(summary.end, final=True)  # the last trigger the live node would have run
        elif not rate_trigger:
            pipeline.store_held()  # taken by a trigger, waiting for a pose that came no more
    flushing = time.perf_counter()
    memory.flush()
    summary.flush_s = time.perf_counter() - flushing
    summary.elapsed_s = time.perf_counter() - started
    summary.topics = counts
    if pipeline.poses is not None:
        summary.pose_outliers = pipeline.poses.outliers
        summary.pose_clock_jumps = pipeline.poses.clock_jumps
    return damage


def read_rate(bag: Path | str, topics: BridgeConfig | Iterable[str] | None = None) -> float:
    """Messages per second of a rosbags-only read and deserialize of ``bag`` (the baseline of
    the replay throughput): the topics of a bridge config, the given topics, or all.

    Raises:
        BagError: no bag at the path, not a bag, or damage partway through it.
    """
    bag = Path(bag)
    reader = _open_reader(bag)
    try:
        names: set[str] | None
        if topics is None:
            names = None
        elif isinstance(topics, BridgeConfig):
            names = {topic for topic, _ in _subscriptions(topics)}
        else:
            names = set(topics)
        connections = [c for c in reader.connections if names is None or c.topic in names]
        n = 0
        started = time.perf_counter()
        if connections:
            try:
                for connection, _, raw in _read(reader, connections):
                    with contextlib.suppress(Exception):  # undecodable: read all the same
                        reader.deserialize(raw, connection.msgtype)
                    n += 1
            except _Damage as exc:
                raise BagError(f"{bag} is damaged after {n} messages: {exc}") from None
        elapsed = time.perf_counter() - started
    finally:
        _close_reader(reader)
    return n / elapsed if elapsed > 0 else 0.0
