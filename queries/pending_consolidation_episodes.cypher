// Closed episodes whose consolidation was requested but not written (gist = ''), oldest first.
MATCH (e:Episode)
WHERE e.status <> 'active' AND e.gist = ''
RETURN e.id AS id
ORDER BY e.end_time
