// Observations within $radius (horizontal) of ($x, $y), nearest first, optionally of one layer
// and a time window; body state only with $include_body_state. Ids only, $limit of them: the
// ranking happens in the query, so a wide radius does not ship every row to Python.
// $x $y $radius $limit $include_body_state; $layer, $time_after, $time_before may be NULL
MATCH (o:Observation)
WHERE o.x >= $x - $radius AND o.x <= $x + $radius
  AND o.y >= $y - $radius AND o.y <= $y + $radius
  AND (o.x - $x) * (o.x - $x) + (o.y - $y) * (o.y - $y) <= $radius * $radius
  AND o.tier <> 'archived'
  AND (o.layer = $layer OR $layer IS NULL)
  AND (o.timestamp >= $time_after OR $time_after IS NULL)
  AND (o.timestamp <= $time_before OR $time_before IS NULL)
  AND ($include_body_state OR o.source_type <> 'interoception')
RETURN o.id AS id, (o.x - $x) * (o.x - $x) + (o.y - $y) * (o.y - $y) AS d2
ORDER BY d2, id
LIMIT $limit
