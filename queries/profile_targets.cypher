// Every step argument: pattern, target node, its table and the argument position.
MATCH (p:Pattern)-[t:TARGET]->(n)
RETURN p.id AS pattern_id, n.id AS node_id, label(n) AS kind, t.position AS position
ORDER BY p.id, t.position
