"""BridgeConfig: the bridge's one YAML file (layers, position, trigger, services, memory)."""

from __future__ import annotations

import string
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from emem_graph.config import MemoryConfig
from emem_graph.errors import ConfigError, InvalidInputError
from ros_bridge.messages import normalise_type

if TYPE_CHECKING:
    from emem_graph.memory import SpatioTemporalMemory

ODOMETRY = "nav_msgs/msg/Odometry"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
POSE_WITH_COVARIANCE_STAMPED = "geometry_msgs/msg/PoseWithCovarianceStamped"
POSITION_TYPES = (ODOMETRY, POSE_STAMPED, POSE_WITH_COVARIANCE_STAMPED)
EMPTY = "std_msgs/msg/Empty"


class BridgeConfigError(ConfigError):
    """The bridge configuration is invalid; the message names the bad key as a path
    (``layers[1].max_age: ...``)."""


def _ros_type(value: Any) -> str:
    try:
        return normalise_type(value)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


def _topic(value: str) -> str:
    value = value.strip()
    if not value or any(ch.isspace() for ch in value):
        raise ValueError(f"{value!r} is not a topic name")
    return value


class LayerConfig(BaseModel):
    """One ingested layer: one topic whose messages become observations (or body states)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """Layer name of the stored observations (unique in the config)."""
    topic: str
    type: str
    """ROS message type, e.g. std_msgs/msg/String (``std_msgs/String`` is accepted)."""
    internal_state: bool = False
    """True: readings of the robot's own state, stored with add_body_state."""
    template: str | None = None
    """str.format template over the message's fields and the converter's values
    (``text``, ``label``, ``unit``, ``value``), replacing the built-in text."""
    max_age: float = Field(5.0, gt=0.0)
    """Seconds after its stamp a message is still stored; older ones are dropped as stale."""
    label: str | None = None
    """Label of numeric / Bool / BatteryState text; defaults to the layer name."""
    unit: str = ""
    """Appended to numeric values as written (``" m"`` gives ``depth: 2.5 m``)."""
    score_threshold: float = Field(0.5, ge=0.0, le=1.0)
    """Detections scoring below this are left out of detection text."""
    dedupe: bool | None = None
    """Skip unchanged text when the robot has not moved; None: the trigger's setting."""

    @field_validator("topic")
    @classmethod
    def _check_topic(cls, value: str) -> str:
        return _topic(value)

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> str:
        return _ros_type(value)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("template")
    @classmethod
    def _check_template(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must not be blank (leave it out for the built-in text)")
        try:
            list(string.Formatter().parse(value))
        except ValueError as exc:
            raise ValueError(f"not a str.format template: {exc}") from None
        return value

    @property
    def display_label(self) -> str:
        """The label numeric, Bool and BatteryState text starts with."""
        return self.label if self.label else self.name


class PositionConfig(BaseModel):
    """Where the robot's pose comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str
    type: str = ODOMETRY
    max_age: float = Field(1.0, gt=0.0)
    """A message further than this (s) from every pose sample has no position (dropped)."""
    history_s: float = Field(30.0, gt=0.0)
    """Seconds of pose samples kept for interpolation."""

    @field_validator("topic")
    @classmethod
    def _check_topic(cls, value: str) -> str:
        return _topic(value)

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> str:
        name = _ros_type(value)
        if name not in POSITION_TYPES:
            raise ValueError(f"{name} is not a pose type; use one of {', '.join(POSITION_TYPES)}")
        return name


class TriggerConfig(BaseModel):
    """When fresh layer messages are stored: at a rate, or whenever a topic publishes."""

    model_config = ConfigDict(extra="forbid")

    rate_hz: float | None = Field(1.0, gt=0.0)
    topic: str | None = None
    type: str | None = None
    """Type of the trigger topic; default: the type of the layer or position on that topic,
    else std_msgs/msg/Empty."""
    dedupe: bool = False
    dedupe_distance: float = Field(0.25, ge=0.0)
    """Metres the robot must have moved for unchanged text to be stored again."""

    @field_validator("topic")
    @classmethod
    def _check_topic(cls, value: str | None) -> str | None:
        return None if value is None else _topic(value)

    @field_validator("type", mode="before")
    @classmethod
    def _check_type(cls, value: Any) -> str | None:
        return None if value is None else _ros_type(value)

    @model_validator(mode="after")
    def _exactly_one(self) -> TriggerConfig:
        if self.topic is not None and "rate_hz" not in self.model_fields_set:
            object.__setattr__(self, "rate_hz", None)
        if self.topic is not None and self.rate_hz is not None:
            raise ValueError("give either rate_hz or topic, not both")
        if self.topic is None and self.rate_hz is None:
            raise ValueError("give rate_hz or topic")
        if self.type is not None and self.topic is None:
            raise ValueError("type is only meaningful with topic")
        return self


class ServicesConfig(BaseModel):
    """How the node serves the memory's tools."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(30.0, gt=0.0)
    query_service: bool = False
    """Serve ``~/query`` (read-only Cypher on the live memory). Off by default: any node on the
    DDS domain can call a ROS service (unless SROS2 permissions restrict it), and a statement
    can exhaust the bridge's memory while Kuzu binds it (see the README's Security section);
    turn it on for development, or with SROS2 access control on that service."""
    query_row_limit: int = Field(1000, gt=0)
    query_timeout_s: float = Field(10.0, gt=0.0)
    consolidation_in_background: bool = True


class BridgeConfig(BaseModel):
    """The whole bridge configuration (one YAML file, see ``ros_bridge/example_bridge.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    node_name: str = Field("emem_graph", min_length=1)
    memory_dir: str = Field(min_length=1)
    """The memory's directory (relative paths are relative to the working directory)."""
    memory: dict[str, Any] = Field(default_factory=dict)
    """MemoryConfig fields (db_path excepted: memory_dir is the memory's path)."""
    layers: list[LayerConfig] = Field(min_length=1)
    position: PositionConfig | None = None
    trigger: TriggerConfig = Field(default_factory=TriggerConfig)
    services: ServicesConfig = Field(default_factory=ServicesConfig)

    @model_validator(mode="after")
    def _check_consistency(self) -> BridgeConfig:
        seen: dict[str, int] = {}
        topic_types: dict[str, tuple[str, str]] = {}
        for index, layer in enumerate(self.layers):
            if layer.name in seen:
                raise ValueError(
                    f"layers[{index}].name: duplicate layer name {layer.name!r} "
                    f"(also layers[{seen[layer.name]}])"
                )
            seen[layer.name] = index
            where = f"layers[{index}].type"
            _same_type(topic_types, layer.topic, layer.type, where)
        if self.position is not None:
            _same_type(topic_types, self.position.topic, self.position.type, "position.type")
        if self.trigger.topic is not None and self.trigger.type is not None:
            _same_type(topic_types, self.trigger.topic, self.trigger.type, "trigger.type")
        if "db_path" in self.memory:
            raise ValueError("memory.db_path: not allowed here; memory_dir is the memory's path")
        try:
            MemoryConfig.model_validate({**self.memory, "db_path": self.memory_dir})
        except ValidationError as exc:
            raise ValueError(_describe(exc, prefix="memory.")) from None
        return self

    def memory_config(self, **overrides: Any) -> MemoryConfig:
        """The MemoryConfig of this bridge's memory (``overrides`` replace config fields)."""
        fields = {**self.memory, **overrides, "db_path": str(Path(self.memory_dir).expanduser())}
        try:
            return MemoryConfig.model_validate(fields)
        except ValidationError as exc:
            raise BridgeConfigError(_describe(exc, prefix="memory.")) from None

    def open_memory(
        self,
        embedding_provider: Any = None,
        llm_client: Any = None,
        get_current_time: Callable[[], float] | None = None,
        **memory_overrides: Any,
    ) -> SpatioTemporalMemory:
        """Open (or create) the memory in ``memory_dir`` with the configured settings.

        Args:
            embedding_provider, llm_client, get_current_time: passed to SpatioTemporalMemory.
            memory_overrides: MemoryConfig fields replacing those of the config file.
        """
        from emem_graph.memory import SpatioTemporalMemory

        config = self.memory_config(**memory_overrides)
        if embedding_provider is not None and "embedding_dim" not in self.memory:
            config = config.model_copy(update={"embedding_dim": embedding_provider.dim})
        Path(config.db_path).mkdir(parents=True, exist_ok=True)
        return SpatioTemporalMemory(
            config=config,
            embedding_provider=embedding_provider,
            llm_client=llm_client,
            get_current_time=get_current_time,
        )

    def layer(self, name: str) -> LayerConfig:
        """The layer called ``name``.

        Raises:
            KeyError: no such layer.
        """
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no layer named {name!r}")

    def topic_type(self, topic: str) -> str | None:
        """The message type configured for ``topic`` (by a layer, the position or the trigger)."""
        for layer in self.layers:
            if layer.topic == topic:
                return layer.type
        if self.position is not None and self.position.topic == topic:
            return self.position.type
        if self.trigger.topic == topic:
            return self.trigger.type or EMPTY
        return None

    @classmethod
    def build(cls, data: Any, source: str | None = None) -> BridgeConfig:
        """Validate ``data`` (a dict, e.g. parsed YAML) into a BridgeConfig.

        Raises:
            BridgeConfigError: naming every bad key as a path (and ``source`` when given).
        """
        if not isinstance(data, dict):
            where = f"{source}: " if source else ""
            raise BridgeConfigError(
                f"{where}the bridge config must be a mapping of keys, got {type(data).__name__}"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            where = f" ({source})" if source else ""
            raise BridgeConfigError(f"invalid bridge config{where}: {_describe(exc)}") from None


def load_config(path: str | Path) -> BridgeConfig:
    """Read and validate a bridge YAML file.

    Raises:
        BridgeConfigError: the file is missing, is not YAML, or holds a bad key (named as a path).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BridgeConfigError(f"cannot read the bridge config {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BridgeConfigError(f"{path} is not valid YAML: {exc}") from None
    return BridgeConfig.build(data, source=str(path))


def _same_type(seen: dict[str, tuple[str, str]], topic: str, type_name: str, where: str) -> None:
    if topic in seen and seen[topic][0] != type_name:
        first_type, first_where = seen[topic]
        raise ValueError(
            f"{where}: topic {topic} is {type_name} here but {first_type} in {first_where}"
        )
    seen.setdefault(topic, (type_name, where))


def key_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a key path.

    ``("layers", 1, "max_age")`` becomes ``layers[1].max_age``.
    """
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _describe(exc: ValidationError, prefix: str = "") -> str:
    parts = []
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if p not in ("function-after", "function-before"))
        message = str(error["msg"]).removeprefix("Value error, ")
        path = key_path(loc)
        if not path:
            parts.append(message)  # a cross-field check names its own path
        elif error["type"] == "missing":
            parts.append(f"{prefix}{path}: required key missing")
        elif error["type"] == "extra_forbidden":
            parts.append(f"{prefix}{path}: unknown key")
        else:
            parts.append(f"{prefix}{path}: {message}")
    return "; ".join(parts)
