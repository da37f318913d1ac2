// Episodes still marked active, oldest first (after a crash: left open by the last process).
MATCH (e:Episode)
WHERE e.status = 'active'
RETURN e.id AS id, e.start_time AS start_time
ORDER BY e.start_time
