"""The developer and analyst surface: read-only Cypher, named queries, export, map, stats."""
