// Set every property but the layer of a batch of entities (as update_entity does for one).
// $rows: an Arrow table with ENTITY_ARROW's columns. The Entity table is small: the join over
// it is cheap next to one statement per entity.
LOAD FROM $rows
MATCH (e:Entity)
WHERE e.id = id
SET e.name = name, e.entity_type = entity_type, e.x = x, e.y = y, e.z = z,
    e.first_seen = first_seen, e.last_seen = last_seen,
    e.observation_count = observation_count, e.confidence = confidence, e.metadata = metadata
