// Time of the latest observation of an episode. $id
MATCH (o:Observation)-[:BELONGS_TO]->(e:Episode {id: $id})
RETURN max(o.timestamp) AS t
