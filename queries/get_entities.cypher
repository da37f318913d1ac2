// Entities by primary key. $ids: list of ids
UNWIND $ids AS i
MATCH (n:Entity {id: i})
RETURN n
