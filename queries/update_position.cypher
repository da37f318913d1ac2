// Update a stay after sightings, a move (ended) or a split (another entity_id).
// $id $entity_id $x $y $z $first_seen $last_seen $count $ended
MATCH (p:Position {id: $id})
SET p.entity_id = $entity_id, p.x = $x, p.y = $y, p.z = $z, p.first_seen = $first_seen,
    p.last_seen = $last_seen, p.count = $count, p.ended = $ended
