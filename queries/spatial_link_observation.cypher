// Link one observation to its nearest place, both ends bound by primary key (run once per row:
// small batches). $observation_id $place_id $distance
MATCH (o:Observation {id: $observation_id}), (p:Place {id: $place_id})
CREATE (o)-[:AT_PLACE {distance: $distance}]->(p)
