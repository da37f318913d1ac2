// Replace a knowledge node's text and vectors in place (an update keeps its id). $id $alias
// $description $content $updated_at $alias_vector $content_vector
MATCH (k:Knowledge {id: $id})
SET k.alias = $alias, k.description = $description, k.content = $content,
    k.updated_at = $updated_at, k.alias_vector = $alias_vector, k.content_vector = $content_vector
