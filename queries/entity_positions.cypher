// The stays of the given entities, oldest first. $ids
MATCH (p:Position)
WHERE p.entity_id IN $ids
RETURN p
ORDER BY p.entity_id, p.first_seen, p.id
