// Node counts per type (one row). OPTIONAL MATCH keeps the row when a table is empty.
OPTIONAL MATCH (o:Observation) WITH count(o) AS observations
OPTIONAL MATCH (e:Episode) WITH observations, count(e) AS episodes
OPTIONAL MATCH (g:Gist) WITH observations, episodes, count(g) AS gists
OPTIONAL MATCH (n:Entity)
RETURN observations, episodes, gists, count(n) AS entities
