"""Measurements of emem_graph on data that lives outside the repository."""
