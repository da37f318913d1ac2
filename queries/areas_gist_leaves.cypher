// Areas: the level-0 gists (not archived) the area forest clusters next to the observations,
// with their text. No parameters.
MATCH (g:Gist)
WHERE g.level = 0 AND g.tier <> 'archived'
RETURN g.id AS id, g.x AS x, g.y AS y, g.z AS z, g.time_start AS t_start, g.time_end AS t_end,
       g.layer AS layer, g.text AS text
