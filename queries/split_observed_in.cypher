// A split: the sightings of entity $old in observations from $since to $until (a stay found to
// be another object's) move to entity $new. $old $new $since $until
MATCH (o:Entity {id: $old})-[r:OBSERVED_IN]->(obs:Observation), (n:Entity {id: $new})
WHERE obs.timestamp >= $since AND obs.timestamp <= $until
CREATE (n)-[:OBSERVED_IN {confidence: r.confidence}]->(obs)
DELETE r
