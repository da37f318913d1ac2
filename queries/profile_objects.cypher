// Every profile object (with its vector).
MATCH (o:ProfileObject)
RETURN o.id AS id, o.user_id AS user_id, o.name AS name, o.attributes AS attributes,
       o.granularity AS granularity, o.vector AS vector
