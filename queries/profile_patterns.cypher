// Every routine step with its knowledge node, and the step it comes BEFORE (NULL: last).
MATCH (k:Knowledge)-[:ENTAILS]->(p:Pattern)
OPTIONAL MATCH (p)-[:BEFORE]->(n:Pattern)
RETURN k.id AS knowledge_id, p.id AS id, p.step AS step, p.action AS action,
       p.arguments AS arguments, p.text AS text, n.id AS next_id
