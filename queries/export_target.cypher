// Export: every TARGET edge (Pattern -> ProfileObject or ProfileLocation) as from/to ids, with
// the table of the target in to_table and the argument's position. No parameters.
MATCH (a:Pattern)-[r:TARGET]->(b)
RETURN a.id AS `from`, b.id AS `to`, label(b) AS to_table, r.position AS position
