// Gists (not archived) whose centre lies within $radius of ($x, $y), nearest first (ties by
// id). Numeric filters only; records are fetched by primary key afterwards. $x $y $radius $limit
MATCH (g:Gist)
WHERE g.x >= $x - $radius AND g.x <= $x + $radius
  AND g.y >= $y - $radius AND g.y <= $y + $radius
  AND (g.x - $x) * (g.x - $x) + (g.y - $y) * (g.y - $y) <= $radius * $radius
  AND g.tier <> 'archived'
WITH g.id AS id, (g.x - $x) * (g.x - $x) + (g.y - $y) * (g.y - $y) AS d2
RETURN id, d2
ORDER BY d2, id
LIMIT $limit
