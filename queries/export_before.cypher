// Export: every BEFORE edge (Pattern -> the next Pattern of a routine) as from/to ids.
// No parameters.
MATCH (a:Pattern)-[:BEFORE]->(b:Pattern)
RETURN a.id AS `from`, b.id AS `to`
