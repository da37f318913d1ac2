// Every grounding of a profile object, with the entity's current name, type and position.
MATCH (o:ProfileObject)-[g:GROUNDED_AS]->(e:Entity)
RETURN o.id AS object_id, e.id AS entity_id, e.name AS name, e.entity_type AS entity_type,
       e.x AS x, e.y AS y, e.z AS z, g.similarity AS similarity
ORDER BY g.similarity DESC
