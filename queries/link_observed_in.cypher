// One OBSERVED_IN edge, both ends bound by primary key (run once per row).
// $entity_id $observation_id $confidence
MATCH (e:Entity {id: $entity_id}), (o:Observation {id: $observation_id})
CREATE (e)-[:OBSERVED_IN {confidence: $confidence}]->(o)
