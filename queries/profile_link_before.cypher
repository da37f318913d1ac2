// Step order: pattern $a comes BEFORE pattern $b. $a $b
MATCH (a:Pattern {id: $a}), (b:Pattern {id: $b})
CREATE (a)-[:BEFORE]->(b)
