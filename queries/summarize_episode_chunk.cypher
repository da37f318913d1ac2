// Link a gist to the perception observations of one time chunk of an episode and promote them
// to long_term, walking the episode's BELONGS_TO edges (both nodes bound by primary key: no
// list of ids, no table scan). $gist_id $episode_id $time_start $time_end
MATCH (g:Gist {id: $gist_id}), (e:Episode {id: $episode_id})
MATCH (o:Observation)-[:BELONGS_TO]->(e)
WHERE o.timestamp >= $time_start AND o.timestamp <= $time_end
  AND o.tier = 'short_term' AND o.source_type <> 'interoception'
CREATE (g)-[:SUMMARIZES]->(o)
SET o.tier = 'long_term'
RETURN count(o) AS n
