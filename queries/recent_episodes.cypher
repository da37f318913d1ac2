// Episodes newest first; with $name (lower case) only those whose name contains it,
// case-insensitively. $name may be NULL; $limit
MATCH (e:Episode)
WHERE $name IS NULL OR lower(e.name) CONTAINS $name
RETURN e
ORDER BY e.start_time DESC
LIMIT $limit
