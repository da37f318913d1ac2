// The robot's trajectory: every perception observation (not body state, not planner notes)
// with its position and time, oldest first (rebuild of the topological map).
MATCH (o:Observation)
WHERE o.source_type <> 'interoception' AND o.source_type <> 'agent_note'
RETURN o.id AS id, o.x AS x, o.y AS y, o.z AS z, o.timestamp AS timestamp
ORDER BY o.timestamp, o.id
