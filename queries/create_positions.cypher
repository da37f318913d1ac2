// New stays of entities, a batch at once (as create_position does for one). $rows: an Arrow
// table (POSITION_ARROW: id, entity_id, x, y, z, first_seen, last_seen, count, ended).
LOAD FROM $rows
MATCH (e:Entity)
WHERE e.id = entity_id
CREATE (e)-[:WAS_AT]->(:Position {id: id, entity_id: entity_id, x: x, y: y, z: z,
                                  first_seen: first_seen, last_seen: last_seen,
                                  count: count, ended: ended})
