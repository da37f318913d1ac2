"""Fixtures of the ROS 2 suite: real rclpy nodes talking over Fast DDS on this machine.

The suite runs in the environment .ci/ros-env builds (rclpy from the ros-* wheels, emem_interfaces
built with cmake): ``"$(bash .ci/ros-env)/bin/python" -m pytest -m ros tests/ros``. In an
environment without rclpy (the project's .venv) every module of tests/ros is skipped at
collection with the reason shown by ``pytest -ra``.

Every run gets its own ROS domain id and keeps discovery on this host
(ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST), so concurrent runs never see each other's nodes and
no DDS traffic leaves the machine. Both are set before any rclpy context exists, and the node
subprocesses inherit them.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rosnodes import RosClient

os.environ["ROS_DOMAIN_ID"] = str(random.SystemRandom().randint(1, 100))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/ros carries the ``ros`` marker (so ``-m ros`` selects them)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.ros)


@pytest.fixture(scope="module")
def ros_client() -> Iterator[RosClient]:
    """The test's own ROS 2 node (publisher and service client)."""
    client = RosClient(f"emem_test_client_{os.getpid()}")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def bridge_context() -> Iterator[Any]:
    """An initialised rclpy Context for a BridgeNode in this process (shut down after)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.signals import SignalHandlerOptions

    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        yield context
    finally:
        rclpy.try_shutdown(context=context)
