// Export: the Observation nodes (all properties) matching a filter; each condition is skipped
// when its parameter is NULL (or its flag false), so an empty filter selects every observation.
// $time_after, $time_before: timestamp range, inclusive (NULL: open)
// $in_circle; $cx, $cy, $radius: a circle (the box test lets the scan skip most rows, the
//   circle is exact); numbers even when $in_circle is false (a NULL in arithmetic fails to bind)
// $in_box; $xmin, $ymin, $xmax, $ymax: an axis-aligned box, inclusive; numbers as above
// $layer: layer name (NULL: any); $episode_id: the episode they belong to (NULL: any)
MATCH (n:Observation)
WHERE (n.timestamp >= $time_after OR $time_after IS NULL)
  AND (n.timestamp <= $time_before OR $time_before IS NULL)
  AND (NOT $in_circle OR (
        n.x >= $cx - $radius AND n.x <= $cx + $radius
        AND n.y >= $cy - $radius AND n.y <= $cy + $radius
        AND (n.x - $cx) * (n.x - $cx) + (n.y - $cy) * (n.y - $cy) <= $radius * $radius))
  AND (NOT $in_box OR (n.x >= $xmin AND n.x <= $xmax AND n.y >= $ymin AND n.y <= $ymax))
  AND (n.layer = $layer OR $layer IS NULL)
  AND (n.episode_id = $episode_id OR $episode_id IS NULL)
RETURN n.*
ORDER BY n.timestamp, n.id
