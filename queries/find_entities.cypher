// Entities by name substring (lower case, matched case-insensitively), type, place and time
// last seen; nearest first when the circle applies, otherwise most often seen first.
// $name $entity_type $last_seen_after may be NULL; $in_area: whether the circle ($x, $y, $radius) applies; $limit
MATCH (e:Entity)
WHERE (lower(e.name) CONTAINS $name OR $name IS NULL)
  AND (lower(e.entity_type) = $entity_type OR $entity_type IS NULL)
  AND (e.last_seen >= $last_seen_after OR $last_seen_after IS NULL)
  AND (NOT $in_area OR (e.x - $x) * (e.x - $x) + (e.y - $y) * (e.y - $y) <= $radius * $radius)
RETURN e
ORDER BY CASE WHEN NOT $in_area THEN 0.0
              ELSE (e.x - $x) * (e.x - $x) + (e.y - $y) * (e.y - $y) END,
         e.observation_count DESC, e.last_seen DESC, e.id
LIMIT $limit
