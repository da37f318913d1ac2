// Ids and positions of observations inside an axis-aligned box, optionally filtered by layer,
// time and body state; numeric columns only (text is fetched later, for the final top-k).
// $xmin $xmax $ymin $ymax; $layer, $time_after, $time_before may be NULL; $include_body_state
MATCH (o:Observation)
WHERE o.x >= $xmin AND o.x <= $xmax AND o.y >= $ymin AND o.y <= $ymax
  AND o.tier <> 'archived'
  AND (o.layer = $layer OR $layer IS NULL)
  AND (o.timestamp >= $time_after OR $time_after IS NULL)
  AND (o.timestamp <= $time_before OR $time_before IS NULL)
  AND ($include_body_state OR o.source_type <> 'interoception')
RETURN o.id AS id, o.x AS x, o.y AS y, o.timestamp AS timestamp
