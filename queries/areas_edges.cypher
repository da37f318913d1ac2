// Areas: the SUMMARIZES edges of the area gists: parent id, child id and the child's table
// ('Observation' or 'Gist'). No parameters.
MATCH (g:Gist)-[:SUMMARIZES]->(c)
WHERE g.level >= 1
RETURN g.id AS parent, c.id AS child, label(c) AS child_table
