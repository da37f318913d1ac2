// Export: every Position node (entities' stays over time) with all its properties. No parameters.
MATCH (n:Position)
RETURN n.*
ORDER BY n.entity_id, n.first_seen, n.id
