// The time span of the memory (first and last observation) and its node counts, one row:
// the map's "now" for relative times and its test for an empty memory.
OPTIONAL MATCH (o:Observation)
WITH min(o.timestamp) AS first, max(o.timestamp) AS last, count(o) AS observations
OPTIONAL MATCH (e:Entity)
WITH first, last, observations, max(e.last_seen) AS entity_last, count(e) AS entities
OPTIONAL MATCH (g:Gist)
RETURN first, last, observations, entity_last, entities, count(g) AS gists
