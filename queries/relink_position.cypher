// A stay found to be another object's (split): its WAS_AT edge moves to that entity.
// $id $entity_id
MATCH (old:Entity)-[r:WAS_AT]->(p:Position {id: $id}), (e:Entity {id: $entity_id})
DELETE r
CREATE (e)-[:WAS_AT]->(p)
