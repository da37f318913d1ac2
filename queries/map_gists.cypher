// Gists for the map: those whose time span overlaps the window, whose circle (centre, radius)
// reaches into the box / circle, and whose layer is asked for (cross-layer gists, layer NULL,
// always qualify). Archived gists included: the map shows everything the memory holds.
// $time_after $time_before may be NULL; $layers: list of layer names, empty for every layer;
// $in_box with $xmin $xmax $ymin $ymax; $in_circle with $cx $cy $radius.
MATCH (g:Gist)
WHERE (g.time_end >= $time_after OR $time_after IS NULL)
  AND (g.time_start <= $time_before OR $time_before IS NULL)
  AND (NOT $in_box OR (g.x + g.radius >= $xmin AND g.x - g.radius <= $xmax
       AND g.y + g.radius >= $ymin AND g.y - g.radius <= $ymax))
  AND (NOT $in_circle OR (g.x - $cx) * (g.x - $cx) + (g.y - $cy) * (g.y - $cy)
       <= ($radius + g.radius) * ($radius + g.radius))
  AND (g.layer IS NULL OR size(CAST($layers AS STRING[])) = 0
       OR list_contains(CAST($layers AS STRING[]), g.layer))
RETURN g.x AS x, g.y AS y, g.radius AS radius, g.extent_wkt AS extent_wkt, g.layer AS layer,
       g.level AS level, g.time_start AS time_start, g.time_end AS time_end
ORDER BY g.level DESC, g.time_start
