// Set the visit count and first/last time of places visited again (the Place table is small:
// the join over it is cheap). $rows: list of {id, visits, first_seen, last_seen}
UNWIND $rows AS r
MATCH (p:Place)
WHERE p.id = r.id
SET p.visits = r.visits, p.first_seen = r.first_seen, p.last_seen = r.last_seen
