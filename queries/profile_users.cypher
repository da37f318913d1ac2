// Every user of the profile.
MATCH (u:User)
RETURN u.id AS id, u.name AS name
ORDER BY u.id
