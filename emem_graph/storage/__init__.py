"""Storage layer: Kuzu graph (graph.py), LanceDB vectors (vectors.py), the one writer (store.py)."""
