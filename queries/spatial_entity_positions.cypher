// Every entity's position and the place it is linked to (NULL when none), for linking.
MATCH (e:Entity)
OPTIONAL MATCH (e)-[:AT_PLACE]->(p:Place)
RETURN e.id AS id, e.x AS x, e.y AS y, p.id AS place_id
