// Forget journal entries whose change LanceDB now holds. The journal is small (only pending work).
// $ids: list of node ids
MATCH (s:VectorSync)
WHERE list_contains($ids, s.id)
DELETE s
