"""Without rclpy (this environment), the bridge node fails with an error that says what is
missing; the rest of ros_bridge works without ROS."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from emem_graph.cli import main
from emem_graph.errors import BackendUnavailableError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rclpy") is not None,
    reason="rclpy is importable here: tests/ros runs the real node instead",
)


def test_import_ros_names_rclpy_and_how_to_get_it() -> None:
    from ros_bridge.node import import_ros

    with pytest.raises(BackendUnavailableError, match=r"needs rclpy.*source your ROS 2"):
        import_ros()


def test_emem_graph_ros_reports_the_missing_rclpy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(
        f"memory_dir: {tmp_path / 'memory'}\n"
        "layers:\n  - {name: scene, topic: /scene, type: std_msgs/String}\n",
        encoding="utf-8",
    )
    assert main(["ros", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "emem-graph: error: the ROS bridge needs rclpy" in err
    assert not (tmp_path / "memory").exists()  # nothing was opened before the check


def test_cypher_ros_reports_the_missing_rclpy_and_a_missing_statement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cypher", "--ros", "MATCH (o:Observation) RETURN count(o) AS n"]) == 2
    assert "emem-graph: error: the ROS bridge needs rclpy" in capsys.readouterr().err
    assert main(["cypher", str(tmp_path)]) == 2  # without --ros: a directory and a statement
    assert "give the memory directory and a statement" in capsys.readouterr().err
