// Areas: the leaves the area forest clusters — perception observations (body state and archived
// ones left out) with their position and time. No parameters.
MATCH (o:Observation)
WHERE o.source_type <> 'interoception' AND o.tier <> 'archived'
RETURN o.id AS id, o.x AS x, o.y AS y, o.z AS z, o.timestamp AS t_start, o.timestamp AS t_end,
       o.layer AS layer
