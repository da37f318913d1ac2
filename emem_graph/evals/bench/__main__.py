"""``python -m emem_graph.evals.bench [options]`` runs the benchmark as ``emem-graph bench
[options]`` does."""

from __future__ import annotations

from emem_graph.evals.bench.command import main

if __name__ == "__main__":
    raise SystemExit(main())
