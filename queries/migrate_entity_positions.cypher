// Schema 3 upgrade: every entity without a Position gets one open position (its stored
// position, span and count). Run in the upgrade's transaction.
MATCH (e:Entity)
WHERE NOT EXISTS { MATCH (e)-[:WAS_AT]->(:Position) }
CREATE (e)-[:WAS_AT]->(:Position {id: e.id + ':0', entity_id: e.id, x: e.x, y: e.y, z: e.z,
                                  first_seen: e.first_seen, last_seen: e.last_seen,
                                  count: e.observation_count, ended: CAST(NULL AS DOUBLE)})
