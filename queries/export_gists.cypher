// Export: every Gist node with all its properties. No parameters.
MATCH (n:Gist)
RETURN n.*
ORDER BY n.level, n.time_start, n.id
