// Areas: one SUMMARIZES edge from an area gist to a gist (a child area or a level-0 gist), both
// bound by primary key (run once per row). $gist_id $child_id
MATCH (g:Gist {id: $gist_id}), (c:Gist {id: $child_id})
CREATE (g)-[:SUMMARIZES]->(c)
