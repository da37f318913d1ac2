// Export: every Pattern node (a step of a routine) with all its properties. No parameters.
MATCH (n:Pattern)
RETURN n.*
ORDER BY n.knowledge_id, n.step, n.id
