// Export: every ProfileLocation node of the user profiles, without its embedding. No parameters.
MATCH (n:ProfileLocation)
RETURN n.id AS id, n.user_id AS user_id, n.name AS name, n.expression AS expression
ORDER BY n.user_id, n.id
