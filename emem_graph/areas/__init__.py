"""Hierarchical area memory: a semantic forest of area gists over the observations.

Area gists are Gist nodes of level >= 1 (room, building, site ...) built by agglomerative
clustering on position, each with a summary, a vector and SUMMARIZES edges to its children;
``describe_area`` and ``global_search`` walk them. See AreaMemory (capability.py).
"""

from emem_graph.areas.capability import AreaMemory, BuildReport

__all__ = ["AreaMemory", "BuildReport"]
