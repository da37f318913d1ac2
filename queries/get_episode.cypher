// One episode by primary key. $id
MATCH (e:Episode {id: $id})
RETURN e
