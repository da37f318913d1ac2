// Close an episode and mark it as waiting for consolidation (gist = ''), in one statement, so
// that an episode closed by a process that dies before its gist is written is consolidated on
// the next open. $id, $end_time, $status ("completed" or "interrupted")
MATCH (e:Episode {id: $id})
SET e.end_time = $end_time, e.status = $status, e.gist = ''
RETURN e.id AS id
