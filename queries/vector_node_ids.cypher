// The id and kind of every node that should have a row in the vector table (observations not
// archived, gists, entities), for the repair of a vector table that lost rows
// (storage/store.py MemoryStore._restore_vectors). No parameters.
MATCH (o:Observation)
WHERE o.tier <> 'archived'
RETURN o.id AS id, 'observation' AS kind
UNION ALL
MATCH (g:Gist)
RETURN g.id AS id, 'gist' AS kind
UNION ALL
MATCH (n:Entity)
RETURN n.id AS id, 'entity' AS kind
