// Export: every Place node (the topological map) with all its properties. No parameters.
MATCH (n:Place)
RETURN n.*
ORDER BY n.first_seen, n.id
