// Ground a profile object in a world entity. $object_id $entity_id $similarity
MATCH (o:ProfileObject {id: $object_id}), (e:Entity {id: $entity_id})
CREATE (o)-[:GROUNDED_AS {similarity: $similarity}]->(e)
