// Sizes of the topological map: places, CONNECTS edges, observations linked to a place, and
// perception observations (which should all be linked).
MATCH (p:Place) WITH count(p) AS places
OPTIONAL MATCH (:Place)-[c:CONNECTS]->(:Place) WITH places, count(c) AS connections
OPTIONAL MATCH (:Observation)-[l:AT_PLACE]->(:Place) WITH places, connections, count(l) AS linked
MATCH (o:Observation)
WHERE o.source_type <> 'interoception' AND o.source_type <> 'agent_note'
RETURN places, connections, linked, count(o) AS trajectory
