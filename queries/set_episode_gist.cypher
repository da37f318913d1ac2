// The summary of a consolidated episode ($gist NULL: nothing to summarize). $id, $gist
MATCH (e:Episode {id: $id})
SET e.gist = $gist
RETURN e.id AS id
