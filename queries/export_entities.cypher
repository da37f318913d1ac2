// Export: every Entity node with all its properties. No parameters.
MATCH (n:Entity)
RETURN n.*
ORDER BY n.first_seen, n.id
