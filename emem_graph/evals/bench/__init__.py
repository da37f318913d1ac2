"""The benchmark behind ``emem-graph bench``: a synthetic robot patrol, written and queried
through emem_graph (and, optionally, eMEM), every figure beside a baseline measured in the same
run on the same data.

Modules: ``workload`` (the patrol), ``baseline`` (the floor ingest and exact NumPy answers),
``drive`` (the calls made to a memory), ``compare`` (eMEM as a subject), ``report`` (figures,
table, JSON), ``run`` (one run, composing the others), ``scales`` (one run at several sizes,
each in a child process), ``resident`` (a memory's resident bytes, measured in a fresh
process), ``day`` (a robot's day through one open memory), ``day_report`` (its figures),
``footprint`` (the process's memory and descriptors), ``command`` (its command line).

Run: ``emem-graph bench --n 100000`` or ``python -m emem_graph.evals.bench --n 100000``;
``emem-graph bench --scales 20000,100000,1000000`` for every size in one run;
``emem-graph bench --day --observations 200000`` for a robot's day.
"""

from __future__ import annotations

from emem_graph.evals.bench.drive import TOOLS
from emem_graph.evals.bench.report import Figure, Target, table, to_json
from emem_graph.evals.bench.run import BenchResult, run_bench
from emem_graph.evals.bench.workload import PatrolWorkload, patrol_workload

__all__ = [
    "TOOLS",
    "BenchResult",
    "Figure",
    "PatrolWorkload",
    "Target",
    "patrol_workload",
    "run_bench",
    "table",
    "to_json",
]
