// Export: every SUMMARIZES edge (Gist -> Observation or Gist -> Gist) as from/to ids, with the
// table of the summarized node in to_table. No parameters.
MATCH (a:Gist)-[:SUMMARIZES]->(b)
RETURN a.id AS `from`, b.id AS `to`, label(b) AS to_table
