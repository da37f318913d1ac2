// A new knowledge node of a user, with its REFERS_TO edge. $user_id $id $subtype $alias
// $description $content $created_at $updated_at $alias_vector $content_vector
MATCH (u:User {id: $user_id})
CREATE (u)-[:REFERS_TO]->(:Knowledge {id: $id, user_id: $user_id, subtype: $subtype,
        alias: $alias, description: $description, content: $content, created_at: $created_at,
        updated_at: $updated_at, alias_vector: $alias_vector, content_vector: $content_vector})
