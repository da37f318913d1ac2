// Areas: delete every area gist (level >= 1) with its SUMMARIZES edges (a full rebuild).
// No parameters.
MATCH (g:Gist)
WHERE g.level >= 1
DETACH DELETE g
