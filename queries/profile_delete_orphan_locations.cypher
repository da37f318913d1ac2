// Delete a user's profile locations that no step refers to any more. $user_id
MATCH (l:ProfileLocation)
WHERE l.user_id = $user_id AND NOT EXISTS { MATCH (l)<-[:TARGET]-(:Pattern) }
DETACH DELETE l
