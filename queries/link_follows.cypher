// $id FOLLOWS $previous_id (temporal sequence of episodes).
MATCH (e:Episode {id: $id}), (p:Episode {id: $previous_id})
CREATE (e)-[:FOLLOWS]->(p)
