// A new episode. $id, $name, $start_time, $status, $parent_episode_id, $metadata
CREATE (:Episode {id: $id, name: $name, start_time: $start_time, end_time: NULL,
                  status: $status, gist: NULL, parent_episode_id: $parent_episode_id,
                  metadata: $metadata})
