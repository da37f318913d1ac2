// Every knowledge node of the profile (with its vectors).
MATCH (u:User)-[:REFERS_TO]->(k:Knowledge)
RETURN k.id AS id, u.id AS user_id, k.subtype AS subtype, k.alias AS alias,
       k.description AS description, k.content AS content, k.created_at AS created_at,
       k.updated_at AS updated_at, k.alias_vector AS alias_vector,
       k.content_vector AS content_vector
ORDER BY k.created_at, k.id
