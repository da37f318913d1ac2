// The episodes around one episode: those before it along FOLLOWS (hops = how far back), the
// episodes it is nested in along SUBTASK_OF (hops = nesting depth) and its direct subtasks.
// Each episode has at most one FOLLOWS and one SUBTASK_OF edge, so the walks are paths.
// $id: the episode. Walks stop after 30 hops (the most Kuzu allows).
MATCH p = (e:Episode {id: $id})-[:FOLLOWS*1..30]->(x:Episode)
RETURN 'previous' AS relation, x.id AS id, length(p) AS hops
UNION ALL
MATCH p = (e:Episode {id: $id})-[:SUBTASK_OF*1..30]->(x:Episode)
RETURN 'parent' AS relation, x.id AS id, length(p) AS hops
UNION ALL
MATCH (x:Episode)-[:SUBTASK_OF]->(e:Episode {id: $id})
RETURN 'subtask' AS relation, x.id AS id, 1 AS hops
