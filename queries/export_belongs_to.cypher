// Export: every BELONGS_TO edge (Observation -> Episode) as from/to ids. No parameters.
MATCH (a:Observation)-[:BELONGS_TO]->(b:Episode)
RETURN a.id AS `from`, b.id AS `to`
