// Export: every COOCCURS_WITH edge (Entity -> Entity, one per unordered pair) as from/to ids
// with its count and first/last time seen together. No parameters.
MATCH (a:Entity)-[r:COOCCURS_WITH]->(b:Entity)
RETURN a.id AS `from`, b.id AS `to`, r.count AS count, r.first_seen AS first_seen,
       r.last_seen AS last_seen
