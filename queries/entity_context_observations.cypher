// The latest observations an entity was seen in, with their text (its context for merging).
// $id $limit
MATCH (e:Entity {id: $id})-[:OBSERVED_IN]->(o:Observation)
WHERE o.text IS NOT NULL
RETURN o.id AS id, o.layer AS layer, o.text AS text, o.timestamp AS timestamp
ORDER BY o.timestamp DESC, o.id
LIMIT $limit
