"""Fleet memory: several robots' memories pushed to one shared location (object storage or a
shared disk) and asked together.

``push_memory`` sends what changed in one robot's memory since its last push (vectors into
shared LanceDB tables, graph rows as Parquet, positions in the fleet frame); ``FleetMemory``
answers the retrieval tools across robots from what committed pushes name.
"""

from __future__ import annotations

from emem_graph.fleet.frame import Frame
from emem_graph.fleet.location import FleetLocation
from emem_graph.fleet.memory import FleetMemory
from emem_graph.fleet.push import PushReport, push_memory

__all__ = ["FleetLocation", "FleetMemory", "Frame", "PushReport", "push_memory"]
