// Insert a batch of new places of the topological map.
// $rows: list of {id, x, y, z, visits, first_seen, last_seen}
UNWIND $rows AS r
CREATE (:Place {id: r.id, x: r.x, y: r.y, z: r.z, visits: r.visits,
                first_seen: r.first_seen, last_seen: r.last_seen})
