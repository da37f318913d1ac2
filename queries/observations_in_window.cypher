// Observations in a time window, optionally inside a circle and of one layer, newest or oldest
// first, rows of one time by id (temporal_query). Ids only: text is fetched by primary key for the final page.
// $time_after $time_before $layer may be NULL; $in_area: whether the circle ($x, $y, $radius) applies;
// $include_body_state; $newest_first; $limit
MATCH (o:Observation)
WHERE (o.timestamp >= $time_after OR $time_after IS NULL)
  AND (o.timestamp <= $time_before OR $time_before IS NULL)
  AND (NOT $in_area OR (o.x >= $x - $radius AND o.x <= $x + $radius
       AND o.y >= $y - $radius AND o.y <= $y + $radius
       AND (o.x - $x) * (o.x - $x) + (o.y - $y) * (o.y - $y) <= $radius * $radius))
  AND o.tier <> 'archived'
  AND (o.layer = $layer OR $layer IS NULL)
  AND ($include_body_state OR o.source_type <> 'interoception')
RETURN o.id AS id, o.timestamp AS timestamp
ORDER BY CASE WHEN $newest_first THEN -o.timestamp ELSE o.timestamp END, o.id
LIMIT $limit
