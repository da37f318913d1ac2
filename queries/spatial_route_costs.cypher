// Route lengths over CONNECTS (weighted shortest paths, undirected) from one place to several.
// Up to 100,000 hops (run spatial_path_depth first). Unreachable places have no row.
// $start: place id; $ids: list of place ids
MATCH p = (a:Place {id: $start})-[e:CONNECTS* WSHORTEST(distance) 1..100000]-(b:Place)
WHERE b.id IN $ids
RETURN b.id AS id, cost(e) AS length
