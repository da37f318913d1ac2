// Ids and times of observations in a time range, optionally by layer, newest or oldest first.
// $time_after, $time_before, $layer may be NULL; $include_body_state; $newest_first; $limit
MATCH (o:Observation)
WHERE (o.timestamp >= $time_after OR $time_after IS NULL)
  AND (o.timestamp <= $time_before OR $time_before IS NULL)
  AND o.tier <> 'archived'
  AND (o.layer = $layer OR $layer IS NULL)
  AND ($include_body_state OR o.source_type <> 'interoception')
RETURN o.id AS id, o.x AS x, o.y AS y, o.timestamp AS timestamp
ORDER BY CASE WHEN $newest_first THEN -o.timestamp ELSE o.timestamp END, o.id
LIMIT $limit
