// One SUMMARIZES edge, both ends bound by primary key (run once per row). $gist_id $observation_id
MATCH (g:Gist {id: $gist_id}), (o:Observation {id: $observation_id})
CREATE (g)-[:SUMMARIZES]->(o)
