// merge_cooccurrence for a batch of pairs at once. $rows: an Arrow table (a, b, n, first_seen,
// last_seen), each unordered pair once (smaller id in a), counts aggregated per batch.
LOAD FROM $rows
MATCH (x:Entity)
WHERE x.id = a
MATCH (y:Entity)
WHERE y.id = b
MERGE (x)-[c:COOCCURS_WITH]->(y)
ON CREATE SET c.count = n, c.first_seen = first_seen, c.last_seen = last_seen
ON MATCH SET c.count = c.count + n,
             c.first_seen = CASE WHEN first_seen < c.first_seen THEN first_seen ELSE c.first_seen END,
             c.last_seen = CASE WHEN last_seen > c.last_seen THEN last_seen ELSE c.last_seen END
