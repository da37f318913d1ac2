// A new entity. $id $name $entity_type $x $y $z $first_seen $last_seen $observation_count
// $confidence $layer $metadata
CREATE (:Entity {id: $id, name: $name, entity_type: $entity_type, x: $x, y: $y, z: $z,
                 first_seen: $first_seen, last_seen: $last_seen,
                 observation_count: $observation_count, confidence: $confidence,
                 layer: $layer, metadata: $metadata})
