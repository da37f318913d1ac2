// Gists whose time span overlaps a window, optionally of one layer (cross-layer gists always
// qualify) and centred inside a circle, newest or oldest first (temporal_query's fallback when
// the window's observations were consolidated).
// $time_after $time_before $layer may be NULL; $in_area: whether the circle ($x, $y, $radius) applies;
// $newest_first; $limit
MATCH (g:Gist)
WHERE (g.time_end >= $time_after OR $time_after IS NULL)
  AND (g.time_start <= $time_before OR $time_before IS NULL)
  AND (NOT $in_area OR (g.x - $x) * (g.x - $x) + (g.y - $y) * (g.y - $y) <= $radius * $radius)
  AND g.tier <> 'archived'
  AND (g.layer = $layer OR g.layer IS NULL OR $layer IS NULL)
RETURN g.id AS id
ORDER BY CASE WHEN $newest_first THEN -g.time_end ELSE g.time_start END, g.id
LIMIT $limit
