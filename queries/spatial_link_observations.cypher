// Link a batch of observations to their nearest place (large batches: one scan and a join).
// $rows: list of {observation_id, place_id, distance}
UNWIND $rows AS r
MATCH (o:Observation), (p:Place)
WHERE o.id = r.observation_id AND p.id = r.place_id
CREATE (o)-[:AT_PLACE {distance: r.distance}]->(p)
