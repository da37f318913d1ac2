// The gists (not archived) that SUMMARIZE the observations inside a circle, most linked first,
// with the number of those observations each summarizes (recall's gist half; archived
// observations count: their gist is how consolidated experience is recalled).
// $x $y $radius: a circle (the box lets the scan skip most rows, the circle is exact); $limit
MATCH (g:Gist)-[:SUMMARIZES]->(o:Observation)
WHERE o.x >= $x - $radius AND o.x <= $x + $radius
  AND o.y >= $y - $radius AND o.y <= $y + $radius
  AND (o.x - $x) * (o.x - $x) + (o.y - $y) * (o.y - $y) <= $radius * $radius
  AND g.tier <> 'archived'
WITH g.id AS id, count(*) AS links
RETURN id, links
ORDER BY links DESC, id
LIMIT $limit
