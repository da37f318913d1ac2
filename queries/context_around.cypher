// What is placed around a point: gists whose centre and entities whose position lie within
// $radius of ($x, $y), with their squared distance. Numeric filters only; records are fetched
// by primary key afterwards. $x $y $radius
MATCH (g:Gist)
WHERE g.x >= $x - $radius AND g.x <= $x + $radius
  AND g.y >= $y - $radius AND g.y <= $y + $radius
  AND (g.x - $x) * (g.x - $x) + (g.y - $y) * (g.y - $y) <= $radius * $radius
  AND g.tier <> 'archived'
RETURN 'gist' AS kind, g.id AS id, (g.x - $x) * (g.x - $x) + (g.y - $y) * (g.y - $y) AS d2
UNION ALL
MATCH (e:Entity)
WHERE e.x >= $x - $radius AND e.x <= $x + $radius
  AND e.y >= $y - $radius AND e.y <= $y + $radius
  AND (e.x - $x) * (e.x - $x) + (e.y - $y) * (e.y - $y) <= $radius * $radius
RETURN 'entity' AS kind, e.id AS id, (e.x - $x) * (e.x - $x) + (e.y - $y) * (e.y - $y) AS d2
