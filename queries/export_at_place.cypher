// Export: every AT_PLACE edge (Observation or Entity -> Place) as from/to ids, with the table
// of the linked node in from_table and its distance. No parameters.
MATCH (a)-[r:AT_PLACE]->(b:Place)
RETURN a.id AS `from`, b.id AS `to`, label(a) AS from_table, r.distance AS distance
