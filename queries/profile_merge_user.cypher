// A user of the profile, created once. $id (normalised name) $name $created_at
MERGE (u:User {id: $id})
ON CREATE SET u.name = $name, u.created_at = $created_at
