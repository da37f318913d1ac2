// Export: every OBSERVED_IN edge (Entity -> Observation) as from/to ids with its confidence.
// No parameters.
MATCH (a:Entity)-[r:OBSERVED_IN]->(b:Observation)
RETURN a.id AS `from`, b.id AS `to`, r.confidence AS confidence
