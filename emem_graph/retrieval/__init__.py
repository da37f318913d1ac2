"""Retrieval layer: formatting of results into the compact lines planners read (API.md)."""
