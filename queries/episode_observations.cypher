// Observations of one episode in time order. $episode_id
MATCH (o:Observation)-[:BELONGS_TO]->(e:Episode {id: $episode_id})
RETURN o
ORDER BY o.timestamp
