// A step's object argument at argument position $position. $pattern $node $position
MATCH (p:Pattern {id: $pattern}), (o:ProfileObject {id: $node})
CREATE (p)-[:TARGET {position: $position}]->(o)
