// Export: every GROUNDED_AS edge (ProfileObject -> Entity) as from/to ids with its similarity.
// No parameters.
MATCH (a:ProfileObject)-[r:GROUNDED_AS]->(b:Entity)
RETURN a.id AS `from`, b.id AS `to`, r.similarity AS similarity
