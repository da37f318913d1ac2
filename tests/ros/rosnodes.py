"""Helpers of the ROS 2 suite: a second rclpy participant, polling, result_json records.

Imported only by the tests under tests/ros, after their ``importorskip("rclpy")``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import pytest

SKIP_REASON = (
    "rclpy is not importable here: the ROS 2 suite runs in the environment built by "
    ".ci/ros-env (`bash .ci/run` runs it after the main suite)"
)
SERVICE_TIMEOUT_S = 60.0
"""How long a test waits for one service answer (a cold MiniLM query embed included)."""


class RosClient:
    """A second ROS 2 participant: its own context, node and executor thread.

    Publishes on any topic and calls any emem_interfaces service with ``call_async`` and a
    timeout.
    """

    def __init__(self, name: str) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.context = Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._publishers: dict[str, Any] = {}
        self._clients: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        with contextlib.suppress(Exception):  # the context was shut down: the test is over
            self.executor.spin()

    def now(self) -> float:
        """This node's ROS time in float seconds."""
        return float(self.node.get_clock().now().nanoseconds) * 1e-9

    def publish(self, topic: str, msg: Any) -> None:
        """Publish ``msg`` on ``topic`` (reliable, keep last 10)."""
        publisher = self._publishers.get(topic)
        if publisher is None:
            publisher = self.node.create_publisher(type(msg), topic, 10)
            self._publishers[topic] = publisher
        publisher.publish(msg)

    def client(self, srv_type: str, name: str, wait_s: float = SERVICE_TIMEOUT_S) -> Any:
        """A client of service ``name`` (type emem_interfaces/srv/<srv_type>), once it is
        available."""
        from emem_interfaces import srv

        key = f"{srv_type} {name}"
        client = self._clients.get(key)
        if client is None:
            client = self.node.create_client(getattr(srv, srv_type), name)
            assert client.wait_for_service(timeout_sec=wait_s), f"{name} never appeared"
            self._clients[key] = client
        return client

    def call(
        self, srv_type: str, service: str, /, timeout_s: float = SERVICE_TIMEOUT_S, **fields: Any
    ) -> Any:
        """Call ``service`` with a request built from ``fields``; the response.

        Fails the test when no answer arrives within ``timeout_s``.
        """
        from emem_interfaces import srv

        client = self.client(srv_type, service)
        request = getattr(srv, srv_type).Request(**fields)
        future = client.call_async(request)
        answered = threading.Event()
        future.add_done_callback(lambda _: answered.set())
        if not answered.wait(timeout_s):
            client.remove_pending_request(future)
            pytest.fail(f"{service} did not answer within {timeout_s:g} s")
        return future.result()

    def close(self) -> None:
        """Shut the node and its context down."""
        import rclpy

        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self._thread.join(timeout=5.0)


def wait_until(predicate: Any, timeout_s: float, what: str, interval_s: float = 0.1) -> Any:
    """Poll ``predicate()`` until it returns a truthy value; fail the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


def records(response: Any) -> list[dict[str, Any]]:
    """The records of a tool service's result_json."""
    document = json.loads(response.result_json)
    return list(document["records"])
