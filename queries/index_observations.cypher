// Every observation's columns but its vector, for the in-process ObservationIndex built when a
// memory opens (storage/observation_index.py). No parameters.
MATCH (o:Observation)
RETURN o.id AS id, o.text AS text, o.x AS x, o.y AS y, o.z AS z, o.timestamp AS timestamp,
       o.layer AS layer, o.source_type AS source_type, o.confidence AS confidence,
       o.tier AS tier, o.episode_id AS episode_id, o.metadata AS metadata
