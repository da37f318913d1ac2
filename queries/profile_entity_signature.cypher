// How many entities there are and the latest sighting: when it changes, ungrounded profile
// objects are matched again.
MATCH (e:Entity)
RETURN count(e) AS n, max(e.last_seen) AS last_seen
