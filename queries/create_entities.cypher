// New entities, a batch at once. $rows: an Arrow table (ENTITY_ARROW: id, name, entity_type,
// x, y, z, first_seen, last_seen, observation_count, confidence, layer, metadata) read with
// LOAD FROM: one statement for the batch instead of one per entity (issue 23).
LOAD FROM $rows
CREATE (:Entity {id: id, name: name, entity_type: entity_type, x: x, y: y, z: z,
                 first_seen: first_seen, last_seen: last_seen,
                 observation_count: observation_count, confidence: confidence,
                 layer: layer, metadata: metadata})
