// Add CONNECTS edges between places (one per unordered pair, older place to newer).
// $rows: list of {a, b, distance, kind ('walk' or 'closure')}
UNWIND $rows AS r
MATCH (a:Place), (b:Place)
WHERE a.id = r.a AND b.id = r.b
CREATE (a)-[:CONNECTS {distance: r.distance, kind: r.kind}]->(b)
