// Close an episode. $id, $end_time, $status ("completed" or "interrupted")
MATCH (e:Episode {id: $id})
SET e.end_time = $end_time, e.status = $status
RETURN e.id AS id
