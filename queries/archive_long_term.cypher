// Archive up to $limit long-term observations perceived before $cutoff, oldest first: the raw
// text is dropped (their gists keep the content searchable); returns the ids, whose vectors go.
// Body state is never long_term (it is not summarized), so it is never archived here.
MATCH (o:Observation)
WHERE o.tier = 'long_term' AND o.timestamp < $cutoff
WITH o
ORDER BY o.timestamp, o.id
LIMIT $limit
SET o.tier = 'archived', o.text = NULL
RETURN o.id AS id
