"""Spatial reasoning over memory: a topological map of the places the robot occupied (Place
nodes, CONNECTS and AT_PLACE edges), routes over it, and the tools route_query,
directional_query and navigate_to.

Modules: topology (the in-process map and its incremental build), places (the map in the
graph, rebuild, Kuzu weighted shortest paths), keeper (upkeep on every written batch),
resolve (places and candidates from words), geometry (compass, projection, waypoints),
schemas (the tools' schemas) and capability (SpatialTools, the capability and its tools).
"""

from emem_graph.spatial.capability import SpatialTools

__all__ = ["SpatialTools"]
