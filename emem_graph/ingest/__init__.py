"""Ingest layer: embedding providers and the batching buffer in front of the store."""
