// Delete a knowledge node and its patterns. $id
MATCH (k:Knowledge {id: $id})
OPTIONAL MATCH (k)-[:ENTAILS]->(p:Pattern)
DETACH DELETE p, k
