// Rewrite a batch of written stays (as update_position does for one). $rows: an Arrow table
// with POSITION_ARROW's columns.
LOAD FROM $rows
MATCH (p:Position)
WHERE p.id = id
SET p.entity_id = entity_id, p.x = x, p.y = y, p.z = z, p.first_seen = first_seen,
    p.last_seen = last_seen, p.count = count, p.ended = ended
