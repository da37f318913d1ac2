// Stats: the number of nodes or edges of each capability table (topological map, user profile),
// one row per table (kind 'node' or 'edge'); OPTIONAL MATCH keeps the row of an empty table.
// No parameters.
OPTIONAL MATCH (n:Position) RETURN 'node' AS kind, 'Position' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH (n:Place) RETURN 'node' AS kind, 'Place' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH (n:User) RETURN 'node' AS kind, 'User' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH (n:Knowledge) RETURN 'node' AS kind, 'Knowledge' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH (n:Pattern) RETURN 'node' AS kind, 'Pattern' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH (n:ProfileObject) RETURN 'node' AS kind, 'ProfileObject' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH (n:ProfileLocation) RETURN 'node' AS kind, 'ProfileLocation' AS name, count(n) AS n
UNION ALL OPTIONAL MATCH ()-[r:WAS_AT]->() RETURN 'edge' AS kind, 'WAS_AT' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:CONNECTS]->() RETURN 'edge' AS kind, 'CONNECTS' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:AT_PLACE]->() RETURN 'edge' AS kind, 'AT_PLACE' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:REFERS_TO]->() RETURN 'edge' AS kind, 'REFERS_TO' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:ENTAILS]->() RETURN 'edge' AS kind, 'ENTAILS' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:TARGET]->() RETURN 'edge' AS kind, 'TARGET' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:COMPOSED_OF]->() RETURN 'edge' AS kind, 'COMPOSED_OF' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:BEFORE]->() RETURN 'edge' AS kind, 'BEFORE' AS name, count(r) AS n
UNION ALL OPTIONAL MATCH ()-[r:GROUNDED_AS]->() RETURN 'edge' AS kind, 'GROUNDED_AS' AS name, count(r) AS n
