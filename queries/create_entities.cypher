// New entities, a batch at once. $rows: rows with ENTITY_ARROW's columns (id, name,
// entity_type, x, y, z, first_seen, last_seen, observation_count, confidence, layer, metadata):
// one statement for the batch instead of one per entity.
UNWIND $rows AS r
CREATE (:Entity {id: r.id, name: r.name, entity_type: r.entity_type, x: r.x, y: r.y, z: r.z,
                 first_seen: r.first_seen, last_seen: r.last_seen,
                 observation_count: r.observation_count, confidence: r.confidence,
                 layer: r.layer, metadata: r.metadata})
