// The most recent perception observation (not interoception, not a planner's note): the robot's
// last known position.
MATCH (o:Observation)
WHERE o.source_type <> 'interoception' AND o.source_type <> 'agent_note'
RETURN o.x AS x, o.y AS y, o.z AS z, o.timestamp AS t
ORDER BY o.timestamp DESC
LIMIT 1
