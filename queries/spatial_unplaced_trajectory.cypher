// Perception observations not linked to a place yet (written while the map was not built),
// oldest first.
MATCH (o:Observation)
WHERE o.source_type <> 'interoception' AND o.source_type <> 'agent_note'
  AND NOT EXISTS { MATCH (o)-[:AT_PLACE]->(:Place) }
RETURN o.id AS id, o.x AS x, o.y AS y, o.z AS z, o.timestamp AS timestamp
ORDER BY o.timestamp, o.id
