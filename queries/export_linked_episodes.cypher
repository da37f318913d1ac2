// Export: the Episode nodes (all properties) that the given observations BELONG_TO.
// $ids: observation ids
UNWIND $ids AS i
MATCH (o:Observation {id: i})-[:BELONGS_TO]->(n:Episode)
WITH DISTINCT n
RETURN n.*
ORDER BY n.start_time, n.id
