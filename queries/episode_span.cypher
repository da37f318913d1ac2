// How many observations BELONG_TO an episode and the times of its first and last one. $id
MATCH (o:Observation)-[:BELONGS_TO]->(e:Episode {id: $id})
RETURN count(o) AS n, min(o.timestamp) AS t_first, max(o.timestamp) AS t_last
