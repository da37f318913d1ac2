"""The child process of each step of a graph rebuild (probe.rebuild_graph): the replayed
graph exported, or the new graph imported. Apart from probe.py, which the graph imports."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from emem_graph.storage.graph import GraphDB
from emem_graph.storage.graph_transfer import export_tables, import_tables


def rebuild_step(argv: Sequence[str]) -> None:
    """One step of rebuild_graph, run in a child process: ``export GRAPH TABLES ENGINE`` (the
    log beside GRAPH replayed, every table written to TABLES, then the process ends without
    closing the graph: no checkpoint) or ``import GRAPH TABLES ENGINE`` (a new GRAPH from
    TABLES, closed cleanly). Prints DONE."""
    step, graph_path, tables, engine = argv
    graph = GraphDB(Path(graph_path), engine=engine, probe_first=False)
    if step == "export":
        export_tables(graph, Path(tables))
        sys.stdout.write("DONE\n")
        sys.stdout.flush()
        os._exit(0)  # the replayed graph is never checkpointed
    import_tables(graph, Path(tables))
    graph.close()
    print("DONE")
