// Every place of the topological map.
MATCH (p:Place)
RETURN p.id AS id, p.x AS x, p.y AS y, p.z AS z, p.visits AS visits,
       p.first_seen AS first_seen, p.last_seen AS last_seen
