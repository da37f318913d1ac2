// Remove a profile object's GROUNDED_AS edges. $object_id
MATCH (o:ProfileObject {id: $object_id})-[g:GROUNDED_AS]->(:Entity)
DELETE g
