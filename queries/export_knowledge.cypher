// Export: every Knowledge node of the user profiles, without its embeddings. No parameters.
MATCH (n:Knowledge)
RETURN n.id AS id, n.user_id AS user_id, n.subtype AS subtype, n.alias AS alias,
       n.description AS description, n.content AS content, n.created_at AS created_at,
       n.updated_at AS updated_at
ORDER BY n.created_at, n.id
