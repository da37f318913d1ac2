// A step's location argument at argument position $position. $pattern $node $position
MATCH (p:Pattern {id: $pattern}), (l:ProfileLocation {id: $node})
CREATE (p)-[:TARGET {position: $position}]->(l)
