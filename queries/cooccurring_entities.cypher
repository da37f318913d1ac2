// The entities most often seen together with one entity, read from the stored COOCCURS_WITH
// counts (one edge per unordered pair, so the pattern is undirected). Computing the same over
// OBSERVED_IN (entity -> observation <- entity) took 18-200 ms at 1M observations; the stored
// edge 1.3-2.3 ms. $id: the entity; $limit
MATCH (e:Entity {id: $id})-[c:COOCCURS_WITH]-(f:Entity)
RETURN f.id AS id, f.name AS name, c.count AS count,
       c.first_seen AS first_seen, c.last_seen AS last_seen
ORDER BY count DESC, last_seen DESC, id
LIMIT $limit
