// Insert a batch of observations of one episode with their BELONGS_TO edges in one pattern
// (the episode is bound once by primary key, so no per-row MATCH is planned).
// $episode_id: the episode; $rows: the rows as in create_observations.
MATCH (e:Episode {id: $episode_id})
UNWIND $rows AS r
CREATE (:Observation {id: r.id, text: r.text, x: r.x, y: r.y, z: r.z, timestamp: r.timestamp,
                      layer: r.layer, source_type: r.source_type, confidence: r.confidence,
                      tier: r.tier, episode_id: r.episode_id, metadata: r.metadata})-[:BELONGS_TO]->(e)
RETURN count(*) AS created
