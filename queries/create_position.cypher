// A new stay of an entity. $id $entity_id $x $y $z $first_seen $last_seen $count $ended
MATCH (e:Entity {id: $entity_id})
CREATE (e)-[:WAS_AT]->(:Position {id: $id, entity_id: $entity_id, x: $x, y: $y, z: $z,
                                  first_seen: $first_seen, last_seen: $last_seen,
                                  count: $count, ended: $ended})
