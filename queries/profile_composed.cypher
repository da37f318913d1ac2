// Every COMPOSED_OF edge of object semantics.
MATCH (k:Knowledge)-[:COMPOSED_OF]->(o:ProfileObject)
RETURN k.id AS knowledge_id, o.id AS object_id
