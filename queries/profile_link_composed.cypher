// Object semantics: the knowledge node is COMPOSED_OF this object. $knowledge_id $object_id
MATCH (k:Knowledge {id: $knowledge_id}), (o:ProfileObject {id: $object_id})
CREATE (k)-[:COMPOSED_OF]->(o)
