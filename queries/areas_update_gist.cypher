// Areas: rewrite an area gist in place after its branch changed (text, shape, time span,
// count, layer). $id $text $x $y $z $radius $extent_wkt $time_start $time_end
// $source_observation_count $layer
MATCH (g:Gist {id: $id})
SET g.text = $text, g.x = $x, g.y = $y, g.z = $z, g.radius = $radius,
    g.extent_wkt = $extent_wkt, g.time_start = $time_start, g.time_end = $time_end,
    g.source_observation_count = $source_observation_count, g.layer = $layer
RETURN g.id AS id
