// Stats: observation counts per (tier, layer, source_type) group: one scan of the table,
// summed per tier, per layer and per source (body state / perception) in Python.
// No parameters.
MATCH (o:Observation)
RETURN o.tier AS tier, o.layer AS layer, o.source_type AS source_type, count(*) AS n
