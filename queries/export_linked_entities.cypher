// Export: the Entity nodes (all properties) OBSERVED_IN the given observations.
// $ids: observation ids
UNWIND $ids AS i
MATCH (n:Entity)-[:OBSERVED_IN]->(o:Observation {id: i})
WITH DISTINCT n
RETURN n.*
ORDER BY n.first_seen, n.id
