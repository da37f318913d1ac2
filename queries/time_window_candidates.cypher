// Short-term perception observations of no episode, older than $cutoff: what time-window
// consolidation clusters. Oldest first, at most $limit. $cutoff $limit
MATCH (o:Observation)
WHERE o.tier = 'short_term' AND o.episode_id IS NULL AND o.timestamp < $cutoff
  AND o.source_type <> 'interoception'
RETURN o
ORDER BY o.timestamp, o.id
LIMIT $limit
