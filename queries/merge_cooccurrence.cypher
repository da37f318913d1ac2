// Add $n shared observations to the co-occurrence of two entities: one edge per unordered pair,
// stored from the smaller id ($a) to the larger ($b). Run once per pair with counts aggregated
// per batch (MERGE loses increments when one batch repeats a key). $a $b $n $first_seen $last_seen
MATCH (a:Entity {id: $a}), (b:Entity {id: $b})
MERGE (a)-[c:COOCCURS_WITH]->(b)
ON CREATE SET c.count = $n, c.first_seen = $first_seen, c.last_seen = $last_seen
ON MATCH SET c.count = c.count + $n,
             c.first_seen = CASE WHEN $first_seen < c.first_seen THEN $first_seen ELSE c.first_seen END,
             c.last_seen = CASE WHEN $last_seen > c.last_seen THEN $last_seen ELSE c.last_seen END
