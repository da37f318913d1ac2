// Export: every ProfileObject node of the user profiles, without its embedding. No parameters.
MATCH (n:ProfileObject)
RETURN n.id AS id, n.user_id AS user_id, n.name AS name, n.attributes AS attributes,
       n.granularity AS granularity
ORDER BY n.user_id, n.id
