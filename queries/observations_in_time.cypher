// Ids and times of observations in a time range, optionally by layer, newest or oldest first.
// $time_after, $time_before, $layer may be NULL; $include_body_state; $newest_first; $limit
MATCH (o:Observation)
WHERE ($time_after IS NULL OR o.timestamp >= $time_after)
  AND ($time_before IS NULL OR o.timestamp <= $time_before)
  AND o.tier <> 'archived'
  AND ($layer IS NULL OR o.layer = $layer)
  AND ($include_body_state OR o.source_type <> 'interoception')
RETURN o.id AS id, o.x AS x, o.y AS y, o.timestamp AS timestamp
ORDER BY CASE WHEN $newest_first THEN -o.timestamp ELSE o.timestamp END
LIMIT $limit
