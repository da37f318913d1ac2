// Rewrite a batch of written stays (as update_position does for one). $rows: rows with
// POSITION_ARROW's columns (ended cast: a column of nulls reads as STRING).
UNWIND $rows AS r
MATCH (p:Position)
WHERE p.id = r.id
SET p.entity_id = r.entity_id, p.x = r.x, p.y = r.y, p.z = r.z, p.first_seen = r.first_seen,
    p.last_seen = r.last_seen, p.count = r.count, p.ended = CAST(r.ended AS DOUBLE)
