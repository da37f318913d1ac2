// Export: the Position nodes (all properties) of the given entities. $ids: entity ids
MATCH (n:Position)
WHERE n.entity_id IN $ids
RETURN n.*
ORDER BY n.entity_id, n.first_seen, n.id
