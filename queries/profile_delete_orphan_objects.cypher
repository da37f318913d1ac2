// Delete a user's profile objects that no knowledge or step refers to any more. $user_id
MATCH (o:ProfileObject)
WHERE o.user_id = $user_id
  AND NOT EXISTS { MATCH (o)<-[:COMPOSED_OF]-(:Knowledge) }
  AND NOT EXISTS { MATCH (o)<-[:TARGET]-(:Pattern) }
DETACH DELETE o
