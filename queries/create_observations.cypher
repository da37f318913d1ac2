// Insert a batch of observations that belong to no episode.
// $rows: the rows of an Arrow table with the columns of OBSERVATION_ARROW (id, text, x, y, z,
// timestamp, layer, source_type, confidence, tier, episode_id, metadata), given to the engine
// as a list (storage/graph.py: rows_as_list).
UNWIND $rows AS r
CREATE (:Observation {id: r.id, text: r.text, x: r.x, y: r.y, z: r.z, timestamp: r.timestamp,
                      layer: r.layer, source_type: r.source_type, confidence: r.confidence,
                      tier: r.tier, episode_id: r.episode_id, metadata: r.metadata})
