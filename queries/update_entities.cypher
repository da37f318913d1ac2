// Set every property but the layer of a batch of entities (as update_entity does for one).
// $rows: rows with ENTITY_ARROW's columns. The Entity table is small: the join over it is
// cheap next to one statement per entity.
UNWIND $rows AS r
MATCH (e:Entity)
WHERE e.id = r.id
SET e.name = r.name, e.entity_type = r.entity_type, e.x = r.x, e.y = r.y, e.z = r.z,
    e.first_seen = r.first_seen, e.last_seen = r.last_seen,
    e.observation_count = r.observation_count, e.confidence = r.confidence,
    e.metadata = r.metadata
