// Remove a knowledge node's COMPOSED_OF edges (the objects stay). $id
MATCH (k:Knowledge {id: $id})-[r:COMPOSED_OF]->(:ProfileObject)
DELETE r
