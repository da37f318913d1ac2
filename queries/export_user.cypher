// Export: every User node (user profiles) with all its properties. No parameters.
MATCH (n:User)
RETURN n.*
ORDER BY n.id
