// merge_cooccurrence for a batch of pairs at once. $rows: rows (a, b, n, first_seen,
// last_seen), each unordered pair once (smaller id in a), counts aggregated per batch.
UNWIND $rows AS r
MATCH (x:Entity)
WHERE x.id = r.a
MATCH (y:Entity)
WHERE y.id = r.b
MERGE (x)-[c:COOCCURS_WITH]->(y)
ON CREATE SET c.count = r.n, c.first_seen = r.first_seen, c.last_seen = r.last_seen
ON MATCH SET c.count = c.count + r.n,
             c.first_seen = CASE WHEN r.first_seen < c.first_seen THEN r.first_seen ELSE c.first_seen END,
             c.last_seen = CASE WHEN r.last_seen > c.last_seen THEN r.last_seen ELSE c.last_seen END
