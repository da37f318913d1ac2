// Where and when an entity was seen: the observations it was OBSERVED_IN, newest first.
// $id: the entity; $limit
MATCH (e:Entity {id: $id})-[r:OBSERVED_IN]->(o:Observation)
RETURN o.id AS observation_id, o.x AS x, o.y AS y, o.z AS z, o.timestamp AS timestamp,
       o.layer AS layer, r.confidence AS confidence
ORDER BY timestamp DESC, observation_id
LIMIT $limit
