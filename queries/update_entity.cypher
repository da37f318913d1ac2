// Update an entity in place after new sightings (run once per row). $id $name $entity_type $x $y
// $z $first_seen $last_seen $observation_count $confidence $metadata
MATCH (e:Entity {id: $id})
SET e.name = $name, e.entity_type = $entity_type, e.x = $x, e.y = $y, e.z = $z,
    e.first_seen = $first_seen, e.last_seen = $last_seen,
    e.observation_count = $observation_count, e.confidence = $confidence, e.metadata = $metadata
