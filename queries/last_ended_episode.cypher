// The episode that ended most recently: the one a new episode FOLLOWS.
MATCH (e:Episode)
WHERE e.status <> 'active'
RETURN e.id AS id
ORDER BY e.end_time DESC
LIMIT 1
