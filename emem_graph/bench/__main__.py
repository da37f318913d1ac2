"""``python -m emem_graph.bench [options]`` is ``emem-graph bench [options]``."""

from __future__ import annotations

import sys

from emem_graph.cli import main

_GLOBAL = ("-q", "--quiet", "-v", "--verbose")

if __name__ == "__main__":
    # The global flags belong before the subcommand; accept them anywhere here.
    flags = [a for a in sys.argv[1:] if a in _GLOBAL]
    options = [a for a in sys.argv[1:] if a not in _GLOBAL]
    raise SystemExit(main([*flags, "bench", *options]))
