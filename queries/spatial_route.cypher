// The shortest route between two places over CONNECTS (weighted by distance, read undirected),
// as its length and waypoint list. Up to 100,000 hops (run spatial_path_depth first on the
// connection). No row when the places are not connected or are the same place.
// $start $goal: place ids
MATCH p = (a:Place {id: $start})-[e:CONNECTS* WSHORTEST(distance) 1..100000]-(b:Place {id: $goal})
RETURN cost(e) AS length, properties(nodes(p), 'id') AS ids,
       properties(nodes(p), 'x') AS xs, properties(nodes(p), 'y') AS ys
