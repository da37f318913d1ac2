// Export: every SUBTASK_OF edge (Episode -> parent Episode) as from/to ids. No parameters.
MATCH (a:Episode)-[:SUBTASK_OF]->(b:Episode)
RETURN a.id AS `from`, b.id AS `to`
