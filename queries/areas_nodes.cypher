// Areas: every area gist (a Gist of level >= 1: a node of the area forest). No parameters.
MATCH (g:Gist)
WHERE g.level >= 1
RETURN g
