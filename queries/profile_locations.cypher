// Every profile location (with its vector).
MATCH (l:ProfileLocation)
RETURN l.id AS id, l.user_id AS user_id, l.name AS name, l.expression AS expression,
       l.vector AS vector
