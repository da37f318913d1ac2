"""What a higher capability (spatial map, area forest, user profile) offers the memory facade.

A capability lives in its own package above retrieval/ and consolidation/. The facade builds it
after the store, tells it about every batch of observations written, serves its tools next to the
core ten, and closes it before the store. Its tools' schemas are registered with
``retrieval.schemas.register_tool_schemas`` when its schema module is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from emem_graph.models import Observation


class Capability(Protocol):
    """A capability plugged into the facade.

    Attributes:
        name: short name used in log messages ('spatial', 'areas', 'profile').
        tool_names: its ``@tool_method`` methods to serve as tools (may be empty).
    """

    name: str
    tool_names: list[str]

    def flush_before_tool(self) -> None:
        """Make every added observation visible (the facade's flush)."""

    def observations_written(self, observations: list[Observation]) -> None:
        """Called on the flush thread after a batch is in both stores. Must not raise for
        ordinary input; an exception is logged and the batch stays written."""

    def close(self) -> None:
        """Finish pending work; called before the stores close."""
