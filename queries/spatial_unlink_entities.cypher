// Remove the AT_PLACE links of these entities (before linking them again).
// $ids: list of entity ids
MATCH (e:Entity)-[l:AT_PLACE]->(:Place)
WHERE e.id IN $ids
DELETE l
