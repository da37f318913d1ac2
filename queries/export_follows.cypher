// Export: every FOLLOWS edge (Episode -> the Episode that ended before it) as from/to ids.
// No parameters.
MATCH (a:Episode)-[:FOLLOWS]->(b:Episode)
RETURN a.id AS `from`, b.id AS `to`
