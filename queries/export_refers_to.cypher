// Export: every REFERS_TO edge (User -> Knowledge) as from/to ids. No parameters.
MATCH (a:User)-[:REFERS_TO]->(b:Knowledge)
RETURN a.id AS `from`, b.id AS `to`
