// Export: every Episode node with all its properties. No parameters.
MATCH (n:Episode)
RETURN n.*
ORDER BY n.start_time, n.id
