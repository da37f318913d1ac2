// Every CONNECTS edge of the topological map: its places, distance and kind.
MATCH (a:Place)-[c:CONNECTS]->(b:Place)
RETURN a.id AS a, b.id AS b, c.distance AS distance, c.kind AS kind
