// Link entities to their nearest place. $rows: list of {entity_id, place_id, distance}
UNWIND $rows AS r
MATCH (e:Entity), (p:Place)
WHERE e.id = r.entity_id AND p.id = r.place_id
CREATE (e)-[:AT_PLACE {distance: r.distance}]->(p)
