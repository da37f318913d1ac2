"""The bridge's ROS 2 node: the only module of ros_bridge that imports rclpy (lazily).

``BridgeNode`` wires the plain-Python parts to ROS: every layer, position and trigger topic is a
subscription that only hands the message to ``IngestPipeline.on_message``; a rate timer (or the
trigger topic) queues ``pipeline.tick`` on the ``MemoryOwner``, the one thread that touches the
memory; every service of ``ros_bridge.services.SERVICES`` (Query only with
``services.query_service: true``) is served under the node's name
(``~/semantic_search`` is ``/emem_graph/semantic_search``) and answered by
``ServiceDispatcher.handle``. A ``MultiThreadedExecutor`` runs the callbacks, so a slow service
call never stops ingest. Consolidation at the end of an episode runs on the memory's background
worker unless the caller asks to wait. ``run`` is ``emem-graph ros --config bridge.yaml``: it
serves until SIGINT or SIGTERM, then stops the executor and flushes and closes the memory.

rclpy and the message packages come from the system's ROS 2 installation (``source
/opt/ros/<distro>/setup.bash``) and emem_interfaces from a colcon build of
``ros_bridge/interfaces/emem_interfaces``; neither is a dependency of the Python package.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

from emem_graph.errors import BackendUnavailableError, MemoryClosedError
from ros_bridge.config import BridgeConfig, load_config
from ros_bridge.messages import normalise_type
from ros_bridge.pipeline import IngestPipeline
from ros_bridge.services import SERVICES, MemoryOwner, ServiceDispatcher, ServiceSpec

if TYPE_CHECKING:
    from emem_graph.memory import SpatioTemporalMemory

log = logging.getLogger(__name__)

EXECUTOR_THREADS = 8
"""Executor threads: service calls wait on the memory's owner, so they must not take every
thread from the subscriptions."""
SHUTDOWN_TIMEOUT_S = 120.0
"""How long closing waits for the memory to flush and close."""

_ROS_HINT = (
    "source your ROS 2 installation first (e.g. `source /opt/ros/jazzy/setup.bash`); for this "
    "repository's tests, .ci/ros-env builds an environment with rclpy"
)
_INTERFACES_HINT = (
    "build ros_bridge/interfaces/emem_interfaces with colcon (`colcon build --packages-select "
    "emem_interfaces`) and `source install/setup.bash`; .ci/ros-env builds it for the tests"
)


@dataclass(frozen=True)
class _Ros:
    """The rclpy modules the node uses (imported on first use)."""

    rclpy: ModuleType
    context: ModuleType
    node: ModuleType
    executors: ModuleType
    callback_groups: ModuleType
    qos: ModuleType
    signals: ModuleType
    srv: ModuleType


_ros: _Ros | None = None
_ros_lock = threading.Lock()


def import_ros() -> _Ros:
    """Import rclpy and emem_interfaces.

    Raises:
        BackendUnavailableError: rclpy or emem_interfaces is not importable (the message says
            which, and how to get it).
    """
    global _ros
    with _ros_lock:
        if _ros is not None:
            return _ros
        try:
            rclpy = importlib.import_module("rclpy")
            modules = {
                name: importlib.import_module(f"rclpy.{name}")
                for name in ("context", "node", "executors", "callback_groups", "qos", "signals")
            }
        except ImportError as exc:
            raise BackendUnavailableError(
                f"the ROS bridge needs rclpy, ROS 2's Python client library, which is not "
                f"importable ({exc}); {_ROS_HINT}"
            ) from None
        try:
            srv = importlib.import_module("emem_interfaces.srv")
        except ImportError as exc:
            raise BackendUnavailableError(
                f"the ROS bridge needs the emem_interfaces service package, which is not "
                f"importable ({exc}); {_INTERFACES_HINT}"
            ) from None
        missing = [name for name in SERVICES if not hasattr(srv, name)]
        if missing:
            raise BackendUnavailableError(
                f"the installed emem_interfaces lacks the services {', '.join(missing)} (built "
                f"from an older ros_bridge/interfaces/emem_interfaces?); rebuild it: "
                f"{_INTERFACES_HINT}"
            )
        _ros = _Ros(rclpy=rclpy, srv=srv, **modules)
        return _ros


def message_class(type_name: str, role: str) -> type:
    """The rclpy message class of ROS type ``type_name`` (``std_msgs/msg/String`` ->
    ``std_msgs.msg.String``).

    Args:
        type_name: a ROS message type name (any form normalise_type accepts).
        role: what needs it, for the error (``layer 'objects' (topic /detections)``).

    Raises:
        BackendUnavailableError: the message package is not importable or lacks the type.
    """
    name = normalise_type(type_name)
    package, _, message = name.partition("/msg/")
    try:
        module = importlib.import_module(f"{package}.msg")
    except ImportError as exc:
        debian = package.replace("_", "-")
        raise BackendUnavailableError(
            f"{role} has type {name}, but the Python package {package} is not importable "
            f"({exc}); install it (e.g. `apt install ros-$ROS_DISTRO-{debian}`) and source "
            "ROS again, or remove that entry from the config"
        ) from None
    cls = getattr(module, message, None)
    if not isinstance(cls, type):
        raise BackendUnavailableError(
            f"{role} has type {name}, but {package}.msg has no message {message!r}"
        )
    return cls


class BridgeNode:
    """The bridge on a ROS 2 node: subscriptions, the trigger, the services, an executor.

    Args:
        config: the bridge configuration.
        memory: the memory to ingest into and serve (default: ``config.open_memory()``); the
            node owns it from now on and closes it in close().
        context: the rclpy Context to use (default: rclpy's default context); it must be
            initialised (``rclpy.init(context=...)``).
        num_threads: threads of the MultiThreadedExecutor.

    Raises:
        BackendUnavailableError: rclpy, emem_interfaces or a configured message type is missing.
    """

    def __init__(
        self,
        config: BridgeConfig,
        memory: SpatioTemporalMemory | None = None,
        *,
        context: Any = None,
        num_threads: int = EXECUTOR_THREADS,
    ) -> None:
        ros = import_ros()
        self.config = config
        opened = memory is None
        self.memory = memory if memory is not None else config.open_memory()
        self.owner = MemoryOwner(self.memory)
        try:
            self._build(ros, context, num_threads)
        except BaseException:
            if opened:
                self.owner.close()
            raise

    def _build(self, ros: _Ros, context: Any, num_threads: int) -> None:
        config = self.config
        self.dispatcher = ServiceDispatcher(self.owner, config)
        self.pipeline = IngestPipeline(self.memory, config, clock=self.now)
        roles = _topic_roles(config)
        classes = {
            topic: message_class(type_name, roles.get(topic, f"topic {topic}"))
            for topic, type_name in self.pipeline.subscriptions()
        }
        self._tick_lock = threading.Lock()
        self._tick_queued = False
        self._closed = False
        self._spin_thread: threading.Thread | None = None
        self.node: Any = ros.node.Node(config.node_name, context=context)
        self._clock = self.node.get_clock()
        self.executor: Any = ros.executors.MultiThreadedExecutor(
            num_threads=num_threads, context=context
        )

        ingest_group = ros.callback_groups.ReentrantCallbackGroup()
        service_group = ros.callback_groups.ReentrantCallbackGroup()
        timer_group = ros.callback_groups.MutuallyExclusiveCallbackGroup()
        # Best effort, keep last 10: matches reliable and best-effort publishers alike.
        qos = ros.qos.qos_profile_sensor_data
        self.subscriptions = [
            self.node.create_subscription(
                cls, topic, self._on_message_callback(topic), qos, callback_group=ingest_group
            )
            for topic, cls in classes.items()
        ]
        self.timer = None
        rate = config.trigger.rate_hz
        if rate is not None:
            self.timer = self.node.create_timer(
                1.0 / rate, self._request_tick, callback_group=timer_group
            )
        self.services = [
            self.node.create_service(
                getattr(ros.srv, spec.srv_type),
                f"~/{spec.service_name}",
                self._service_callback(spec),
                callback_group=service_group,
            )
            for spec in SERVICES.values()
            # Query (Cypher on the live memory) is advertised only when the config enables it.
            if spec.srv_type != "Query" or config.services.query_service
        ]
        self.executor.add_node(self.node)

    # --- time and names -------------------------------------------------------------------

    def now(self) -> float:
        """The node's clock (ROS time: simulation time with use_sim_time) in float seconds."""
        return float(self._clock.now().nanoseconds) * 1e-9

    def service_names(self) -> list[str]:
        """The fully qualified names of the services (``/emem_graph/semantic_search``...)."""
        return [self.node.resolve_service_name(service.srv_name) for service in self.services]

    # --- callbacks (executor threads) -----------------------------------------------------

    def _on_message_callback(self, topic: str) -> Any:
        def on_message(msg: Any, info: Any) -> None:
            try:
                if self.pipeline.on_message(topic, msg, self._receive_time(info)):
                    self._request_tick()
            except Exception:  # a callback must not take the executor down
                log.exception("message on %s could not be taken", topic)

        return on_message

    def _receive_time(self, info: Any) -> float:
        """When the middleware received the message, on the node's clock.

        The callback may run a while after the message arrived (the executor was busy): a
        message without a header is timed by the DDS reception stamp (system time), shifted
        onto the node's clock (simulation time with use_sim_time).
        """
        now = self.now()
        try:
            received_ns = int(info["received_timestamp"])
        except (TypeError, KeyError, ValueError):
            return now
        if received_ns <= 0:
            return now
        waited = time.time() - received_ns * 1e-9
        return now - waited if 0.0 <= waited < 60.0 else now

    def _request_tick(self) -> None:
        """Queue one pipeline.tick on the memory's owner, unless one is queued already (it
        will take every message that arrives before it starts)."""
        with self._tick_lock:
            if self._tick_queued or self._closed:
                return
            self._tick_queued = True
        try:
            future = self.owner.submit(self._tick)
        except MemoryClosedError:
            return
        future.add_done_callback(_log_tick_failure)

    def _tick(self, memory: SpatioTemporalMemory) -> int:
        with self._tick_lock:
            self._tick_queued = False
        return self.pipeline.tick()

    def _service_callback(self, spec: ServiceSpec) -> Any:
        def serve(request: Any, response: Any) -> Any:
            try:
                fields = self.dispatcher.handle(spec.srv_type, request)
            except Exception as exc:  # handle() never raises; belt and braces for the node
                log.exception("%s failed", spec.srv_type)
                fields = {"success": False, "error": f"{type(exc).__name__}: {exc}"}
            return _fill(spec, response, fields)

        return serve

    # --- running --------------------------------------------------------------------------

    def start(self) -> None:
        """Spin the executor on a background thread (returns at once)."""
        if self._spin_thread is not None:
            return
        self._spin_thread = threading.Thread(
            target=self._spin, name=f"{self.config.node_name}-executor", daemon=True
        )
        self._spin_thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception as exc:  # the context was shut down under us: stop quietly
            if not self._closed:
                log.error("the executor stopped: %s: %s", type(exc).__name__, exc)

    def close(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Stop the executor, let queued memory work finish, then flush and close the memory
        and destroy the node (idempotent)."""
        with self._tick_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self.executor.shutdown(timeout_sec=timeout_s)
            if self._spin_thread is not None:
                self._spin_thread.join(timeout=timeout_s)
        finally:
            try:
                self._last_tick(timeout_s)
                self.owner.close(timeout_s=timeout_s)
            finally:
                self.node.destroy_node()

    def _last_tick(self, timeout_s: float) -> None:
        # With a rate trigger, messages that arrived since the last tick would be lost at
        # shutdown: store them now. A topic trigger stores only what its triggers took: the
        # messages still held for a pose.
        rate = self.config.trigger.rate_hz is not None
        try:
            stored = self.owner.call(
                lambda memory: (
                    self.pipeline.tick(final=True) if rate else self.pipeline.store_held()
                ),
                timeout_s=timeout_s,
            )
        except Exception as exc:  # closing goes on: the memory is flushed and closed below
            log.warning("the last tick at shutdown failed: %s: %s", type(exc).__name__, exc)
            return
        if stored:
            log.info("stored %d observations of the last trigger period at shutdown", stored)

    def __enter__(self) -> BridgeNode:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def run(
    config_path: str | Path,
    *,
    ready: threading.Event | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve the bridge described by ``config_path`` until SIGINT or SIGTERM.

    Prints the topics and services at start and the ingest counters at the end.

    Args:
        config_path: the bridge's YAML file.
        ready: set once the node serves (for a caller that runs this on another thread).
        stop: set it to stop the bridge; SIGINT and SIGTERM set it when run() is called on
            the main thread.

    Returns:
        0 after a clean shutdown.

    Raises:
        BridgeConfigError: the config is invalid.
        BackendUnavailableError: rclpy, emem_interfaces or a message type is missing.
    """
    config = load_config(config_path)
    ros = import_ros()
    stop = stop if stop is not None else threading.Event()
    context = ros.context.Context()
    ros.rclpy.init(context=context, signal_handler_options=ros.signals.SignalHandlerOptions.NO)
    previous: dict[int, Any] = {}
    on_main = threading.current_thread() is threading.main_thread()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        print(f"{signal.Signals(signum).name}: stopping the bridge", file=sys.stderr, flush=True)
        stop.set()

    bridge: BridgeNode | None = None
    try:
        if on_main:
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, on_signal)
        bridge = BridgeNode(config, context=context)
        bridge.start()
        _print_banner(bridge)
        if ready is not None:
            ready.set()
        while not stop.wait(0.5):
            pass
    finally:
        try:
            if bridge is not None:
                start = time.monotonic()
                bridge.close()
                print(
                    f"memory flushed and closed in {time.monotonic() - start:.1f} s; "
                    f"ingest: {_describe_stats(bridge.pipeline.stats.as_dict())}",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            ros.rclpy.try_shutdown(context=context)
            for number, handler in previous.items():
                signal.signal(number, handler)
    return 0


# --- helpers ---------------------------------------------------------------------------------


def _topic_roles(config: BridgeConfig) -> dict[str, str]:
    roles: dict[str, list[str]] = {}
    for layer in config.layers:
        roles.setdefault(layer.topic, []).append(f"layer {layer.name!r}")
    if config.position is not None:
        roles.setdefault(config.position.topic, []).append("the position")
    if config.trigger.topic is not None:
        roles.setdefault(config.trigger.topic, []).append("the trigger")
    return {topic: f"{' and '.join(names)} (topic {topic})" for topic, names in roles.items()}


def _fill(spec: ServiceSpec, response: Any, fields: dict[str, Any]) -> Any:
    """Copy the dispatcher's fields into the rclpy response; a value rclpy refuses turns the
    response into a failure rather than an exception out of the callback."""
    try:
        for name in spec.response_fields:
            if name in fields:
                setattr(response, name, fields[name])
    except (TypeError, ValueError, AssertionError) as exc:
        log.error("%s: the response could not be filled: %s", spec.srv_type, exc)
        if "success" in spec.response_fields:
            response.success = False
        if "error" in spec.response_fields:
            response.error = f"the response could not be filled: {exc}"
    return response


def _log_tick_failure(future: Future[int]) -> None:
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None and not isinstance(exc, MemoryClosedError):
        log.error("ingest tick failed: %s: %s", type(exc).__name__, exc, exc_info=exc)


def _describe_stats(stats: dict[str, int]) -> str:
    return ", ".join(f"{name} {value}" for name, value in stats.items())


def _print_banner(bridge: BridgeNode) -> None:
    config = bridge.config
    trigger = config.trigger
    when = f"{trigger.rate_hz:g} Hz" if trigger.rate_hz is not None else f"on {trigger.topic}"
    lines = [
        f"emem_graph bridge {bridge.node.get_fully_qualified_name()}: memory {config.memory_dir}",
        f"  ingest ({when}): "
        + ", ".join(f"{layer.name} <- {layer.topic}" for layer in config.layers),
    ]
    if config.position is not None:
        lines.append(f"  position <- {config.position.topic} ({config.position.type})")
    lines.append(f"  services: {', '.join(bridge.service_names())}")
    lines.append("  Ctrl-C (SIGINT) or SIGTERM stops it and closes the memory")
    print("\n".join(lines), file=sys.stderr, flush=True)
