// Positions of observations for the map, oldest first: every tier (archived observations keep
// their position), body state and notes included (source_type tells the map which to leave out
// of the trajectory). Numeric columns only, so 100k rows come back in well under a second.
// $time_after $time_before may be NULL; $layers: list of layer names, empty for every layer;
// $in_box: whether the box ($xmin $xmax $ymin $ymax) applies; $in_circle: whether the circle
// ($cx $cy $radius) applies as well.
MATCH (o:Observation)
WHERE (o.timestamp >= $time_after OR $time_after IS NULL)
  AND (o.timestamp <= $time_before OR $time_before IS NULL)
  AND (NOT $in_box OR (o.x >= $xmin AND o.x <= $xmax AND o.y >= $ymin AND o.y <= $ymax))
  AND (NOT $in_circle OR (o.x - $cx) * (o.x - $cx) + (o.y - $cy) * (o.y - $cy) <= $radius * $radius)
  AND (size(CAST($layers AS STRING[])) = 0 OR list_contains(CAST($layers AS STRING[]), o.layer))
RETURN o.x AS x, o.y AS y, o.timestamp AS timestamp, o.layer AS layer,
       o.source_type AS source_type
ORDER BY o.timestamp
