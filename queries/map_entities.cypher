// Entities for the map: those seen during the window (first_seen..last_seen overlaps it) and
// inside the box / circle. Every layer: entities are persistent things, not a layer's readings.
// $time_after $time_before may be NULL; $in_box with $xmin $xmax $ymin $ymax; $in_circle with
// $cx $cy $radius.
MATCH (e:Entity)
WHERE (e.last_seen >= $time_after OR $time_after IS NULL)
  AND (e.first_seen <= $time_before OR $time_before IS NULL)
  AND (NOT $in_box OR (e.x >= $xmin AND e.x <= $xmax AND e.y >= $ymin AND e.y <= $ymax))
  AND (NOT $in_circle OR (e.x - $cx) * (e.x - $cx) + (e.y - $cy) * (e.y - $cy) <= $radius * $radius)
RETURN e.name AS name, e.entity_type AS entity_type, e.x AS x, e.y AS y,
       e.observation_count AS observation_count
ORDER BY e.observation_count DESC, e.name
