// Delete a knowledge node's patterns (with their ENTAILS, BEFORE and TARGET edges). $id
MATCH (k:Knowledge {id: $id})-[:ENTAILS]->(p:Pattern)
DETACH DELETE p
