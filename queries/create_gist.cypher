// A new gist. $id $text $x $y $z $radius $extent_wkt $time_start $time_end
// $source_observation_count $layer $episode_id $level $tier $created_at
CREATE (:Gist {id: $id, text: $text, x: $x, y: $y, z: $z, radius: $radius,
               extent_wkt: $extent_wkt, time_start: $time_start, time_end: $time_end,
               source_observation_count: $source_observation_count, layer: $layer,
               episode_id: $episode_id, level: $level, tier: $tier, created_at: $created_at})
