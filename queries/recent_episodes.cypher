// Episodes newest first; with $name (lower case) only those whose name contains it,
// case-insensitively. $name may be NULL; $limit
MATCH (e:Episode)
WHERE lower(e.name) CONTAINS $name OR $name IS NULL
RETURN e
ORDER BY e.start_time DESC, e.id
LIMIT $limit
