"""The names of the files and folders inside a memory's directory (docs/architecture.md has
what each holds)."""

from __future__ import annotations

GRAPH_FILE = "graph.kuzu"
VECTOR_DIR = "vectors"
PENDING_DIR = "pending_vectors"
