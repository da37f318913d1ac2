// Every entity (loaded into the store's in-process entity index on open). No parameters.
MATCH (e:Entity)
RETURN e
