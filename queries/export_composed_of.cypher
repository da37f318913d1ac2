// Export: every COMPOSED_OF edge (Knowledge -> ProfileObject) as from/to ids. No parameters.
MATCH (a:Knowledge)-[:COMPOSED_OF]->(b:ProfileObject)
RETURN a.id AS `from`, b.id AS `to`
