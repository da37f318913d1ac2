// New stays of entities, a batch at once (as create_position does for one). $rows: rows with
// POSITION_ARROW's columns (id, entity_id, x, y, z, first_seen, last_seen, count, ended). ended
// is cast: a batch where no stay has ended gives a column of nulls, which reads as STRING.
UNWIND $rows AS r
MATCH (e:Entity)
WHERE e.id = r.entity_id
CREATE (e)-[:WAS_AT]->(:Position {id: r.id, entity_id: r.entity_id, x: r.x, y: r.y, z: r.z,
                                  first_seen: r.first_seen, last_seen: r.last_seen,
                                  count: r.count, ended: CAST(r.ended AS DOUBLE)})
