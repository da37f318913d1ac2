// Export: every CONNECTS edge (Place -> Place) as from/to ids with its distance and kind.
// No parameters.
MATCH (a:Place)-[r:CONNECTS]->(b:Place)
RETURN a.id AS `from`, b.id AS `to`, r.distance AS distance, r.kind AS kind
