"""``python -m emem_graph.cli``: the ``emem-graph`` command."""

from emem_graph.cli import main

raise SystemExit(main())
