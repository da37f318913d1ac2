// Insert a batch of observations of one episode with their BELONGS_TO edges in one pattern
// (the episode is bound once by primary key, so no per-row MATCH is planned).
// $episode_id: the episode; $rows: an Arrow table as in create_observations (LOAD FROM)
MATCH (e:Episode {id: $episode_id})
LOAD FROM $rows
CREATE (:Observation {id: id, text: text, x: x, y: y, z: z, timestamp: timestamp,
                      layer: layer, source_type: source_type, confidence: confidence,
                      tier: tier, episode_id: episode_id, metadata: metadata})-[:BELONGS_TO]->(e)
RETURN count(*) AS created
