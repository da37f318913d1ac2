// Facts about the memory (schema_version, embedding_dim, ...).
MATCH (m:MemoryInfo) RETURN m.key AS key, m.value AS value
