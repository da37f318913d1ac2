// Entities inside an axis-aligned box (merge candidates for a batch of sightings).
// $xmin $xmax $ymin $ymax
MATCH (e:Entity)
WHERE e.x >= $xmin AND e.x <= $xmax AND e.y >= $ymin AND e.y <= $ymax
RETURN e
