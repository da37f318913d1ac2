// Every COMPOSED_OF edge of object semantics, in the order the objects were given (edges are
// created in that order, and a rel's internal offset grows with each one created).
MATCH (k:Knowledge)-[r:COMPOSED_OF]->(o:ProfileObject)
RETURN k.id AS knowledge_id, o.id AS object_id
ORDER BY offset(id(r))
