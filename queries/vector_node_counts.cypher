// How many nodes should have a row in the vector table (one row): observations not archived
// (archival drops their vector), every gist, every entity. Compared at open with the table's
// row count (storage/store.py MemoryStore._restore_vectors). No parameters.
OPTIONAL MATCH (o:Observation) WHERE o.tier <> 'archived' WITH count(o) AS observations
OPTIONAL MATCH (g:Gist) WITH observations, count(g) AS gists
OPTIONAL MATCH (n:Entity)
RETURN observations, gists, count(n) AS entities
