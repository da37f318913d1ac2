// Export: every ENTAILS edge (Knowledge -> Pattern) as from/to ids. No parameters.
MATCH (a:Knowledge)-[:ENTAILS]->(b:Pattern)
RETURN a.id AS `from`, b.id AS `to`
