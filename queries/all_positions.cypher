// Every entity's stays, oldest first (the entity resolver's table).
MATCH (p:Position)
RETURN p
ORDER BY p.entity_id, p.first_seen, p.id
