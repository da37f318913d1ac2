// $id is a SUBTASK_OF $parent_id.
MATCH (e:Episode {id: $id}), (p:Episode {id: $parent_id})
CREATE (e)-[:SUBTASK_OF]->(p)
