"""BridgeConfig: the YAML file, its defaults, and errors that name the bad key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emem_graph import HashingEmbedder
from emem_graph.errors import ConfigError
from ros_bridge.config import BridgeConfig, BridgeConfigError, load_config

EXAMPLE = Path(__file__).resolve().parents[1] / "ros_bridge" / "example_bridge.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bridge.yaml"
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = """
memory_dir: mem
layers:
  - {name: scene, topic: /scene, type: std_msgs/String}
"""


def test_minimal_config_has_the_documented_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL))
    assert config.node_name == "emem_graph"
    assert config.position is None
    layer = config.layers[0]
    assert layer.type == "std_msgs/msg/String"
    assert (layer.internal_state, layer.template, layer.max_age) == (False, None, 5.0)
    assert (layer.label, layer.display_label, layer.unit) == (None, "scene", "")
    assert (layer.score_threshold, layer.dedupe) == (0.5, None)
    trigger = config.trigger
    assert (trigger.rate_hz, trigger.topic, trigger.dedupe, trigger.dedupe_distance) == (
        1.0,
        None,
        False,
        0.25,
    )
    services = config.services
    assert (services.timeout_s, services.query_row_limit, services.query_timeout_s) == (
        30.0,
        1000,
        10.0,
    )
    assert services.consolidation_in_background is True


def test_the_example_config_loads(tmp_path: Path) -> None:
    config = load_config(EXAMPLE)
    assert [layer.name for layer in config.layers] == ["scene", "objects", "temperature", "battery"]
    assert config.position is not None
    assert config.position.type == "nav_msgs/msg/Odometry"
    assert config.layer("battery").internal_state
    assert config.topic_type("/odom") == "nav_msgs/msg/Odometry"


def test_topic_trigger_turns_the_default_rate_off(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL + "trigger: {topic: /store_now}\n"))
    assert (config.trigger.rate_hz, config.trigger.topic) == (None, "/store_now")
    assert config.topic_type("/store_now") == "std_msgs/msg/Empty"


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        (MINIMAL.replace("scene, topic", "scene, max_age: 0, topic"), r"layers\[0\]\.max_age: "),
        (MINIMAL + "  - {name: scene, topic: /b, type: std_msgs/Bool}\n", r"layers\[1\]\.name: "),
        (
            MINIMAL + "  - {name: b, topic: /b, type: std_msgs/Bool, colour: red}\n",
            r"layers\[1\]\.colour: unknown key",
        ),
        (MINIMAL + "  - {name: b, topic: /b, type: Bool}\n", r"layers\[1\]\.type: .*not a ROS"),
        (
            MINIMAL + "  - {name: b, topic: /scene, type: std_msgs/Bool}\n",
            r"layers\[1\]\.type: topic /scene is std_msgs/msg/Bool here",
        ),
        (MINIMAL + "  - {name: b, topic: /b}\n", r"layers\[1\]\.type: required key missing"),
        (
            MINIMAL + "  - {name: b, topic: /b, type: std_msgs/String, template: '{x'}\n",
            r"layers\[1\]\.template: not a str.format template",
        ),
        (
            MINIMAL + "  - {name: b, topic: /b, type: std_msgs/Int8, score_threshold: 2}\n",
            r"layers\[1\]\.score_threshold: ",
        ),
        (MINIMAL.replace("memory_dir: mem\n", ""), r"memory_dir: required key missing"),
        (MINIMAL + "memory: {embedding_dim: -1}\n", r"memory\.embedding_dim: "),
        (MINIMAL + "memory: {flush_intervall: 2}\n", r"memory\.flush_intervall: unknown key"),
        (MINIMAL + "memory: {db_path: x}\n", r"memory\.db_path: not allowed"),
        (
            MINIMAL + "position: {topic: /odom, type: std_msgs/String}\n",
            r"position\.type: std_msgs/msg/String is not a pose type",
        ),
        (MINIMAL + "position: {topic: /odom, max_age: -1}\n", r"position\.max_age: "),
        (MINIMAL + "trigger: {rate_hz: 2, topic: /t}\n", r"trigger: give either rate_hz or topic"),
        (MINIMAL + "trigger: {rate_hz: 0}\n", r"trigger\.rate_hz: "),
        (MINIMAL + "trigger: {dedupe_distance: -0.1}\n", r"trigger\.dedupe_distance: "),
        (MINIMAL + "services: {query_row_limit: 0}\n", r"services\.query_row_limit: "),
        (MINIMAL + "servics: {}\n", r"servics: unknown key"),
        ("memory_dir: mem\nlayers: []\n", r"layers: "),
        ("- just\n- a list\n", r"must be a mapping"),
    ],
)
def test_bad_configs_name_the_bad_key(tmp_path: Path, yaml_text: str, message: str) -> None:
    path = write(tmp_path, yaml_text)
    with pytest.raises(BridgeConfigError, match=message) as raised:
        load_config(path)
    assert str(path) in str(raised.value)
    assert isinstance(raised.value, ConfigError)


def test_unreadable_and_non_yaml_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(BridgeConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(BridgeConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "layers: [\n"))


def test_several_bad_keys_are_all_named(tmp_path: Path) -> None:
    data: dict[str, Any] = {
        "memory_dir": "m",
        "layers": [{"name": "a", "topic": "/a", "type": "std_msgs/String", "max_age": -1}],
        "trigger": {"rate_hz": -1},
    }
    with pytest.raises(BridgeConfigError) as raised:
        BridgeConfig.build(data)
    assert "layers[0].max_age" in str(raised.value)
    assert "trigger.rate_hz" in str(raised.value)


def test_open_memory_uses_memory_dir_and_memory_settings(tmp_path: Path) -> None:
    config = BridgeConfig.build(
        {
            "memory_dir": str(tmp_path / "robot"),
            "memory": {"flush_batch_size": 7},
            "layers": [{"name": "a", "topic": "/a", "type": "std_msgs/String"}],
        }
    )
    memory = config.open_memory(embedding_provider=HashingEmbedder(64), working_memory_size=9)
    try:
        assert memory.config.db_path == str(tmp_path / "robot")
        assert memory.config.flush_batch_size == 7
        assert memory.config.working_memory_size == 9
        assert memory.config.embedding_dim == 64
        memory.add("hello", 1.0, 2.0, timestamp=5.0)
        memory.flush()
    finally:
        memory.close()
    assert (tmp_path / "robot").is_dir()
    with pytest.raises(BridgeConfigError, match=r"memory\.working_memory_size"):
        config.memory_config(working_memory_size=0)
