// A cheap fingerprint of the Entity table's positions (numeric columns only): when it changes,
// entities were added or moved and are linked to their places again.
MATCH (e:Entity)
RETURN count(e) AS n, sum(e.x) AS sx, sum(e.y) AS sy, max(e.last_seen) AS last
