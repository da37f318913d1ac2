// Export: the Gist nodes (all properties) that SUMMARIZE the given observations, directly or
// through gists of gists (up to 16 levels).
// $ids: observation ids
UNWIND $ids AS i
MATCH (o:Observation {id: i})<-[:SUMMARIZES*1..16]-(n:Gist)
WITH DISTINCT n
RETURN n.*
ORDER BY n.level, n.time_start, n.id
