// Every co-occurrence edge with its count: for evaluating entity resolution.
MATCH (a:Entity)-[c:COOCCURS_WITH]->(b:Entity)
RETURN a.id AS a, b.id AS b, c.count AS count, c.first_seen AS first_seen, c.last_seen AS last_seen
