// Export: every WAS_AT edge (Entity -> Position) as from/to ids. No parameters.
MATCH (a:Entity)-[r:WAS_AT]->(b:Position)
RETURN a.id AS `from`, b.id AS `to`
